// Package store declares the storage contract that Assay's services run on:
// ordered keys and values read and written in serialisable transactions.
// The services build their repositories (contracts, receipts, the ledger,
// idempotency records) on it, so that one transaction can commit a state
// change, its ledger postings, its receipt and its idempotency record
// together. package storage implements it on badger; the key layout is
// documented there.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
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
	// Set sets key to value.
	Set(key string, value []byte) error
	// Delete removes key; removing an absent key is not an error.
	Delete(key string) error
	// Scan calls fn for every key with the prefix, in key order (or
	// reverse order), until fn returns an error. ErrStop ends the scan
	// cleanly. The slices passed to fn are valid only during the call.
	Scan(prefix string, reverse bool, fn func(key string, value []byte) error) error
}

// RandomIDs is a Store that wants the ids of new records random rather
// than ordered by time (see IDs).
type RandomIDs interface {
	// RandomIDs reports whether it does.
	RandomIDs() bool
}

// IDs returns the maker of the ids of new records (contracts, listings,
// matters) on st: ident.RandomID when st is a RandomIDs that says so,
// ident.NewID, whose ids sort by when they were made, otherwise. Badger
// works fastest on ids made in order; PostgreSQL's SERIALIZABLE
// transactions lock the index pages their reads visit, so that
// transactions touching ids made one after another, whose keys share a
// page, conflict and run again.
func IDs(st Store) func() string {
	if r, ok := st.(RandomIDs); ok && r.RandomIDs() {
		return ident.RandomID
	}
	return ident.NewID
}

// MultiGetter is a Tx that reads several keys in one exchange with its
// database: PostgreSQL's sends the reads in one batch, one round trip.
type MultiGetter interface {
	// GetMany returns the values of keys, in order: nil for a key that
	// has none, a non-nil slice (empty for an empty value) for one that
	// has.
	GetMany(keys []string) ([][]byte, error)
}

// GetMany reads keys in tx, in one exchange where tx is a MultiGetter and
// one Get each otherwise. A key that has no value reads as nil.
func GetMany(tx Tx, keys ...string) ([][]byte, error) {
	if m, ok := tx.(MultiGetter); ok {
		return m.GetMany(keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := tx.Get(k)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		if v == nil {
			v = []byte{} // present, empty
		}
		out[i] = v
	}
	return out, nil
}

// Prefetcher is a Tx that reads keys ahead of the Gets that will ask for
// them: PostgreSQL's sends the reads in one batch with whatever else is
// waiting (its BEGIN, its writes), one round trip where the Gets of a
// mutation's later steps would each take one.
type Prefetcher interface {
	// Prefetch reads keys in the transaction, as GetMany would, and keeps
	// their values for the transaction's next Get or GetMany of each; a
	// Set or Delete of a key drops what was read ahead of it.
	Prefetch(keys []string) error
}

// Prefetch reads ahead in tx, where tx is a Prefetcher, the keys that keys
// returns; elsewhere it does nothing and does not call keys, so that a
// store whose reads are cheap pays nothing for naming them. A read made
// ahead is a read of the transaction like any other (a concurrent write
// of the key fails the commit as it would after a Get), and a key read
// ahead that the transaction then does not read costs only the read: keys
// may name what a transaction will most likely read, from data of any
// age, and a wrong guess is read again, never wrongly.
func Prefetch(tx Tx, keys func() []string) error {
	p, ok := tx.(Prefetcher)
	if !ok {
		return nil
	}
	return p.Prefetch(keys())
}

// KeyReader is a Store that reads keys as of one moment with no
// transaction around the read: PostgreSQL's reads them in one statement,
// one round trip, where a View takes two (its reads, then its COMMIT).
type KeyReader interface {
	// ReadKeys returns the values of keys as GetMany does, all as of
	// one moment.
	ReadKeys(ctx context.Context, keys []string) ([][]byte, error)
}

// Read returns the values of keys as of one moment, as GetMany returns
// them (nil for a key that has none): in one read where st is a
// KeyReader, in a View otherwise. For a read that needs nothing else of
// its snapshot, such as the checks before a mutation.
func Read(ctx context.Context, st Store, keys ...string) ([][]byte, error) {
	if r, ok := st.(KeyReader); ok {
		return r.ReadKeys(ctx, keys)
	}
	var vals [][]byte
	err := st.View(ctx, func(tx Tx) error {
		var err error
		vals, err = GetMany(tx, keys...)
		return err
	})
	return vals, err
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

// JSONAppender is a value that writes its own JSON: the bytes json.Marshal
// writes for it, without reflection (runtime/store/jsonw). It reports false
// when it cannot write them exactly, and SetJSON uses json.Marshal.
type JSONAppender interface {
	AppendJSON(b []byte) ([]byte, bool)
}

// SetJSON writes v to key as JSON.
func SetJSON(tx Tx, key string, v any) error {
	if a, ok := v.(JSONAppender); ok {
		if b, ok := a.AppendJSON(nil); ok {
			return tx.Set(key, b)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s: %w", key, err)
	}
	return tx.Set(key, b)
}
