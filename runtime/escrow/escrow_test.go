package escrow_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func TestService_Create(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	t.Run("OK", func(t *testing.T) {
		r, err := c.Create(ctx, createReq("did:a", "did:b", "50", rows100), idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var got escrow.Created
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.ContractID, "esc-") || len(got.ContractHash) != 64 || got.Status != escrow.StatusCreated {
			t.Fatalf("created %+v", got)
		}
		ct, err := c.Get(ctx, got.ContractID)
		if err != nil {
			t.Fatal(err)
		}
		if ct.Currency != "credits" || ct.DeadlineTick != 1000 || ct.Price != 50 || string(ct.Acceptance) != `{"assertions":[{"op":"gte","path":"rows","value":100}]}` {
			t.Fatalf("contract %+v", ct)
		}
	})
	for _, tc := range []struct {
		name, price, acceptance, code string
		buyer, seller                 string
	}{
		{"ErrFloat", "50.0", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrExponent", "5e1", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrNegative", "-5", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrZero", "0", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrBool", "true", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrString", `"50"`, rows100, "invalid_price", "did:a", "did:b"},
		{"ErrHuge", "9007199254740992", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrMissingPrice", "", rows100, "missing_field", "did:a", "did:b"},
		{"ErrMissingBuyer", "5", rows100, "missing_field", "", "did:b"},
		{"ErrSameParty", "5", rows100, "same_party", "did:a", "did:a"},
		{"ErrSlashDID", "5", rows100, "invalid_did", "did:a/x", "did:b"},
		{"ErrMaxInt64Price", "9223372036854775807", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrOverInt64Price", "99999999999999999999999999", rows100, "invalid_price", "did:a", "did:b"},
		{"ErrDotDotDID", "5", rows100, "invalid_did", "..", "did:b"},
		{"ErrStarDID", "5", rows100, "invalid_did", "did:a", "*"},
		{"ErrNULDID", "5", rows100, "invalid_did", "did:a\x00", "did:b"},
		{"ErrBidiDID", "5", rows100, "invalid_did", "did:\u202enanda", "did:b"},
		{"ErrZeroWidthDID", "5", rows100, "invalid_did", "did:a\u200b", "did:b"},
		{"ErrInvalidUTF8DID", "5", rows100, "invalid_did", "did:\xff\xfe", "did:b"},
		{"ErrLongDID", "5", rows100, "invalid_did", "did:" + strings.Repeat("x", escrow.MaxDIDBytes), "did:b"},
		{"ErrAssertion", "5", `{"assertions":[{"path":"rows","op":"between","value":1}]}`, "invalid_assertion", "did:a", "did:b"},
		{"ErrSchema", "5", `{"schema":{"type":"object","oneOf":[]}}`, "invalid_schema", "did:a", "did:b"},
		{"ErrCriteria", "5", `{"bogus":1}`, "invalid_criteria", "did:a", "did:b"},
		{"ErrUnknownChecker", "5", `{"checkers":[{"sha256":"` + strings.Repeat("ab", 32) + `"}]}`, "unknown_checker", "did:a", "did:b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := c.Activity(ctx, 1000)
			_, err := c.Create(ctx, createReq(tc.buyer, tc.seller, tc.price, tc.acceptance), idem.Request{})
			wantCode(t, err, tc.code)
			if fault.KindOf(err) != fault.Invalid {
				t.Fatalf("kind %s, want invalid", fault.KindOf(err))
			}
			after, _ := c.Activity(ctx, 1000)
			if after.Count != before.Count {
				t.Fatalf("a refused creation wrote an event")
			}
		})
	}
}

func TestService_Accept(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", "50", `{"assertions":[{"path":"rows","op":"gte","value":3}]}`), `{"rows":5}`)
	r, err := c.Accept(ctx, anon, id, idem.Request{})
	if err != nil {
		t.Fatal(err)
	}
	s := subject(t, r.Body)
	if s.Verdict != "release" || s.Tier != "buyer-accept" || s.Payout["did:nanda:seller"] != 50 || len(s.Payout) != 1 {
		t.Fatalf("subject %+v", s)
	}
	if res := c.keys.Verifier().Verify(r.Body); !res.Valid {
		t.Fatalf("receipt does not verify: %s", res.Reason)
	}
	acct, err := c.Account(ctx, ledger.AgentAccount("did:nanda:seller"))
	if err != nil || acct.Balances["credits"] != 50 {
		t.Fatalf("seller account %+v, %v", acct, err)
	}
	c.sums(t)
	// An accept is a positive for the seller, nothing for the buyer.
	rep, _ := c.Reputation(ctx, "did:nanda:seller")
	if rep.AsSeller.SampleCount != 1 || rep.AsSeller.Positive != 1 || rep.Standing != escrow.StandingGood {
		t.Fatalf("seller's reputation %+v", rep)
	}
	if rep, _ := c.Reputation(ctx, "did:nanda:buyer"); rep.AsBuyer.SampleCount != 0 || rep.Standing != escrow.StandingNew {
		t.Fatalf("buyer's reputation %+v", rep)
	}
	_, err = c.Accept(ctx, anon, id, idem.Request{})
	wantCode(t, err, "invalid_state")
}

func TestService_Dispute(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	t.Run("Refund", func(t *testing.T) {
		id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", "50", rows100), `{"rows":3}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "far fewer rows than agreed"}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		s := subject(t, r.Body)
		if s.Verdict != "refund" || s.Tier != "tier0" || s.Payout["did:nanda:buyer"] != 50 || len(s.Checks) != 1 || s.Checks[0].Passed || s.Reason != "far fewer rows than agreed" {
			t.Fatalf("subject %+v", s)
		}
		ct, _ := c.Get(ctx, id)
		if ct.Status != escrow.StatusResolved || ct.Verdict != "refund" {
			t.Fatalf("contract %+v", ct)
		}
	})
	t.Run("Release", func(t *testing.T) {
		id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", "70", rows100), `{"rows":300}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "release" || s.Payout["did:nanda:seller"] != 70 {
			t.Fatalf("subject %+v", s)
		}
	})
	t.Run("Reputation", func(t *testing.T) {
		// A court of its own, so that the subtest passes alone: one
		// dispute the seller loses, one it wins.
		c := mustCourt(t)
		for _, tc := range []struct{ price, rows string }{{"50", `{"rows":3}`}, {"70", `{"rows":300}`}} {
			id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", tc.price, rows100), tc.rows)
			if _, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{}); err != nil {
				t.Fatal(err)
			}
		}
		rep, _ := c.Reputation(ctx, "did:nanda:seller")
		if rep.AsSeller.Positive != 1 || rep.AsSeller.Negative != 1 || rep.AsSeller.Score != 0.5 || rep.AsSeller.Confidence != 0.33 || rep.AsSeller.Standing != escrow.StandingWatch || rep.Standing != escrow.StandingGood {
			t.Fatalf("seller %+v", rep)
		}
		rep, _ = c.Reputation(ctx, "did:nanda:buyer")
		if rep.AsBuyer.Positive != 1 || rep.AsBuyer.Negative != 1 {
			t.Fatalf("buyer %+v", rep)
		}
	})
	t.Run("ErrNotDelivered", func(t *testing.T) {
		r, _ := c.Create(ctx, createReq("did:a", "did:b", "5", rows100), idem.Request{})
		var created escrow.Created
		_ = json.Unmarshal(r.Body, &created)
		_, err := c.Dispute(ctx, anon, created.ContractID, escrow.DisputeRequest{}, idem.Request{})
		wantCode(t, err, "invalid_state")
		_, err = c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(`{}`)}, idem.Request{})
		wantCode(t, err, "invalid_state")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := c.Dispute(ctx, anon, "esc-nope", escrow.DisputeRequest{}, idem.Request{})
		wantCode(t, err, "contract_not_found")
	})
	t.Run("ErrReason", func(t *testing.T) {
		id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", "50", rows100), `{"rows":3}`)
		for _, reason := range []string{"nul\x00byte", "bad \xff utf-8", "\u202eesrever", "\x1b[2J", strings.Repeat("x", escrow.MaxReasonBytes+1)} {
			_, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: reason}, idem.Request{})
			wantCode(t, err, "invalid_reason")
			_, err = c.Resolve(ctx, principal.Operator(), id, escrow.ResolveRequest{Verdict: "release", Reason: reason}, idem.Request{})
			wantCode(t, err, "invalid_reason")
		}
		if ct, _ := c.Get(ctx, id); ct.Status != escrow.StatusDelivered {
			t.Fatalf("a refused dispute moved the contract to %s", ct.Status)
		}
	})
	c.sums(t)
}

