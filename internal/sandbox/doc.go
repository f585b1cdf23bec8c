// Package sandbox runs Lambda functions locally on real pieces, for
// herdlock's end-to-end tests and its demo: the Lambda Runtime Interface
// Emulator (one aws-lambda-rie process is one sandbox, so N processes model
// N concurrent invocations), a rate-limited counting HTTP upstream, and a
// request-counting proxy in front of a DynamoDB-API server.
//
// The emulator binary is found through the HERDLOCK_RIE environment
// variable, which the Makefile sets after building it (`make deps`).
package sandbox
