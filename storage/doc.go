// Package storage implements the store.Store contract of package
// runtime/store on badger, the embedded default: one process, one data
// directory.
//
// # Durability
//
// Writes are synced on commit (badger's SyncWrites): a transaction that
// returned nil survives a SIGKILL or a power cut. Concurrent commits share
// an fsync, because badger's writer batches the transactions queued while
// the previous batch was being written (group commit), which is what lets
// many clients commit durably at a high rate.
//
// # Key layout
//
// Keys are UTF-8 paths whose first segment names the owner; the services
// own their prefixes and store JSON values:
//
//	escrow/contract/<id>                 a contract
//	escrow/activity/<seq:020d>           the court's activity log
//	receipt/<id>                         a signed receipt
//	receipt-by-agent/<did>/<seq:020d>    index: the receipts an agent was party to
//	ledger/entry/<account>/<transfer>/<leg>  one leg of a transfer (append-only)
//	idem/<scope>/<key>                   a stored response for an idempotency key
//	checker/<sha256>                     checker metadata; checker-bytes/<sha256> its bytes
//
// Keys are never reused; ids are unique. A value's JSON shape belongs to
// the package that owns the prefix.
package storage
