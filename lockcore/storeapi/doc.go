// Package storeapi is the interface between lockcore's lock and the store
// that keeps its items, for those who implement a store, as
// database/sql/driver is for database/sql. A user of the lock does not
// import it: lockcore.NewDynamoStore and lockcore.NewMemoryStore return
// stores, and lockcore.New takes any [Store].
//
// An implementation provides [Store] (and, to serve a herd's throttled
// waiters, [Announcer]), keeps [Item]s under the conditions the methods
// document, returns a *[ConditionError] when a condition fails and errors
// matching [ErrItemTooLarge] and [ErrAnswerTooLarge] for writes DynamoDB
// would refuse. The package lockcore/storetest checks an implementation
// against these rules, against DynamoDB's own behaviour. The Attr*
// constants are the attribute names of a lock item in the DynamoDB table,
// for tools that read the table directly.
//
// storeapi does not import lockcore.
package storeapi
