package idem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func TestIdem(t *testing.T) {
	db := openMemory(t)
	ctx := context.Background()
	a := idem.Request{Scope: "tenant-a", Key: "k/1", Fingerprint: "f1"}
	err := db.Update(ctx, func(tx store.Tx) error {
		return idem.Save(tx, a, idem.Reply{Body: []byte(`{"ok":true}`), Created: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(tx store.Tx) error {
		t.Run("OK", func(t *testing.T) {
			r, err := idem.Lookup(tx, a)
			if err != nil || r == nil || string(r.Body) != `{"ok":true}` || !r.Created || !r.Replayed {
				t.Fatalf("replay %+v %v", r, err)
			}
		})
		t.Run("ErrConflict", func(t *testing.T) {
			_, err := idem.Lookup(tx, idem.Request{Scope: "tenant-a", Key: "k/1", Fingerprint: "f2"})
			if fault.CodeOf(err) != "idempotency_conflict" || fault.KindOf(err) != fault.Conflict {
				t.Fatalf("err %v, want idempotency_conflict", err)
			}
		})
		t.Run("Scopes", func(t *testing.T) {
			r, err := idem.Lookup(tx, idem.Request{Scope: "tenant-b", Key: "k/1", Fingerprint: "f2"})
			if r != nil || err != nil {
				t.Fatalf("another scope saw the key: %+v %v", r, err)
			}
		})
		t.Run("NoKey", func(t *testing.T) {
			if r, err := idem.Lookup(tx, idem.Request{Scope: "tenant-a"}); r != nil || err != nil {
				t.Fatalf("a request without a key replayed: %+v %v", r, err)
			}
		})
		return nil
	})
	// Forget: after the request's effect is undone, the key runs again.
	if err := db.Update(ctx, func(tx store.Tx) error { return idem.Forget(tx, a) }); err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(tx store.Tx) error {
		if r, err := idem.Lookup(tx, idem.Request{Scope: "tenant-a", Key: "k/1", Fingerprint: "f2"}); r != nil || err != nil {
			t.Errorf("a forgotten key still answers: %+v %v", r, err)
		}
		return nil
	})
	for _, bad := range []string{"", strings.Repeat("x", idem.MaxKey+1), "tab\there"} {
		if err := idem.ValidKey(bad); fault.CodeOf(err) != "invalid_idempotency_key" {
			t.Errorf("ValidKey(%q) = %v", bad, err)
		}
	}
}

// openMemory opens an in-memory store, closed when the test ends.
func openMemory(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}
