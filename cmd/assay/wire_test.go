package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

// TestWire_oneRunner: the services one assay serve runs share one checker
// runner, so one pool, one memo and one cache of checkers' bytes: the
// court, the market, POST /replays and the replay worker are handed the
// same *checkers.Runner, and a run through one is a memo hit through
// another, the checker read through one cache.
func TestWire_oneRunner(t *testing.T) {
	t.Setenv("ASSAY_REPLAY_SLOTS", "")
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{9})})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close(ctx) })
	svc, err := wire(ctx, db, keys, sb, nil, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := svc.runner
	if r == nil || r.Memo() == nil {
		t.Fatalf("runner %v, memo %v: want one runner with a memo", r, r.Memo())
	}
	if got := svc.court.Runner(); got != escrow.Runner(r) {
		t.Errorf("court's runner %p, want the server's %p", got, r)
	}
	if got := svc.market.Runner(); got != market.Runner(r) {
		t.Errorf("market's runner %p, want the server's %p", got, r)
	}
	if got := svc.replays.Runner(); got != replays.BatchRunner(r) {
		t.Errorf("replays' runner %p, want the server's %p", got, r)
	}
	if svc.worker == nil {
		t.Fatal("no replay worker")
	}
	if got := svc.worker.Runner(); got != replays.TaskRunner(r) {
		t.Errorf("worker's runner %p, want the server's %p", got, r)
	}

	// Shared in deed: a checker uploaded to the court, run through the
	// court's runner, is answered from the memo through POST /replays'.
	pass, err := os.ReadFile("../../fixtures/checkers/pass.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.checkers.Put(ctx, "wasm", pass, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	ref := checkers.Ref{SHA256: checkers.SHA256(pass)}
	if o, err := svc.court.Runner().Run(ctx, ref, wasm.Input{Artifact: []byte("hello")}); err != nil || !o.Pass {
		t.Fatalf("court's run: %+v, %v", o, err)
	}
	res, err := svc.replays.Replay(ctx, replays.Request{Checker: ref, Artifacts: []json.RawMessage{json.RawMessage(`"hello"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.MemoHits != 1 || r.Runs() != 1 {
		t.Errorf("replay after the court's run: %d memo hits, %d runs; want 1 and 1", res.MemoHits, r.Runs())
	}
}
