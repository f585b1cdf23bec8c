#!/usr/bin/env node
// launch.js starts s3rver for the s3answers module's tests.
//
// Usage: node launch.js DIRECTORY BUCKET...
//
// It does what `s3rver --address 127.0.0.1 --port <p> --directory DIRECTORY
// --configure-bucket BUCKET` does, with two differences that make it safe to
// start from Go: it listens on port 0 (the kernel picks a free loopback
// port, so there is no race between choosing a port and binding it) and
// prints the port it got as one line of JSON on stdout; and it exits when
// its standard input closes, so a parent that dies cannot leave it running.
'use strict'

const S3rver = require('s3rver')

const [directory, ...buckets] = process.argv.slice(2)
if (!directory) {
  process.stderr.write('usage: node launch.js DIRECTORY BUCKET...\n')
  process.exit(2)
}

const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  configureBuckets: buckets.map((name) => ({ name })),
})
server.run().then(({ port }) => {
  process.stdout.write(JSON.stringify({ host: '127.0.0.1', port }) + '\n')
}, (err) => {
  process.stderr.write('s3rver: ' + err.stack + '\n')
  process.exit(1)
})

process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0))
