package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func TestNewLogger(t *testing.T) {
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
