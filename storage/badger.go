package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/assayhq/assay/runtime/store"
)

// maxAttempts bounds how often Update retries on a conflict.
const maxAttempts = 64

// DB is a store.Store on badger.
type DB struct {
	db   *badger.DB
	dir  string
	sync *groupSync          // nil in memory
	logs map[string]*os.File // the log files syncFiles syncs, open (sync.go)
	// sealed are the rotated-out write-ahead logs synced since, vlogSet
	// the value logs the last sync saw (sync.go).
	sealed  map[string]bool
	vlogSet string
	// newest is the write-ahead log badger appends to, as the last
	// listing found it (sync.go).
	newest string
	// listings counts the syncs that read the directory, for tests.
	listings int
	// bigValue is the size from which a value may go to the value log
	// (half badger's threshold, to be safe); bigWrites is set when a
	// transaction that wrote one committed since the last sync.
	bigValue  int
	bigWrites atomic.Bool

	onCommit func(time.Duration)
	onRetry  func()
}

// Interface guard.
var _ store.Store = (*DB)(nil)

// Options configure Open.
type Options struct {
	// InMemory keeps everything in memory, for tests that need no
	// durability. Dir is ignored.
	InMemory bool
	// Logger receives badger's warnings and errors; nil discards them.
	Logger *slog.Logger
	// OnCommit, when set, is told how long each Update that wrote took,
	// from its start to its commit being durable, retries included: for
	// metrics.
	OnCommit func(time.Duration)
	// OnSync, when set, is told how many commits each group sync made
	// durable (not called in memory).
	OnSync func(commits int)
	// OnRetry, when set, is called each time an Update runs again after a
	// conflict.
	OnRetry func()

	// MemTableSize, when set, replaces the package's memTableSize: a
	// small one for tests that open stores on disk again and again
	// (each open allocates a memtable of this size), or that rotate the
	// write-ahead logs.
	MemTableSize int64
}

// memTableSize is the size of a memtable on disk (and of its write-ahead
// log, twice that reserved): 128 MB, twice badger's default. Badger
// flushes every version a memtable holds into a table at level 0, and
// every such table overlaps the keys of the level below (receipts are
// keyed by hashes, and counters are rewritten in place), so each flush
// costs a compaction of that level: bigger memtables, fewer of them. Under
// sustained load (`assay bench court` for 40 s from a fresh directory,
// five pairs of servers) 256 clients got 2-10% more cases/s with 5-10%
// less server CPU a case and a p99 of 199-228 ms instead of 289-397 ms;
// 32 clients a p99 of 38-39 ms instead of 48-52 ms; 2 clients the same.
// The price: up to NumMemtables (5) of them in memory while flushes lag.
const memTableSize = 128 << 20

// ErrLocked is Open's error, wrapped with the directory, when another
// process has the store open: badger lets one process at a time open a
// directory, and says so only in the text of its error.
var ErrLocked = errors.New("another process has this badger store open, and badger lets one process at a time open a store")

// Open opens (creating if need be) the badger store in dir.
//
// # Errors
//
// ErrLocked, wrapped, when another process holds dir; any other error
// badger returns, wrapped.
func Open(dir string, opt Options) (*DB, error) {
	// Badger's own SyncWrites syncs once per transaction, so concurrent
	// commits queue behind one another's fsyncs. Assay syncs instead once
	// per group of commits (groupSync): the same durability, shared.
	bo := badger.DefaultOptions(dir).
		WithSyncWrites(false).
		WithLogger(badgerLogger{opt.Logger}).
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(true).
		WithMemTableSize(memTableSize)
	if opt.MemTableSize > 0 {
		// Badger refuses a value threshold above a batch's limit, 15%
		// of a memtable.
		bo = bo.WithMemTableSize(opt.MemTableSize).WithValueThreshold(min(bo.ValueThreshold, opt.MemTableSize/16))
	}
	if opt.InMemory {
		// Badger's own memtables: tests open many stores in memory.
		bo = bo.WithMemTableSize(badger.DefaultOptions("").MemTableSize).WithInMemory(true).WithDir("").WithValueDir("").WithSyncWrites(false)
	}
	db, err := badger.Open(bo)
	if err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock") {
		return nil, fmt.Errorf("storage: open %s: %w", dir, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	d := &DB{db: db, dir: dir, onCommit: opt.OnCommit, onRetry: opt.OnRetry, bigValue: max(1, int(bo.ValueThreshold/2))}
	if !opt.InMemory {
		d.sync = newGroupSync(d.syncFiles, opt.OnSync)
	}
	return d, nil
}

// Close implements store.Store.
func (d *DB) Close() error {
	err := d.db.Close()
	if d.sync != nil {
		d.sync.quiesce(d.closeLogs)
	}
	return wrap(err)
}

// Update implements store.Store.
func (d *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	var start time.Time
	if d.onCommit != nil {
		start = time.Now()
	}
	backoff := 50 * time.Microsecond
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.sync != nil {
			// After a failed sync nothing is durable any more: refuse to
			// write rather than commit what cannot be acknowledged.
			if err := d.sync.failed(); err != nil {
				return err
			}
		}
		txn := d.db.NewTransaction(true)
		t := &tx{txn: txn, bigValue: d.bigValue}
		err := fn(t)
		if err == nil {
			err = txn.Commit()
		}
		txn.Discard()
		if err == nil && d.sync != nil && t.wrote {
			// Acknowledge only what is on disk. A transaction that wrote
			// nothing committed nothing, and waits for no sync.
			// A failed sync leaves the commit applied but not durable.
			if t.big {
				// After the commit, before the wait: the sync waited
				// for, or one before it that started after this, syncs
				// the value logs (syncFiles).
				d.bigWrites.Store(true)
			}
			if err := d.sync.wait(); err != nil {
				return errors.Join(err, store.ErrCommitUnknown)
			}
			if d.onCommit != nil {
				d.onCommit(time.Since(start))
			}
			return nil
		}
		if err == nil && t.wrote && d.onCommit != nil {
			d.onCommit(time.Since(start)) // in memory
		}
		if !errors.Is(err, badger.ErrConflict) || attempt == maxAttempts {
			return wrap(err)
		}
		if d.onRetry != nil {
			d.onRetry()
		}
		// Another transaction wrote what this one read: run it again on
		// the new state, after a short pause that grows with contention.
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Millisecond)
	}
}