// TestService_OneWinner: of many concurrent accepts and disputes on one
// delivered contract exactly one wins.
func TestService_OneWinner(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := mustCourtOn(t, db, t.TempDir())
	id := c.delivered(t, createReq("did:nanda:buyer", "did:nanda:seller", "50", rows100), `{"rows":3}`)
	const n = 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		wins    [][]byte
		refused int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r escrow.Reply
			var err error
			if i%2 == 0 {
				r, err = c.Accept(ctx, anon, id, idem.Request{})
			} else {
				r, err = c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "race"}, idem.Request{})
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, r.Body)
			case fault.KindOf(err) == fault.Conflict:
				refused++
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if len(wins) != 1 || refused != n-1 {
		t.Fatalf("%d wins and %d conflicts, want 1 and %d", len(wins), refused, n-1)
	}
	ct, _ := c.Get(ctx, id)
	if ct.Status != escrow.StatusResolved || len(ct.Receipts) != 1 {
		t.Fatalf("contract %+v", ct)
	}
	hold, _ := c.Account(ctx, "hold:escrow:"+id)
	if len(hold.Entries) != 2 || hold.Balances["credits"] != 0 {
		t.Fatalf("hold %+v: want one funding and one payout", hold)
	}
	for _, did := range []string{"did:nanda:buyer", "did:nanda:seller"} {
		rs, _ := c.AgentReceipts(ctx, did, 100)
		if rs.Total != 1 {
			t.Fatalf("%s has %d receipts, want 1", did, rs.Total)
		}
	}
	c.sums(t)
}

