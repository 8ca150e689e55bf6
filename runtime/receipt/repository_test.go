package receipt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// assertSigned fails tb unless served carries its subject in the signed
// bytes (AsSigned), holds want in them unescaped, and verifies with v.
func assertSigned(tb testing.TB, v *receipt.Verifier, served []byte, want string) {
	tb.Helper()
	if err := receipt.AsSigned(served); err != nil {
		tb.Error(err)
	}
	if !bytes.Contains(served, []byte(want)) {
		tb.Errorf("the served receipt does not hold %q as signed: %s", want, served)
	}
	if res := v.Verify(served); !res.Valid {
		tb.Errorf("the served receipt does not verify: %s", res.Reason)
	}
}

func TestRepository(t *testing.T) {
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: func() time.Time { return now }, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const text = "a <b> & c"
	sign := func(id string) receipt.Receipt {
		r, err := keys.Sign("AssayTest", id, map[string]string{"note": text})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	get := func(t *testing.T, id string) []byte {
		t.Helper()
		var b []byte
		if err := db.View(ctx, func(tx store.Tx) error {
			var err error
			b, err = receipt.Get(tx, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("OK", func(t *testing.T) {
		id := receipt.ID("thing", "purpose")
		if want := func() string { s := sha256.Sum256([]byte("thing/purpose")); return hex.EncodeToString(s[:8]) }(); id != want {
			t.Fatalf("ID = %s, want %s", id, want)
		}
		var put []byte
		err := db.Update(ctx, func(tx store.Tx) error {
			var err error
			put, err = receipt.Put(tx, sign(id), now, "did:a", "did:b", "did:a", "")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, receipt.IDPrefix+id)
		if !bytes.Equal(got, put) || !bytes.Equal(get(t, id), put) {
			t.Fatalf("Get = %s, Put stored %s", got, put)
		}
		assertSigned(t, keys.Verifier(), got, text)
	})
	t.Run("ByAgent", func(t *testing.T) {
		second := receipt.ID("thing", "second")
		if err := db.Update(ctx, func(tx store.Tx) error {
			_, err := receipt.Put(tx, sign(second), now.Add(time.Nanosecond), "did:a")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var a, b receipt.AgentReceipts
		db.View(ctx, func(tx store.Tx) error {
			a, _ = receipt.ByAgent(tx, "did:a", 1)
			b, _ = receipt.ByAgent(tx, "did:b", 10)
			return nil
		})
		if a.Total != 2 || a.Count != 1 || !bytes.Contains(a.Receipts[0], []byte(second)) {
			t.Fatalf("did:a: %+v, want 2 receipts, the newest (%s) on a page of one", a, second)
		}
		if b.Total != 1 || b.Count != 1 {
			t.Fatalf("did:b: total %d count %d, want one (a repeated party is indexed once)", b.Total, b.Count)
		}
		assertSigned(t, keys.Verifier(), a.Receipts[0], text)
	})
	t.Run("Repair", func(t *testing.T) {
		// How the market stored receipts before: json.Marshal, which
		// writes < > & as \u003c \u003e \u0026 in the signed subject.
		id := receipt.ID("legacy")
		escaped, err := json.Marshal(sign(id))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(escaped, []byte(`\u003cb\u003e \u0026`)) {
			t.Fatalf("json.Marshal no longer escapes: %s", escaped)
		}
		if err := db.Update(ctx, func(tx store.Tx) error { return tx.Set("receipt/"+id, escaped) }); err != nil {
			t.Fatal(err)
		}
		assertSigned(t, keys.Verifier(), get(t, id), text)
	})
	t.Run("ErrAsSigned", func(t *testing.T) {
		escaped, err := json.Marshal(sign(receipt.ID("escaped")))
		if err != nil {
			t.Fatal(err)
		}
		if receipt.AsSigned(escaped) == nil {
			t.Fatalf("AsSigned took a receipt whose subject was HTML-escaped: %s", escaped)
		}
		if res := keys.Verifier().Verify(escaped); !res.Valid {
			t.Fatalf("the escaped copy no longer verifies (so AsSigned is not the only check that tells): %s", res.Reason)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		err := db.View(ctx, func(tx store.Tx) error { _, err := receipt.Get(tx, "0000000000000000"); return err })
		if fault.CodeOf(err) != "receipt_not_found" || fault.KindOf(err) != fault.NotFound {
			t.Fatalf("err %v, want receipt_not_found", err)
		}
	})
}
