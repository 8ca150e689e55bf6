package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage/postgres"
)

// counting opens a store on a database of its own whose writes to the
// server writes counts, and a keyring to sign with.
func counting(t *testing.T) (*postgres.Store, *atomic.Int64, *receipt.Keyring) {
	var writes atomic.Int64
	s, err := postgres.OpenCounting(context.Background(), pgtest.URL(t), &writes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: time.Now, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	return s, &writes, keys
}

// TestStore_courtRoundTrips: a court case takes the round trips to the
// database that its steps need and no more. Each mutation reads what it
// needs in one exchange (store.Tx.GetMany, with its BEGIN) and writes with
// its COMMIT in another; the node that made a step knows the contract's
// state when the next step asks, so that no step reads before its
// transaction: create 2, fund 2, deliver 2, accept 2, dispute 2.
func TestStore_courtRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, writes, keys := counting(t)
	court, err := escrow.New(ctx, escrow.Config{Store: s, Signer: keys})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	run := func(i int, keyed bool) {
		t.Helper()
		ik := func(step string) idem.Request {
			if !keyed {
				return idem.Request{}
			}
			n++
			return idem.Request{Key: fmt.Sprintf("rt-%d", n), Fingerprint: step}
		}
		r, err := court.Create(ctx, escrow.CreateRequest{Buyer: "did:rt:buyer", Seller: fmt.Sprintf("did:rt:seller%d", i),
			Price: json.RawMessage("10"), Acceptance: json.RawMessage(`{"assertions":[{"path":"rows","op":"gte","value":100}]}`)}, ik("create"))
		if err != nil {
			t.Fatal(err)
		}
		var created escrow.Created
		if err := json.Unmarshal(r.Body, &created); err != nil {
			t.Fatal(err)
		}
		id := created.ContractID
		if _, err := court.Fund(ctx, principal.Actor{}, id, ik("fund")); err != nil {
			t.Fatal(err)
		}
		if _, err := court.Deliver(ctx, principal.Actor{}, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":150}`)}, ik("deliver")); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			_, err = court.Accept(ctx, principal.Actor{}, id, ik("accept"))
		} else {
			_, err = court.Dispute(ctx, principal.Actor{}, id, escrow.DisputeRequest{Reason: "check"}, ik("dispute"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	run(0, true) // the pool's connections made, the agents' first counters written
	run(1, true)
	for _, c := range []struct {
		keyed bool
		want  float64
	}{
		// 2+2+2+2. Before the contract's record and the reads in the
		// transactions, 9.5; without the reads made ahead, 13.
		{false, 8},
		// With an Idempotency-Key, each step's transaction reads the
		// stored reply with the rest: no more round trips than without.
		// The one look-up before a step runs is the transport's (api's
		// pipeline), which this test does not go through; before, 10.5,
		// when every service made its own, 14.5, and before the lookup
		// was one statement, 21.5.
		{true, 8},
	} {
		writes.Store(0)
		const cases = 20
		for i := range cases {
			run(i, c.keyed)
		}
		got := float64(writes.Load()) / cases
		t.Logf("Idempotency-Key %v: %.2f round trips a case", c.keyed, got)
		// A few more writes are the pool's pings of a connection that
		// sat idle for a second on a slow machine.
		if got < c.want || got > c.want+0.25 {
			t.Errorf("Idempotency-Key %v: %.2f round trips a case, want %.1f", c.keyed, got, c.want)
		}
	}
}

// TestStore_buyRoundTrips: a purchase in the market reads what it needs
// in one exchange (store.Prefetch), its wallet's balance (a scan, after
// the wallet's lock) in another, and writes with its COMMIT in a third.
func TestStore_buyRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, writes, keys := counting(t)
	m, err := market.New(market.Config{Store: s, Signer: keys})
	if err != nil {
		t.Fatal(err)
	}
	for _, did := range []string{"did:rt:seller", "did:rt:buyer"} { // a bond for each listing, the prices
		if _, err := m.Deposit(ctx, principal.Actor{}, did, market.AmountRequest{AmountUSD: json.RawMessage(`"100"`)}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	const buys = 10
	var listings []string
	for i := range buys + 1 {
		r, err := m.Publish(ctx, principal.Actor{}, market.PublishRequest{Agent: "did:rt:seller", Title: fmt.Sprintf("table %d", i), ProblemStatement: fmt.Sprintf("squares of the first %d integers", i+3),
			Artifact: json.RawMessage(`"1 1\n2 4\n3 9\n"`), ArtifactType: "dataset", PriceUSD: json.RawMessage(`"1.00"`)}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var p market.Published
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		listings = append(listings, p.Listing.ListingID)
	}
	buy := func(listing string) {
		t.Helper()
		if _, err := m.Buy(ctx, principal.Actor{}, listing, market.PurchaseRequest{Agent: "did:rt:buyer"}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	buy(listings[0]) // the buyer's record and the counters written
	writes.Store(0)
	for _, l := range listings[1:] {
		buy(l)
	}
	got := float64(writes.Load()) / buys
	t.Logf("%.2f round trips a purchase", got)
	// Without the reads made ahead, 8.
	if want := 3.0; got < want || got > want+0.25 {
		t.Errorf("%.2f round trips a purchase, want %.0f", got, want)
	}
}