// View implements store.Store.
func (d *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return wrap(d.db.View(func(txn *badger.Txn) error { return fn(&tx{txn: txn}) }))
}

type tx struct {
	txn      *badger.Txn
	wrote    bool // Set or Delete was called
	bigValue int  // 0: no value is big (View)
	big      bool // a value of at least bigValue bytes was set
	// read keeps what GetMany read, by key (nil: no value), until the
	// key is written.
	read map[string][]byte
}

func (t *tx) Get(key string) ([]byte, error) {
	if v, ok := t.read[key]; ok {
		if v == nil {
			return nil, store.ErrNotFound
		}
		return v, nil
	}
	item, err := t.txn.Get([]byte(key))
	if err != nil {
		return nil, wrap(err)
	}
	b, err := item.ValueCopy(nil)
	return b, wrap(err)
}

// GetMany implements store.Tx: one Get each, kept for the transaction's
// later reads.
func (t *tx) GetMany(keys ...string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := t.Get(k)
		if errors.Is(err, store.ErrNotFound) {
			v = nil
		} else if err != nil {
			return nil, err
		} else if v == nil {
			v = []byte{} // present, empty
		}
		out[i] = v
		if t.read == nil {
			t.read = make(map[string][]byte, len(keys))
		}
		t.read[k] = v
	}
	return out, nil
}

func (t *tx) Set(key string, value []byte) error {
	delete(t.read, key)
	t.wrote = true
	if t.bigValue > 0 && len(key)+len(value) >= t.bigValue {
		t.big = true
	}
	return wrap(t.txn.Set([]byte(key), value))
}

func (t *tx) Delete(key string) error {
	delete(t.read, key)
	t.wrote = true
	return wrap(t.txn.Delete([]byte(key)))
}

func (t *tx) Scan(prefix string, reverse bool, fn func(string, []byte) error) error {
	opts := badger.DefaultIteratorOptions
	// The services' values are small and live in the LSM tree beside
	// their keys: fn reads each where it lies, and a scan that stops
	// early (a page, a reputation's shards) copies nothing it does not
	// read.
	opts.PrefetchValues = false
	opts.Reverse = reverse
	var it *badger.Iterator
	if !reverse {
		opts.Prefix = []byte(prefix)
		it = t.txn.NewIterator(opts)
		it.Rewind() // the first key with the prefix
	} else {
		// In reverse, Seek finds the last key <= its argument: start at
		// the least key past every key that has the prefix, and step off
		// it. Without one (a prefix of 0xff bytes only), the prefix's keys
		// run to the end of the key space: start at the last key. No
		// opts.Prefix here: with it, an iterator at a key outside the
		// prefix is not Valid and cannot be stepped off.
		it = t.txn.NewIterator(opts)
		if end := upperBound([]byte(prefix)); end != nil {
			it.Seek(end)
			if it.Valid() && bytes.Equal(it.Item().Key(), end) {
				it.Next()
			}
		} else {
			it.Rewind()
		}
	}
	defer it.Close()
	for ; it.ValidForPrefix([]byte(prefix)); it.Next() {
		item := it.Item()
		var err error
		if verr := item.Value(func(v []byte) error {
			err = fn(string(item.Key()), v)
			return nil
		}); verr != nil {
			return wrap(verr)
		}
		if errors.Is(err, store.ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// upperBound returns the least key greater than every key with the prefix,
// or nil when there is none (an empty prefix, or one of 0xff bytes only).
func upperBound(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte(nil), prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

// wrap translates badger's errors so that none reaches the services (OPA's
// storage/disk wrapError): a missing key is store.ErrNotFound, a conflict
// that outlived the retries says so, and the callers' own errors (fn's)
// pass through unchanged.
func wrap(err error) error {
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return store.ErrNotFound
	case errors.Is(err, badger.ErrConflict):
		return fmt.Errorf("storage: gave up after %d conflicting attempts: %w", maxAttempts, store.ErrContention)
	}
	return err
}

// badgerLogger sends badger's warnings and errors to slog and drops its
// chatter.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}
func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
