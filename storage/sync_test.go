package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/store"
)

// TestGroupSync_failure: a failed sync fails the transactions that waited
// for it, and the store refuses every write after it; reads go on, and a
// transaction that writes nothing waits for no sync.
func TestGroupSync_failure(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	db.sync.sync = func() error { time.Sleep(2 * time.Millisecond); return real() } // a slow disk, so that waiters gather
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

// TestGroupSync_gathers: a sync waits for more commits to join it only
// after one that made many durable; commits one at a time never wait.
func TestGroupSync_gathers(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	gathers := func() int { db.sync.mu.Lock(); defer db.sync.mu.Unlock(); return db.sync.gathers }
	for i := range 20 {
		if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set(fmt.Sprint("one/", i), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	if n := gathers(); n != 0 {
		t.Fatalf("%d waits for company among commits made one at a time", n)
	}
	real := db.sync.sync
	db.sync.sync = func() error { time.Sleep(2 * time.Millisecond); return real() } // a slow disk, so that waiters pile up
	var wg sync.WaitGroup
	for round := range 3 {
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set(fmt.Sprint("many/", round, "/", i), []byte("v")) }); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if n := gathers(); n == 0 {
		t.Fatal("no sync waited for company after syncs of many commits")
	}
}

// TestSyncPlan: a sync fdatasyncs the newest write-ahead log every time,
// an older one once after it was rotated out, and the value logs when a
// big value was committed or the set of value logs changed.
func TestSyncPlan(t *testing.T) {
	t.Parallel()
	sealed := map[string]bool{}
	vlogs := ""
	step := func(names []string, big bool, want string) {
		t.Helper()
		p := syncPlan(names, sealed, vlogs, big)
		if got := fmt.Sprint(p.sync); got != want {
			t.Errorf("sync %s, want %s", got, want)
		}
		for _, n := range p.sealed {
			sealed[n] = true
		}
		vlogs = p.vlogSet
	}
	files := []string{"MANIFEST", "000003.sst", "00002.mem", "00001.mem", "000001.vlog", "KEYREGISTRY"}
	step(files, false, "[00001.mem 00002.mem 000001.vlog]") // first: everything
	step(files, false, "[00002.mem]")
	step(files, true, "[00002.mem 000001.vlog]")
	files = append(files, "00003.mem")
	step(files, false, "[00002.mem 00003.mem]") // 00002 rotated out: once more
	step(files, false, "[00003.mem]")
	files = append(files, "000002.vlog")
	step(files, false, "[00003.mem 000001.vlog 000002.vlog]") // a new value log
	step([]string{"99999.mem", "100000.mem", "000001.vlog", "000002.vlog"}, false, "[99999.mem 100000.mem]")
	step([]string{"99999.mem", "100000.mem", "000001.vlog", "000002.vlog"}, false, "[100000.mem]")
}

// TestGroupSync_bigValues: a transaction that wrote a value big enough for
// the value log has the sync it waits for see it, so that the value logs
// are synced; other transactions do not.
func TestGroupSync_bigValues(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seen []bool
	db.sync = newGroupSync(func() error {
		seen = append(seen, db.bigWrites.Load())
		return db.syncFiles()
	}, nil)
	for _, size := range []int{100, 2 << 20, 100} {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			return tx.Set(fmt.Sprintf("k/%d", size), make([]byte, size))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(seen) != "[false true false]" {
		t.Errorf("the syncs saw big values %v, want [false true false]", seen)
	}
}

// TestSyncFiles_rotation: a sync reads the directory only when the
// write-ahead log rotated or a big value was committed, and still syncs
// what a listing would: the newest write-ahead log every time, and a
// rotated-out one once more after its rotation.
func TestSyncFiles_rotation(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var synced [][]string // per sync, the files synced
	db.sync = newGroupSync(func() error {
		files, err := db.logsToSync(db.bigWrites.Swap(false))
		var names []string
		for _, f := range files {
			names = append(names, filepath.Base(f.Name()))
			if err := datasync(f); err != nil {
				return err
			}
		}
		synced = append(synced, names)
		return err
	}, nil)
	newestMem := func() string {
		names, err := os.ReadDir(db.dir)
		if err != nil {
			t.Fatal(err)
		}
		newest := ""
		for _, e := range names {
			if n := e.Name(); strings.HasSuffix(n, ".mem") && (newest == "" || logNumber(n) > logNumber(newest)) {
				newest = n
			}
		}
		return newest
	}
	value := make([]byte, 16<<10)
	prev, rotations := "", 0
	for i := range 400 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			return tx.Set(fmt.Sprintf("k/%04d", i), value)
		})
		if err != nil {
			t.Fatal(err)
		}
		// Nothing is being written now, so the newest log is the one the
		// sync found badger writing to.
		last, newest := synced[len(synced)-1], newestMem()
		if !slices.Contains(last, newest) {
			t.Fatalf("commit %d: the sync synced %v, not the log badger writes, %s", i, last, newest)
		}
		if prev != "" && newest != prev {
			rotations++
			// Unless already flushed to a table and removed (it was then
			// no longer there when the sync listed the directory either).
			_, err := os.Stat(filepath.Join(db.dir, prev))
			if err == nil && !slices.Contains(last, prev) {
				t.Fatalf("commit %d: the sync after %s was rotated out synced %v, not it", i, prev, last)
			}
		}
		prev = newest
	}
	if rotations < 3 {
		t.Fatalf("%d rotations of the write-ahead log, want some to test", rotations)
	}
	t.Logf("%d rotations, %d listings, %d syncs", rotations, db.listings, len(synced))
	if db.listings > rotations+1 {
		t.Errorf("%d syncs of %d read the directory, with %d rotations", db.listings, len(synced), rotations)
	}
}