func TestService_Idempotency(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	req := createReq("did:a", "did:b", "5", rows100)
	k := idem.Request{Key: "k1", Fingerprint: "fp1"}
	r1, err := c.Create(ctx, req, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		r2, err := c.Create(ctx, req, k)
		if err != nil || !r2.Replayed || string(r2.Body) != string(r1.Body) {
			t.Fatalf("replay %+v %v", r2, err)
		}
		a, _ := c.Activity(ctx, 100)
		if a.Count != 1 {
			t.Fatalf("%d events, want 1", a.Count)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		_, err := c.Create(ctx, req, idem.Request{Key: "k1", Fingerprint: "fp2"})
		wantCode(t, err, "idempotency_conflict")
	})
	t.Run("Concurrent", func(t *testing.T) {
		var created escrow.Created
		_ = json.Unmarshal(r1.Body, &created)
		var wg sync.WaitGroup
		bodies := make([]string, 20)
		for i := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := c.Fund(ctx, anon, created.ContractID, idem.Request{Key: "f", Fingerprint: "fund"})
				if err != nil {
					t.Error(err)
				}
				bodies[i] = string(r.Body)
			}()
		}
		wg.Wait()
		for _, b := range bodies {
			if b != `{"status":"funded"}` {
				t.Fatalf("body %s", b)
			}
		}
		hold, _ := c.Account(ctx, "hold:escrow:"+created.ContractID)
		if hold.Balances["credits"] != 5 {
			t.Fatalf("funded %d times", len(hold.Entries))
		}
	})
}

