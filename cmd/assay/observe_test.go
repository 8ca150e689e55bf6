package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

func TestNewLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := newLogger("json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "n", 1)
	var e map[string]any
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil || e["msg"] != "hello" {
		t.Errorf("json log %q: %v", buf.String(), err)
	}
	if _, err := newLogger("xml", &buf); err == nil {
		t.Error("--log-format xml accepted")
	}
}

// TestHeldIn: money held is read from the hold accounts' counters, per
// service, and nothing else: not agents' accounts, not what was paid out.
func TestHeldIn(t *testing.T) {
	t.Parallel()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, tr := range []ledger.Transfer{
		{ID: "c1.fund", From: "rail:dev", To: "hold:escrow:c1", Amount: 50, Currency: "credits"},
		{ID: "c2.fund", From: "rail:dev", To: "hold:escrow:c2", Amount: 30, Currency: "credits"},
		{ID: "c2.payout", From: "hold:escrow:c2", To: ledger.AgentAccount("did:x:s"), Amount: 30, Currency: "credits"},
		{ID: "dep", From: "rail:dev", To: ledger.AgentAccount("did:x:b"), Amount: 900, Currency: "usd_micros"},
		{ID: "p1.pay", From: ledger.AgentAccount("did:x:b"), To: "hold:market:p1", Amount: 200, Currency: "usd_micros"},
		{ID: "l1.bond", From: ledger.AgentAccount("did:x:b"), To: "hold:bond:l1/x", Amount: 70, Currency: "usd_micros"},
	} {
		tr.At = at
		if err := db.Update(ctx, func(tx store.Tx) error { return ledger.Post(tx, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := heldIn(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(hs, func(a, b metrics.Holding) int { return strings.Compare(a.Service+a.Hold, b.Service+b.Hold) })
	want := []metrics.Holding{
		{Service: "escrow", Hold: "payment", Currency: "credits", Amount: 50},
		{Service: "market", Hold: "bond", Currency: "usd_micros", Amount: 70},
		{Service: "market", Hold: "payment", Currency: "usd_micros", Amount: 200},
	}
	if !slices.Equal(hs, want) {
		t.Errorf("held %+v, want %+v", hs, want)
	}
}

// TestObserveRun: a run's outcome lands in assay_checker_runs_total by
// kind (wasm when unnamed), outcome kind and engine, and in the fuel and
// wall-time histograms.
func TestObserveRun(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	obs := observeRun(m)
	obs("", "compiler", wasm.Outcome{Kind: wasm.KindPass, FuelUsed: 5000, WallNS: int64(time.Millisecond)})
	obs("python", "compiler", wasm.Outcome{Kind: wasm.KindFuelExhausted, FuelUsed: 1e9, WallNS: int64(time.Second)})
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := replays.NewWorker(replays.WorkerConfig{Queue: storage.NewQueue(db, storage.QueueConfig{}),
		Runner: checkers.NewRunner(nil, nil), Name: "test"})
	if err := registerWorker(m, w); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc, err := metrics.Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"assay_replay_jobs_claimed_total", "assay_replay_jobs_lost_total", "assay_replay_jobs_retried_total"} {
		if sc[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"assay_checker_runs_total", map[string]string{"kind": "wasm", "outcome": "pass", "engine": "compiler"}},
		{"assay_checker_runs_total", map[string]string{"kind": "python", "outcome": "fuel_exhausted"}},
		{"assay_checker_fuel_used", map[string]string{"kind": "python"}},
		{"assay_checker_run_duration_seconds", map[string]string{"kind": "wasm"}},
	} {
		if got := sc.Sum(c.name, c.labels); got != 1 {
			t.Errorf("%s%v = %v, want 1", c.name, c.labels, got)
		}
	}
}
