package replays_test

import (
	"context"
	"errors"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// TestRegistry: the one checker store finds checkers written with
// checkers.PutBytes (the court's uploads, the market's listings) and
// python sources the market kept under its old key before there was one
// store; anything else is checkers.ErrNotFound.
func TestRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	wasmBytes, legacy := []byte("\x00asm\x01\x00\x00\x00"), []byte("assert True\n")
	var sum string
	err = db.Update(ctx, func(tx store.Tx) error {
		var err error
		if sum, err = checkers.PutBytes(tx, wasmBytes); err != nil {
			return err
		}
		return tx.Set("market/checker/"+checkers.SHA256(legacy), legacy)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum != checkers.SHA256(wasmBytes) {
		t.Errorf("PutBytes: %s, want the bytes' SHA-256", sum)
	}
	for _, src := range []checkers.Source{replays.Registry(db), replays.Checkers(db)} {
		for _, want := range [][]byte{wasmBytes, legacy} {
			if b, err := src.Checker(checkers.SHA256(want)); err != nil || string(b) != string(want) {
				t.Errorf("%T: Checker(%s) = %q, %v; want %q", src, checkers.SHA256(want), b, err, want)
			}
		}
		if _, err := src.Checker(checkers.SHA256([]byte("absent"))); !errors.Is(err, checkers.ErrNotFound) {
			t.Errorf("%T: an absent checker: %v, want ErrNotFound", src, err)
		}
	}
}
