// Package replays runs checker replays for the services at scale: in
// batches on one node, and spread over every node that shares a store
// through its durable job queue (store.Queue): Submit queues a batch, each
// node's Worker claims and runs jobs under a lease, Wait collects the
// results, each recorded once. A node that dies holding jobs leaves them
// to be claimed again when the lease runs out.
//
// On one node, Service replays a batch (one checker, many artifacts: POST
// /replays) on a checkers.Runner's pool, and MemoStore keeps the runners'
// memoised outcomes on the store (key prefix memo/), so that they survive
// a restart and every node on one store shares them.
package replays
