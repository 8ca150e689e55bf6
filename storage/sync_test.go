package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/store"
)

// TestGroupSync_failure: a failed sync fails the transactions that waited
// for it, and the store refuses every write after it; reads go on, and a
// transaction that writes nothing waits for no sync.
func TestGroupSync_failure(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	syncs := 0
	real := db.sync.sync
	db.sync.sync = func() error { syncs++; return real() }
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set("a", []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx store.Tx) error { _, err := tx.Get("a"); return err }); err != nil || syncs != 1 {
		t.Fatalf("a read-only Update: %v, %d syncs (want 1: only the write's)", err, syncs)
	}
	broken := errors.New("disk on fire")
	db.sync.sync = func() error { return broken }
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set("b", []byte("2")) }); !errors.Is(err, broken) || !errors.Is(err, store.ErrCommitUnknown) {
		t.Fatalf("the write whose sync failed: %v, want the failure and store.ErrCommitUnknown (it is applied, not durable)", err)
	}
	ran := false
	err = db.Update(ctx, func(tx store.Tx) error { ran = true; return tx.Set("c", []byte("3")) })
	if !errors.Is(err, broken) || errors.Is(err, store.ErrCommitUnknown) || ran {
		t.Fatalf("a write after the failure: ran=%v err=%v, want it refused before it runs", ran, err)
	}
	if err := db.View(ctx, func(tx store.Tx) error { _, err := tx.Get("a"); return err }); err != nil {
		t.Fatalf("reads after the failure: %v", err)
	}
}

// TestGroupSync_observed: the hooks see every write: each commit's
// duration once, and batch sizes that add up to the commits made durable,
// with several commits sharing a sync when they wait together.
func TestGroupSync_observed(t *testing.T) {
	var mu sync.Mutex
	var commits, batched, syncs int
	db, err := Open(t.TempDir(), Options{
		OnCommit: func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if d <= 0 {
				t.Errorf("commit took %v", d)
			}
			commits++
		},
		OnSync: func(n int) { mu.Lock(); batched += n; syncs++; mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	real := db.sync.sync
	db.sync.sync = func() error { time.Sleep(2 * time.Millisecond); return real() } // let waiters gather
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set(fmt.Sprint("k", i), []byte("v")) }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := db.Update(ctx, func(tx store.Tx) error { _, err := tx.Get("k1"); return err }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if commits != n || batched != n {
		t.Errorf("%d commits observed, %d in batches; want %d each", commits, batched, n)
	}
	if syncs >= n {
		t.Errorf("%d syncs for %d concurrent commits: none shared", syncs, n)
	}
}
