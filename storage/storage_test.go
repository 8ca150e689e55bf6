package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/storetest"
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

// TestStore runs the store contract against badger; storage/postgres runs
// the same suite against PostgreSQL.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.RunStoreSuite(t, func(tb testing.TB) store.Store { return MustOpen(tb, tb.TempDir()) })
}

// TestDB_reopen: what Update acknowledged is there after a reopen.
func TestDB_reopen(t *testing.T) {
	t.Parallel()
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

// TestDB_locked: a second Open of a directory in use is ErrLocked, named
// as such, and leaves the first store working.
func TestDB_locked(t *testing.T) {
	dir := t.TempDir()
	db := MustOpen(t, dir)
	second, err := storage.Open(dir, storage.Options{})
	if err == nil {
		second.Close()
		t.Fatal("a second Open of a directory in use succeeded")
	}
	if !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("a second Open: %v, want ErrLocked", err)
	}
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.Set("k", []byte("v")) }); err != nil {
		t.Fatalf("the first store after a refused Open: %v", err)
	}
}

// An Update that conflicts on every attempt gives up with
// store.ErrContention, a 503 for the API, and keeps nothing.
func TestDB_contention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := MustOpen(t, t.TempDir())
	attempts := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		attempts++
		if _, err := tx.Get("hot"); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		// Another writer changes what this transaction read, every time.
		if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set("hot", []byte{byte(attempts)}) }); err != nil {
			return err
		}
		return tx.Set("mine", []byte("x"))
	})
	if !errors.Is(err, store.ErrContention) || fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("err %v (kind %q), want store.ErrContention", err, fault.KindOf(err))
	}
	if attempts < 2 {
		t.Fatalf("%d attempts, want retries", attempts)
	}
	err = db.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get("mine")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the conflicting transaction's write was kept: %v", err)
	}
}
