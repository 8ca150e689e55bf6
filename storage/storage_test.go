package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// MustOpen opens a store in a temp dir, closed at the end of the test.
func MustOpen(tb testing.TB, dir string) *storage.DB {
	tb.Helper()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the store contract against badger. A second backend runs
// the same suite (litestream's RunWithReplicaClient pattern).
func TestStore(t *testing.T) {
	RunStoreSuite(t, func(tb testing.TB) store.Store { return MustOpen(tb, tb.TempDir()) })
}

// RunStoreSuite checks the store.Store contract on one implementation.
func RunStoreSuite(t *testing.T, open func(testing.TB) store.Store) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		s := open(t)
		err := s.Update(ctx, func(tx store.Tx) error {
			for _, k := range []string{"a/1", "a/2", "a/3", "b/1"} {
				if err := tx.Set(k, []byte("v"+k)); err != nil {
					return err
				}
			}
			return tx.Delete("a/2")
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.View(ctx, func(tx store.Tx) error {
			v, err := tx.Get("a/1")
			if err != nil || string(v) != "va/1" {
				t.Errorf("get a/1: %q %v", v, err)
			}
			if _, err := tx.Get("a/2"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("get deleted a/2: %v, want ErrNotFound", err)
			}
			for _, reverse := range []bool{false, true} {
				var keys []string
				if err := tx.Scan("a/", reverse, func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
					return err
				}
				want := "[a/1 a/3]"
				if reverse {
					want = "[a/3 a/1]"
				}
				if fmt.Sprint(keys) != want {
					t.Errorf("scan reverse=%v: %v, want %s", reverse, keys, want)
				}
			}
			n := 0
			err = tx.Scan("", false, func(string, []byte) error { n++; return store.ErrStop })
			if err != nil || n != 1 {
				t.Errorf("ErrStop: %d calls, %v", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrRollback", func(t *testing.T) {
		s := open(t)
		want := fault.New(fault.Conflict, "wrong_state", "no")
		err := s.Update(ctx, func(tx store.Tx) error {
			if err := tx.Set("k", []byte("v")); err != nil {
				return err
			}
			return want
		})
		if err != want {
			t.Fatalf("Update returned %v, want fn's error unchanged", err)
		}
		s.View(ctx, func(tx store.Tx) error {
			if _, err := tx.Get("k"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a failed transaction's write was kept")
			}
			return nil
		})
	})
	t.Run("Serialisable", func(t *testing.T) {
		// 50 concurrent read-modify-writes of one counter lose nothing.
		s := open(t)
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Update(ctx, func(tx store.Tx) error {
					var n int
					if err := store.GetJSON(tx, "counter", &n); err != nil && !errors.Is(err, store.ErrNotFound) {
						return err
					}
					return store.SetJSON(tx, "counter", n+1)
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var n int
		s.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, "counter", &n) })
		if n != 50 {
			t.Errorf("counter %d, want 50", n)
		}
	})
}

// TestDB_reopen: what Update acknowledged is there after a reopen.
func TestDB_reopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx store.Tx) error {
		return ledger.Post(tx, ledger.Transfer{ID: "t1", From: "rail:dev", To: "hold:escrow:c/1", Amount: 50, Currency: "credits"})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = MustOpen(t, dir)
	db.View(ctx, func(tx store.Tx) error {
		bal, err := ledger.Balance(tx, "hold:escrow:c/1", "credits")
		if err != nil || bal != 50 {
			t.Errorf("balance %d %v after reopen, want 50", bal, err)
		}
		return nil
	})
}

func TestLedger(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, t.TempDir())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("fund-%d", i), From: "rail:dev", To: fmt.Sprintf("hold:escrow:%d", i), Amount: 10, Currency: "credits"}); err != nil {
					return err
				}
				return ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("pay-%d", i), From: fmt.Sprintf("hold:escrow:%d", i), To: "agent:did:x:seller", Amount: 10, Currency: "credits"})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	db.View(ctx, func(tx store.Tx) error {
		sums, err := ledger.Sums(tx)
		if err != nil || sums["credits"] != 0 {
			t.Errorf("sums %v %v, want zero", sums, err)
		}
		seller, _ := ledger.Get(tx, "agent:did:x:seller")
		rail, _ := ledger.Get(tx, "rail:dev")
		if seller.Balances["credits"] != 200 || rail.Balances["credits"] != -200 || len(seller.Entries) != 20 {
			t.Errorf("seller %v rail %v", seller.Balances, rail.Balances)
		}
		return nil
	})
	for _, bad := range []ledger.Transfer{
		{ID: "z", From: "a", To: "b", Amount: 0, Currency: "c"},
		{ID: "z", From: "a", To: "a", Amount: 1, Currency: "c"},
		{ID: "", From: "a", To: "b", Amount: 1, Currency: "c"},
		{ID: "z", From: "a", To: "b", Amount: 1},
	} {
		if err := db.Update(ctx, func(tx store.Tx) error { return ledger.Post(tx, bad) }); err == nil {
			t.Errorf("%+v was posted", bad)
		}
	}
}
