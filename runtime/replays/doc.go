// Package replays runs checker replays for the services at scale: in
// batches on one node, and spread over every node that shares a store
// through its durable job queue (store.Queue): Submit queues a batch, each
// node's Worker claims and runs jobs under a lease, Wait collects the
// results, each recorded once. A node that dies holding jobs leaves them
// to be claimed again when the lease runs out.
package replays
