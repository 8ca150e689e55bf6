package escrow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/store"
)

// identities is a registry of who can prove itself, whose reads may fail.
type identities struct {
	provable map[string]bool
	err      error
}

func (i identities) Provable(_ context.Context, agent string) (bool, error) {
	return i.provable[agent], i.err
}

func withParties(mode principal.Mode, ids escrow.Identities) option {
	return func(c *escrow.Config) { c.Auth, c.Identities = mode, ids }
}

func (c *court) create(tb testing.TB, buyer, seller, price, currency string) string {
	tb.Helper()
	req := createReq(buyer, seller, price, rows100)
	req.Currency = currency
	r, err := c.Create(context.Background(), req, idem.Request{})
	if err != nil {
		tb.Fatal(err)
	}
	var created escrow.Created
	if err := json.Unmarshal(r.Body, &created); err != nil {
		tb.Fatal(err)
	}
	return created.ContractID
}

// deposit puts amount of usd-micro in agent's wallet, as a deposit on the
// rail does.
func (c *court) deposit(tb testing.TB, agent string, amount int64) {
	tb.Helper()
	err := c.store.Update(context.Background(), func(tx store.Tx) error {
		return ledger.Post(tx, ledger.Transfer{ID: "dep-" + agent, From: rail.DevAccount, To: ledger.AgentAccount(agent), Amount: amount, Currency: rail.USDMicro})
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func (c *court) balance(tb testing.TB, account, currency string) int64 {
	tb.Helper()
	var b int64
	err := c.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		b, err = ledger.Balance(tx, account, currency)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A contract in a currency a rail pays out is funded from the buyer's
// wallet, by the buyer, in any mode; nothing is minted.
func TestService_Fund_backed(t *testing.T) {
	ctx := context.Background()
	buyer, seller := principal.Vouch("did:x:buyer", "test"), principal.Vouch("did:x:seller", "test")
	t.Run("OK", func(t *testing.T) {
		c := mustCourt(t)
		c.deposit(t, "did:x:buyer", 100)
		id := c.create(t, "did:x:buyer", "did:x:seller", "60", rail.USDMicro)
		if _, err := c.Fund(ctx, buyer, id, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Deliver(ctx, seller, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":200}`)}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Accept(ctx, buyer, id, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		if b, s := c.balance(t, ledger.AgentAccount("did:x:buyer"), rail.USDMicro), c.balance(t, ledger.AgentAccount("did:x:seller"), rail.USDMicro); b != 40 || s != 60 {
			t.Fatalf("buyer %d, seller %d; want 40 and 60", b, s)
		}
		c.sums(t)
	})
	t.Run("ErrNotTheBuyer", func(t *testing.T) {
		c := mustCourt(t)
		c.deposit(t, "did:x:buyer", 100)
		id := c.create(t, "did:x:buyer", "did:x:seller", "60", rail.USDMicro)
		_, err := c.Fund(ctx, anon, id, idem.Request{})
		wantCode(t, err, principal.ECodeSignatureMissing)
		_, err = c.Fund(ctx, seller, id, idem.Request{})
		wantCode(t, err, principal.ECodeAgentMismatch)
		_, err = c.Fund(ctx, principal.Operator(), id, idem.Request{})
		wantCode(t, err, principal.ECodeSignatureMissing)
		if got, _ := c.Get(ctx, id); got.Status != escrow.StatusCreated {
			t.Fatalf("status %s", got.Status)
		}
	})
	t.Run("ErrInsufficientFunds", func(t *testing.T) {
		c := mustCourt(t)
		c.deposit(t, "did:x:buyer", 10)
		id := c.create(t, "did:x:buyer", "did:x:seller", "60", rail.USDMicro)
		_, err := c.Fund(ctx, buyer, id, idem.Request{})
		wantCode(t, err, escrow.ECodeInsufficientFunds)
		if b := c.balance(t, ledger.AgentAccount("did:x:buyer"), rail.USDMicro); b != 10 {
			t.Fatalf("buyer holds %d after a refused fund", b)
		}
	})
	t.Run("ErrTheSellerAccepts", func(t *testing.T) {
		c := mustCourt(t)
		c.deposit(t, "did:x:buyer", 100)
		id := c.create(t, "did:x:buyer", "did:x:seller", "60", rail.USDMicro)
		if _, err := c.Fund(ctx, buyer, id, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":1}`)}, idem.Request{})
		wantCode(t, err, principal.ECodeSignatureMissing)
		if _, err := c.Deliver(ctx, seller, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":1}`)}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		_, err = c.Accept(ctx, seller, id, idem.Request{})
		wantCode(t, err, principal.ECodeAgentMismatch)
		_, err = c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		wantCode(t, err, principal.ECodeSignatureMissing)
	})
	t.Run("ErrLookalikeCurrency", func(t *testing.T) {
		c := mustCourt(t)
		req := createReq("did:x:buyer", "did:x:seller", "5", rows100)
		req.Currency = "USD-Micro"
		_, err := c.Create(ctx, req, idem.Request{})
		wantCode(t, err, escrow.ECodeInvalidCurrency)
	})
}

// A notional currency is minted per currency and buyer: a buyer that
// exhausts its mint blocks no one else.
func TestService_Fund_mintPerBuyer(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	id := c.create(t, "did:x:buyer", "did:x:seller", "50", "")
	if _, err := c.Fund(ctx, anon, id, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	if b := c.balance(t, rail.MintAccount("credits", "did:x:buyer"), "credits"); b != -50 {
		t.Fatalf("the buyer's mint holds %d, want -50", b)
	}
	if b := c.balance(t, rail.DevAccount, "credits"); b != 0 {
		t.Fatalf("the dev rail holds %d credits, want 0", b)
	}
}

// In a signed court a party that can prove who it is makes its own
// mutations; a failed read of who can is an error, never a pass.
func TestService_mayAct(t *testing.T) {
	ctx := context.Background()
	buyer := principal.Vouch("did:x:buyer", "test")
	t.Run("OK", func(t *testing.T) {
		c := mustCourt(t, withParties(principal.Signed, identities{provable: map[string]bool{"did:x:buyer": true}}))
		id := c.create(t, "did:x:buyer", "did:x:seller", "5", "")
		_, err := c.Fund(ctx, anon, id, idem.Request{})
		wantCode(t, err, principal.ECodeSignatureMissing)
		if _, err := c.Fund(ctx, buyer, id, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		// the seller cannot prove itself: the seed's open court
		if _, err := c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":1}`)}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrRead", func(t *testing.T) {
		broken := errors.New("registry unreachable")
		c := mustCourt(t, withParties(principal.Signed, identities{err: broken}))
		id := c.create(t, "did:x:buyer", "did:x:seller", "5", "")
		if _, err := c.Fund(ctx, anon, id, idem.Request{}); !errors.Is(err, broken) {
			t.Fatalf("a fund with the registry unreadable: %v, want its error", err)
		}
		if got, _ := c.Get(ctx, id); got.Status != escrow.StatusCreated {
			t.Fatalf("status %s", got.Status)
		}
	})
}
