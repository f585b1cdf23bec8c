// Package minidyntest runs lockcore's store tests against minidyn, an
// in-process DynamoDB-API server (github.com/truora/minidyn), the third
// server beside Dynoxide and dynalite. It is a module of its own so that
// minidyn and what it requires stay out of the library's module graph;
// the package has no code of its own, only tests.
//
// minidyn returns the old item on a failed condition (ALL_OLD), sends no
// x-amz-crc32 header and reports an empty TableStatus. Its known gaps are
// modelled, not skipped: it ignores a REMOVE next to a SET in one update
// (storetest.GapIgnoresRemove, storetest.MinidynModel) and has no item size
// limit (storetest.MinidynGaps).
package minidyntest
