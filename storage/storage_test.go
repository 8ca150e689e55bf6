package storage_test

import (
	"context"
	"testing"

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
	storetest.RunStoreSuite(t, func(tb testing.TB) store.Store { return MustOpen(tb, tb.TempDir()) })
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
