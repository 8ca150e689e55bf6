// Package store declares the storage contract that Assay's services run on:
// ordered keys and values read and written in serialisable transactions,
// and nothing else. Every backend provides all of it (badger in package
// storage, PostgreSQL in storage/postgres); no service asks a store what
// more it can do. The services build their repositories on it (the
// court's contracts, receipts, the ledger, idempotency records), each
// owning its keys and their encoding, so that one transaction can commit a
// state change, its ledger postings, its receipt and its idempotency
// record together. storage/doc.go lists every key.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/assayhq/assay/runtime/fault"
)

// ErrNotFound is returned by Tx.Get for a key that has no value.
var ErrNotFound = errors.New("store: not found")

// ErrStop, returned by a Scan callback, ends the scan without error.
var ErrStop = errors.New("store: stop scan")

// ErrContention is what Update's error wraps when its transaction
// conflicted with concurrent ones on every attempt: nothing was written,
// and the caller may try again. It is a fault of kind unavailable (503).
var ErrContention = fault.New(fault.Unavailable, "store_contention",
	"too many concurrent changes to the same records; nothing was changed, try again")

// ErrCommitUnknown is what Update's error wraps when the store cannot tell
// whether the transaction committed: the connection to the database failed
// while the commit was under way, or the commit was applied but could not
// be made durable. A caller must not undo effects outside the store (a
// refund on a payment rail) on such an error, as it would on any other: the
// writes may be there. It is a fault of kind internal, so that it is
// logged.
var ErrCommitUnknown = fault.New(fault.Internal, "commit_unknown",
	"the store could not confirm the commit; the change may or may not have been made")

// Store runs transactions.
type Store interface {
	// Update runs fn in a read-write transaction and commits it durably:
	// when Update returns nil, the writes survive a crash of the process
	// or the machine.
	//
	// # Notes
	//
	//   - Transactions are serialisable. When a concurrent transaction
	//     wrote a key that fn read, the commit fails and Update runs fn
	//     again from the start, a bounded number of times; fn must
	//     therefore have no effects outside tx.
	//
	// # Errors
	//
	// fn's error, unchanged, after which nothing fn wrote is kept;
	// ErrContention when conflicts outlasted the retries (nothing kept);
	// ErrCommitUnknown when the commit's fate is unknown (see there).
	Update(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn in a read-only transaction over a consistent snapshot.
	View(ctx context.Context, fn func(tx Tx) error) error
	// Close flushes and closes the store.
	Close() error
}

// Tx reads and writes keys inside one transaction.
type Tx interface {
	// Get returns the value of key, or ErrNotFound.
	Get(key string) ([]byte, error)
	// GetMany returns the values of keys, in order: nil for a key that
	// has none, a non-nil slice (empty for an empty value) for one that
	// has. A transaction that knows what it will read names it here
	// first, so that a database whose reads are round trips reads it in
	// one.
	//
	// # Notes
	//
	//   - The transaction keeps what GetMany read: a later Get or GetMany
	//     of one of those keys answers from it, until the transaction
	//     writes the key.
	//   - A key read by GetMany is read by the transaction as by Get: a
	//     concurrent write of it fails the commit.
	GetMany(keys ...string) ([][]byte, error)
	// Set sets key to value.
	Set(key string, value []byte) error
	// Delete removes key; removing an absent key is not an error.
	Delete(key string) error
	// Scan calls fn for every key with the prefix, in key order (or
	// reverse order), until fn returns an error. ErrStop ends the scan
	// cleanly. The slices passed to fn are valid only during the call.
	Scan(prefix string, reverse bool, fn func(key string, value []byte) error) error
}

// GetJSON reads key into v.
func GetJSON(tx Tx, key string, v any) error {
	b, err := tx.Get(key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store: decode %s: %w", key, err)
	}
	return nil
}

// SetJSON writes v to key as JSON.
func SetJSON(tx Tx, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s: %w", key, err)
	}
	return tx.Set(key, b)
}
