#!/usr/bin/env node
// launch.js starts dynalite for herdlock's tests, benchmarks and demo.
//
// It does what `dynalite --host 127.0.0.1 --port <p> --createTableMs 0
// --deleteTableMs 0 --updateTableMs 0` does, with two differences that make
// it safe to start from Go: it listens on port 0 (the kernel picks a free
// loopback port, so there is no race between choosing a port and binding it)
// and prints the port it got as one line of JSON on stdout; and it exits when
// its standard input closes, so a parent that dies cannot leave it running.
'use strict'

const dynalite = require('dynalite')

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  process.stdout.write(JSON.stringify({ host: '127.0.0.1', port }) + '\n')
})
server.on('error', (err) => {
  process.stderr.write('dynalite: ' + err.stack + '\n')
  process.exit(1)
})

process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0))
