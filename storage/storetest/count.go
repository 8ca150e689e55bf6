package storetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/assayhq/assay/runtime/store"
)

// Counts is what a Counter saw: transactions begun (Update and View, each
// attempt of an Update counted once) and the keys they read and wrote.
type Counts struct {
	Updates int // read-write transactions run, retries included
	Views   int // read-only transactions run
	Reads   int // keys read by Get and GetMany, and keys a Scan handed to its callback
	Scans   int // Scans begun
	Writes  int // Sets and Deletes
	Bytes   int // the keys and values written
}

// Txs is the transactions of both kinds.
func (c Counts) Txs() int { return c.Updates + c.Views }

// Add returns c plus d.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.Updates + d.Updates, c.Views + d.Views, c.Reads + d.Reads, c.Scans + d.Scans, c.Writes + d.Writes, c.Bytes + d.Bytes}
}

// Sub returns c less d.
func (c Counts) Sub(d Counts) Counts {
	return Counts{c.Updates - d.Updates, c.Views - d.Views, c.Reads - d.Reads, c.Scans - d.Scans, c.Writes - d.Writes, c.Bytes - d.Bytes}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d transactions (%d read-write, %d read-only), %d keys read (%d scans), %d keys written (%d bytes)",
		c.Txs(), c.Updates, c.Views, c.Reads, c.Scans, c.Writes, c.Bytes)
}

// Counter is a store.Store that counts what passes through it to the
// store it wraps, for tests that state how many keys and transactions
// an operation costs. Only store.Store's own methods pass through: a
// wrapped store's optional abilities are hidden.
type Counter struct {
	store.Store
	// OnSet, when set, sees every key and value set.
	OnSet func(key string, value []byte)
	mu    sync.Mutex
	n     Counts
}

// Count wraps st in a Counter.
func Count(st store.Store) *Counter { return &Counter{Store: st} }

// Counts returns what the Counter has seen so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *Counter) add(f func(*Counts)) {
	c.mu.Lock()
	f(&c.n)
	c.mu.Unlock()
}

// Update implements store.Store.
func (c *Counter) Update(ctx context.Context, fn func(store.Tx) error) error {
	return c.Store.Update(ctx, func(tx store.Tx) error {
		c.add(func(n *Counts) { n.Updates++ })
		return fn(&countTx{tx: tx, c: c})
	})
}

// View implements store.Store.
func (c *Counter) View(ctx context.Context, fn func(store.Tx) error) error {
	return c.Store.View(ctx, func(tx store.Tx) error {
		c.add(func(n *Counts) { n.Views++ })
		return fn(&countTx{tx: tx, c: c})
	})
}

// countTx counts a key read once until the transaction writes it, as
// the store reads it: a Get of a key that GetMany read answers from what
// it read.
type countTx struct {
	tx   store.Tx
	c    *Counter
	read map[string]bool
}

func (t *countTx) Get(key string) ([]byte, error) {
	if !t.read[key] {
		t.c.add(func(n *Counts) { n.Reads++ })
	}
	return t.tx.Get(key)
}

func (t *countTx) GetMany(keys ...string) ([][]byte, error) {
	if t.read == nil {
		t.read = map[string]bool{}
	}
	for _, k := range keys {
		if !t.read[k] {
			t.read[k] = true
			t.c.add(func(n *Counts) { n.Reads++ })
		}
	}
	return t.tx.GetMany(keys...)
}

func (t *countTx) Set(key string, value []byte) error {
	delete(t.read, key)
	t.c.add(func(n *Counts) { n.Writes++; n.Bytes += len(key) + len(value) })
	if t.c.OnSet != nil {
		t.c.OnSet(key, value)
	}
	return t.tx.Set(key, value)
}

func (t *countTx) Delete(key string) error {
	delete(t.read, key)
	t.c.add(func(n *Counts) { n.Writes++; n.Bytes += len(key) })
	return t.tx.Delete(key)
}

func (t *countTx) Scan(prefix string, reverse bool, fn func(string, []byte) error) error {
	t.c.add(func(n *Counts) { n.Scans++ })
	return t.tx.Scan(prefix, reverse, func(k string, v []byte) error {
		t.c.add(func(n *Counts) { n.Reads++ })
		return fn(k, v)
	})
}