func TestService_Deadlines(t *testing.T) {
	ctx := context.Background()
	t.Run("DeliverBy", func(t *testing.T) {
		c := mustCourt(t)
		req := createReq("did:a", "did:b", "9", rows100)
		req.DeliverBy = c.clock.Now().Add(time.Hour).Format(time.RFC3339)
		r, err := c.Create(ctx, req, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var created escrow.Created
		_ = json.Unmarshal(r.Body, &created)
		if _, err := c.Fund(ctx, anon, created.ContractID, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		c.clock.Advance(2 * time.Hour)
		_, err = c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":1000}`)}, idem.Request{})
		wantCode(t, err, "deadline_passed")
		ct, _ := c.Get(ctx, created.ContractID)
		if ct.Status != escrow.StatusResolved || ct.Verdict != "refund" || ct.Tier != escrow.TierDeliverBy || len(ct.Receipts) != 1 {
			t.Fatalf("contract %+v", ct)
		}
		acct, _ := c.Account(ctx, ledger.AgentAccount("did:a"))
		if acct.Balances["credits"] != 9 {
			t.Fatalf("buyer %+v", acct)
		}
		c.sums(t)
	})
	t.Run("ReviewWindowOnRead", func(t *testing.T) {
		c := mustCourt(t)
		req := createReq("did:a", "did:b", "9", rows100)
		req.ReviewWindow = json.RawMessage(`"24h"`)
		id := c.delivered(t, req, `{"rows":1}`)
		c.clock.Advance(23 * time.Hour)
		if ct, _ := c.Get(ctx, id); ct.Status != escrow.StatusDelivered {
			t.Fatalf("settled early: %+v", ct)
		}
		c.clock.Advance(time.Hour)
		ct, err := c.Get(ctx, id)
		if err != nil || ct.Status != escrow.StatusResolved || ct.Verdict != "release" || ct.Tier != escrow.TierReview {
			t.Fatalf("contract %+v %v", ct, err)
		}
		_, err = c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		wantCode(t, err, "invalid_state")
		r, err := c.Receipt(ctx, ct.Receipts[0])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if s := subject(t, b); s.Payout["did:b"] != 9 {
			t.Fatalf("subject %+v", s)
		}
		c.sums(t)
	})
	t.Run("ReviewWindowOnDispute", func(t *testing.T) {
		c := mustCourt(t)
		req := createReq("did:a", "did:b", "9", rows100)
		req.ReviewWindow = json.RawMessage(`60`)
		id := c.delivered(t, req, `{"rows":1}`)
		c.clock.Advance(time.Minute)
		_, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		wantCode(t, err, "review_window_closed")
		if ct, _ := c.Get(ctx, id); ct.Verdict != "release" {
			t.Fatalf("contract %+v", ct)
		}
	})
}

func TestService_Escalation(t *testing.T) {
	ctx := context.Background()
	const semantic = `{"assertions":[{"path":"summary","op":"nonempty","semantic":true,"description":"a faithful summary"}]}`
	t.Run("Operator", func(t *testing.T) {
		c := mustCourt(t)
		id := c.delivered(t, createReq("did:a", "did:b", "9", semantic), `{"summary":"made up"}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "unfaithful"}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "escalated" || len(s.Payout) != 0 {
			t.Fatalf("subject %+v", s)
		}
		ct, _ := c.Get(ctx, id)
		if ct.Status != escrow.StatusEscalated {
			t.Fatalf("contract %+v", ct)
		}
		_, err = c.Accept(ctx, anon, id, idem.Request{})
		wantCode(t, err, "invalid_state")
		_, err = c.Resolve(ctx, principal.Operator(), id, escrow.ResolveRequest{Verdict: "split"}, idem.Request{})
		wantCode(t, err, "invalid_verdict")
		r, err = c.Resolve(ctx, principal.Operator(), id, escrow.ResolveRequest{Verdict: "refund", Reason: "the summary invents facts"}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "refund" || s.Tier != escrow.TierOperator || s.Payout["did:a"] != 9 {
			t.Fatalf("subject %+v", s)
		}
		ct, _ = c.Get(ctx, id)
		if ct.Status != escrow.StatusResolved || len(ct.Receipts) != 2 {
			t.Fatalf("contract %+v", ct)
		}
		_, err = c.Resolve(ctx, principal.Operator(), id, escrow.ResolveRequest{Verdict: "release"}, idem.Request{})
		wantCode(t, err, "invalid_state")
		c.sums(t)
	})
	t.Run("Jury", func(t *testing.T) {
		c := mustCourt(t, withJuror(juror{pass: true}))
		id := c.delivered(t, createReq("did:a", "did:b", "9", semantic), `{"summary":"faithful"}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "release" || s.Tier != "tier1-jury" {
			t.Fatalf("subject %+v", s)
		}
	})
}

func TestService_Ban(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	for range 3 {
		id := c.delivered(t, createReq("did:buyer", "did:cheat", "5", rows100), `{"rows":1}`)
		if _, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	rep, _ := c.Reputation(ctx, "did:cheat")
	if rep.Standing != escrow.StandingBanned || rep.AsSeller.Standing != escrow.StandingBanned || rep.AsSeller.Score != 0.2 {
		t.Fatalf("reputation %+v", rep)
	}
	_, err := c.Create(ctx, createReq("did:buyer", "did:cheat", "5", rows100), idem.Request{})
	wantCode(t, err, "seller_banned")
	// A banned seller may still buy.
	if _, err := c.Create(ctx, createReq("did:cheat", "did:other", "5", rows100), idem.Request{}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := c.Reputation(ctx, "did:buyer"); rep.AsBuyer.Positive != 3 || rep.AsBuyer.Standing != escrow.StandingGood {
		t.Fatalf("buyer %+v", rep)
	}
}

// TestService_BanMarks: Create reads a ban from the reputation only for
// an agent marked as having lost a decision, in either role; a store whose
// reputation was written before the marks is marked when a court opens it.
func TestService_BanMarks(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := mustCourtOn(t, db, t.TempDir())
	for range 3 { // did:whiner disputes good deliveries and loses, as buyer
		id := c.delivered(t, createReq("did:whiner", "did:honest", "5", rows100), `{"rows":150}`)
		if _, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Create(ctx, createReq("did:buyer", "did:whiner", "5", rows100), idem.Request{})
	wantCode(t, err, "seller_banned")
	if _, err := c.Create(ctx, createReq("did:whiner", "did:honest", "5", rows100), idem.Request{}); err != nil {
		t.Fatal(err) // an agent with positives only is never read
	}
	// As a store written before the marks: none, and no note that they
	// were made.
	err = db.Update(ctx, func(tx store.Tx) error {
		var keys []string
		for _, p := range []string{"escrow/negative/", "escrow/meta/negatives"} {
			if err := tx.Scan(p, false, func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
				return err
			}
		}
		if len(keys) != 2 {
			return fmt.Errorf("marks %q, want the whiner's and the note", keys)
		}
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reopened := mustCourtOn(t, db, t.TempDir())
	_, err = reopened.Create(ctx, createReq("did:buyer", "did:whiner", "5", rows100), idem.Request{})
	wantCode(t, err, "seller_banned")
}

func TestService_Checkers(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t, withSandbox(t))
	pass := fixture(t, "pass.wasm")
	r, err := c.PutChecker(ctx, "wasm", pass, idem.Request{})
	if err != nil || !r.Created {
		t.Fatalf("put %+v %v", r, err)
	}
	sum := checkers.SHA256(pass)
	if info, err := c.Checker(ctx, sum); err != nil || info.Size != len(pass) || info.Kind != "wasm" {
		t.Fatalf("info %+v %v", info, err)
	}
	if r, err := c.PutChecker(ctx, "wasm", pass, idem.Request{}); err != nil || r.Created {
		t.Fatalf("second put %+v %v", r, err)
	}
	t.Run("ErrInvalid", func(t *testing.T) {
		_, err := c.PutChecker(ctx, "wasm", fixture(t, "nostart.wasm"), idem.Request{})
		wantCode(t, err, "invalid_checker")
		_, err = c.Checker(ctx, checkers.SHA256(fixture(t, "nostart.wasm")))
		wantCode(t, err, "checker_not_found")
		_, err = c.PutChecker(ctx, "lua", []byte("x"), idem.Request{})
		wantCode(t, err, "unsupported_checker_kind")
	})
	t.Run("Dispute", func(t *testing.T) {
		id := c.delivered(t, createReq("did:a", "did:b", "5", `{"checkers":[{"sha256":"`+sum+`"}]}`), `{"rows":1}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "release" || s.Tier != "tier0" || s.Checks[0].Kind != "checker" || !s.Checks[0].Passed {
			t.Fatalf("subject %+v", s)
		}
	})
	t.Run("ArtifactAsDelivered", func(t *testing.T) {
		// What a seller's checker is handed in a dispute is what `assay
		// judge` hands it from the same deliverable: markup characters
		// and all, not escaped on the way through the store.
		const deliverable = `{ "rows": 1, "html": "<b>&amp;</b>" }`
		id := c.delivered(t, createReq("did:a", "did:b", "5", `{"checkers":[{"sha256":"`+sum+`"}]}`), deliverable)
		if _, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		var adj struct {
			Record adjudicate.Record `json:"record"`
		}
		err := c.store.View(ctx, func(tx store.Tx) error {
			b, err := escrow.StoredAdjudication(tx, id)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &adj)
		})
		if err != nil || len(adj.Record.Checkers) != 1 || adj.Record.Checkers[0].Outcome == nil {
			t.Fatalf("adjudication %+v, %v", adj, err)
		}
		local, err := adjudicate.ParseDeliverable([]byte(deliverable))
		if err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(local.Artifact())
		if got := adj.Record.Checkers[0].Outcome.InputSHA256; got != hex.EncodeToString(want[:]) {
			t.Errorf("the checker was handed an artifact of sha256 %s, want %x (%s)", got, want, local.Artifact())
		}
	})
	t.Run("FailingChecker", func(t *testing.T) {
		fail := fixture(t, "fail.wasm")
		if _, err := c.PutChecker(ctx, "wasm", fail, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		id := c.delivered(t, createReq("did:a", "did:b", "5", `{"checkers":[{"sha256":"`+checkers.SHA256(fail)+`"}]}`), `{"rows":1}`)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if s := subject(t, r.Body); s.Verdict != "refund" {
			t.Fatalf("subject %+v", s)
		}
	})
}

func TestService_ActivityResumes(t *testing.T) {
	ctx := context.Background()
	dir, keys := t.TempDir(), t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := mustCourtOn(t, db, keys)
	c.delivered(t, createReq("did:a", "did:b", "5", rows100), `{"rows":1}`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c = mustCourtOn(t, db, keys)
	if _, err := c.Create(ctx, createReq("did:a", "did:b", "5", rows100), idem.Request{}); err != nil {
		t.Fatal(err)
	}
	a, err := c.Activity(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a.TotalSeq != 4 || a.Events[0].Seq != 4 || a.Events[0].Event != "create" || a.Events[1].Event != "deliver" {
		t.Fatalf("activity %+v", a)
	}
}

// TestService_ActivityTwoNodes: two courts on one store (two nodes of one
// court) number their events from the same last sequence number; every
// event of both is kept.
func TestService_ActivityTwoNodes(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := t.TempDir()
	a, b := mustCourtOn(t, db, keys), mustCourtOn(t, db, keys)
	for range 3 {
		for _, c := range []*court{a, b} {
			if _, err := c.Create(ctx, createReq("did:a", "did:b", "5", rows100), idem.Request{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	act, err := a.Activity(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if act.Count != 6 {
		t.Fatalf("%d events kept of 6: %+v", act.Count, act.Events)
	}
}

func TestService_Deliver(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	r, _ := c.Create(ctx, createReq("did:a", "did:b", "5", rows100), idem.Request{})
	var created escrow.Created
	_ = json.Unmarshal(r.Body, &created)
	if _, err := c.Fund(ctx, anon, created.ContractID, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, deliverable, code string }{
		{"ErrMissing", ``, "missing_field"},
		{"ErrNull", `null`, "missing_field"},
		{"ErrUnsafeInteger", `{"n":9007199254740993}`, "invalid_deliverable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(tc.deliverable)}, idem.Request{})
			wantCode(t, err, tc.code)
		})
	}
	t.Run("OK", func(t *testing.T) {
		r, err := c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows": 40}`), Evidence: json.RawMessage(`{}`)}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		_ = json.Unmarshal(r.Body, &got)
		if got["status"] != "delivered" || len(got["evidence_hash"]) != 64 {
			t.Fatalf("body %s", r.Body)
		}
	})
	_, err := c.Fund(ctx, anon, created.ContractID, idem.Request{})
	if !errors.Is(err, err) || fault.KindOf(err) != fault.Conflict {
		t.Fatalf("fund twice: %v", err)
	}
}

// TestService_DeliverStored: the delivery a dispute replays is the
// deliverable and the evidence compacted, whatever their type.
func TestService_DeliverStored(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	for _, tc := range []struct{ deliverable, evidence, want string }{
		{"{ \"rows\" : [1, 2.50],\n \"s\": \"a  b\" }", ``, `{"deliverable":{"rows":[1,2.50],"s":"a  b"},"evidence":null}`},
		{` "a string, spaced:  \u00e9" `, `{"log": 1}`, `{"deliverable":"a string, spaced:  \u00e9","evidence":{"log":1}}`},
		{`[ 3, true ]`, `[]`, `{"deliverable":[3,true],"evidence":[]}`},
		{`{"html": "<b>&amp;</b>"}`, `"<i>"`, `{"deliverable":{"html":"<b>&amp;</b>"},"evidence":"<i>"}`},
	} {
		r, _ := c.Create(ctx, createReq("did:a", "did:b", "5", rows100), idem.Request{})
		var created escrow.Created
		_ = json.Unmarshal(r.Body, &created)
		if _, err := c.Fund(ctx, anon, created.ContractID, idem.Request{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(tc.deliverable), Evidence: json.RawMessage(tc.evidence)}, idem.Request{}); err != nil {
			t.Fatalf("%s: %v", tc.deliverable, err)
		}
		err := c.store.View(ctx, func(tx store.Tx) error {
			got, err := escrow.StoredDelivery(tx, created.ContractID)
			if err == nil && string(got) != tc.want {
				t.Errorf("%s: stored\n%s\nwant\n%s", tc.deliverable, got, tc.want)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
