package market_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

// x402Env is a market on the x402 rail, settling through the local
// facilitator served on loopback over a store of its own (the chain).
type x402Env struct {
	svc     *market.Service
	ck      *clock
	chain   store.Store
	fac     *x402.Client
	op      *ecdsa.PrivateKey
	squares string
	// down, while set, makes the facilitator answer 503 to everything.
	down *atomic.Bool
}

func newX402Env(tb testing.TB) *x402Env {
	tb.Helper()
	ctx := context.Background()
	open := func() store.Store {
		db, err := storage.Open("", storage.Options{InMemory: true})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		return db
	}
	db, chain := open(), open()
	ck := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f, err := x402.NewFacilitator(x402.FacilitatorConfig{Store: chain, Now: ck.Now})
	if err != nil {
		tb.Fatal(err)
	}
	down := &atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		f.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	op, _ := x402.ParseKey("5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")
	fac := &x402.Client{URL: srv.URL}
	r, err := x402.New(x402.Config{Store: db, Facilitator: fac, Operator: op, Currency: market.Currency, Now: ck.Now})
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(ctx) })
	dir, err := checkers.OpenDir("../../fixtures/checkers")
	if err != nil {
		tb.Fatal(err)
	}
	var n atomic.Uint64
	runner := checkers.NewRunner(sb, firstOf{replays.Checkers(db), dir}, checkers.WithMemo(replays.NewMemo(db)))
	svc, err := market.New(market.Config{Store: db, Signer: keys, Runner: runner, Rail: r, Now: ck.Now,
		NewID: func() string { return fmt.Sprintf("%016x", n.Add(1)) }, Rand: func(int) int { return 0 }})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile("../../fixtures/checkers/squares.wasm")
	if err != nil {
		tb.Fatal(err)
	}
	return &x402Env{svc: svc, ck: ck, chain: chain, fac: fac, op: op, squares: checkers.SHA256(b), down: down}
}

// pay answers a *rail.PaymentRequired the way a wallet does: key signs an
// authorization for exactly what is asked; spoil, when set, changes it
// first (to craft a refused payment).
func pay(tb testing.TB, err error, key *ecdsa.PrivateKey, now time.Time, nonce byte, spoil func(*x402.Requirements, *int64)) market.Pay {
	tb.Helper()
	var pr *rail.PaymentRequired
	if !errors.As(err, &pr) {
		tb.Fatalf("want a payment required, got %v", err)
	}
	req := pr.Required.(x402.Required)
	acc := req.Accepts[0]
	before := now.Unix() + acc.MaxTimeoutSeconds
	if spoil != nil {
		spoil(&acc, &before)
	}
	var n [32]byte
	copy(n[:], crypto.Keccak256([]byte(fmt.Sprint(tb.Name(), nonce))))
	p, perr := x402.NewPayment(key, acc, 0, before, n)
	if perr != nil {
		tb.Fatal(perr)
	}
	p.Accepted = req.Accepts[0]
	h, _ := x402.Encode(p)
	return market.Pay{Proof: h, Resource: req.Resource.URL}
}

// TestX402_Property runs random sequences of publications, purchases paid
// over x402 (some with replayed, expired, underpaid or wrongly addressed
// payments), deposits paid over x402, challenges, operator resolutions,
// and clock moves with ticks, against the real local facilitator on
// loopback. After every step: the market's ledger sums to zero; every
// posting on the rail's account carries a facilitator reference; nothing
// is owed back on the rail; and the operator's balance at the
// facilitator is exactly the money the market holds (so each refund
// reached the chain), while the facilitator's own ledger sums to zero. A
// refused payment moves nothing, anywhere. TestX402_Crash runs such
// sequences with crashes in them.
func TestX402_Property(t *testing.T) {
	for run := range *propRuns {
		seed := *propSeed + uint64(run)
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { x402Run(t, seed, *propOps) })
	}
}

func x402Run(t *testing.T, seed uint64, ops int) {
	ctx := context.Background()
	e := newX402Env(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	// Payers: four keys. Agents: five ids, the last paying with the
	// first's key: an agent id and a payer address are independent.
	var payers []*ecdsa.PrivateKey
	for i := range 4 {
		k, _ := crypto.ToECDSA(crypto.Keccak256([]byte(fmt.Sprint("payer", i))))
		payers = append(payers, k)
		if _, err := e.fac.Fund(ctx, crypto.PubkeyToAddress(k.PublicKey).Hex(), 50_000_000); err != nil {
			t.Fatal(err)
		}
	}
	agents := []string{"b0", "b1", "b2", "s3", "b0-alias"}
	keyOf := func(agent string) *ecdsa.PrivateKey {
		for i, a := range agents[:4] {
			if a == agent {
				return payers[i]
			}
		}
		return payers[0]
	}
	var listings, challenges []string
	var bought [][2]string
	type proof struct {
		listing string
		pay     market.Pay
	}
	var proofs []proof
	nonce := byte(0)
	refused := map[string]int{}
	pick := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return xs[rng.IntN(len(xs))]
	}
	railBalance := func() int64 {
		var b int64
		if err := e.svc.Store().View(ctx, func(tx store.Tx) error {
			var err error
			b, err = ledger.Balance(tx, x402.Account, market.Currency)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	chainOf := func(k *ecdsa.PrivateKey) int64 {
		b, err := e.fac.BalanceOf(ctx, crypto.PubkeyToAddress(k.PublicKey).Hex())
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		fmt.Sscan(b.Balance, &n)
		return n
	}
	check := func(step int, what string, err error) {
		t.Helper()
		if err != nil && fault.KindOf(err) == fault.Internal {
			t.Fatalf("seed %d step %d %s: internal error %v", seed, step, what, err)
		}
		for name, st := range map[string]store.Store{"market": e.svc.Store(), "facilitator": e.chain} {
			sums, serr := ledger.SumsOf(ctx, st)
			if serr != nil {
				t.Fatal(serr)
			}
			for c, v := range sums {
				if v != 0 {
					t.Fatalf("seed %d step %d %s: the %s ledger sums to %d %s", seed, step, what, name, v, c)
				}
			}
		}
		err = e.svc.Store().View(ctx, func(tx store.Tx) error {
			acct, err := ledger.Get(tx, x402.Account)
			if err != nil {
				return err
			}
			for _, leg := range acct.Entries {
				if !strings.Contains(leg.Memo, x402.RefPrefix+"0x") {
					t.Fatalf("seed %d step %d %s: rail posting %s has no facilitator reference: %q", seed, step, what, leg.Transfer, leg.Memo)
				}
			}
			return tx.Scan("market/payback/", false, func(k string, _ []byte) error {
				t.Fatalf("seed %d step %d %s: %s still owed on the rail", seed, step, what, k)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if held, inMarket := chainOf(e.op), -railBalance(); held != inMarket {
			t.Fatalf("seed %d step %d %s: the operator holds %d at the facilitator and the market %d", seed, step, what, held, inMarket)
		}
	}
	chainTotal := func() (n int64) {
		for _, k := range payers {
			n += chainOf(k)
		}
		return n
	}
	for step := range ops {
		now := e.ck.Now()
		switch op := rng.IntN(20); {
		case op <= 1 || len(listings) < 2: // publish: level 1 with the squares checker, or level 2 with a bond
			seller := pick(agents)
			req := market.PublishRequest{Agent: seller, Title: "t", ProblemStatement: fmt.Sprint("problem ", step), Artifact: raw(table),
				ArtifactType: "dataset", PriceUSD: raw(fmt.Sprintf(`"%d.%02d"`, rng.IntN(5), rng.IntN(100)))}
			if rng.IntN(2) == 0 {
				req.Checker = &market.CheckerSpec{SHA256: e.squares}
			} else {
				req.VerificationLevel = 2
			}
			r, err := e.svc.Publish(ctx, anon, req, idem.Request{})
			check(step, "publish", err)
			if err == nil {
				var p market.Published
				json.Unmarshal(r.Body, &p)
				listings = append(listings, p.Listing.ListingID)
			}
		case op <= 10: // purchase, paid over x402 when the wallet cannot cover it
			buyer, listing := pick(agents), pick(listings)
			for try := 0; try < 5 && slices.Contains(bought, [2]string{listing, buyer}); try++ {
				buyer, listing = pick(agents), pick(listings)
			}
			req := market.PurchaseRequest{Agent: buyer}
			_, err := e.svc.Buy(ctx, anon, listing, req, idem.Request{})
			if !errors.As(err, new(*rail.PaymentRequired)) {
				check(step, "buy without payment", err)
				if err == nil {
					bought = append(bought, [2]string{listing, buyer})
				}
				continue
			}
			before, inMarket := chainTotal(), railBalance()
			nonce++
			var spoil func(*x402.Requirements, *int64)
			want := ""
			switch rng.IntN(8) {
			case 0:
				spoil, want = func(_ *x402.Requirements, b *int64) { *b = now.Unix() }, x402.CodePaymentExpired
			case 1:
				spoil, want = func(r *x402.Requirements, _ *int64) { r.Amount = "1" }, x402.CodePaymentUnderpaid
			case 2:
				spoil, want = func(r *x402.Requirements, _ *int64) {
					r.PayTo = crypto.PubkeyToAddress(payers[3].PublicKey).Hex()
				}, x402.CodeWrongRecipient
			case 3:
				// The same signed payment again, for the same listing
				// (another agent, or after the sale was refunded).
				if len(proofs) > 0 {
					p := proofs[rng.IntN(len(proofs))]
					listing, req.Pay, want = p.listing, p.pay, x402.CodePaymentReplayed
				}
			}
			if req.Pay.Proof == "" {
				req.Pay = pay(t, err, keyOf(buyer), now, nonce, spoil)
			}
			_, err = e.svc.Buy(ctx, anon, listing, req, idem.Request{})
			code := fault.CodeOf(err)
			var pr *rail.PaymentRequired
			if errors.As(err, &pr) {
				code = fault.CodeOf(pr.Err)
			}
			if want == x402.CodePaymentReplayed && (err == nil || code == market.ECodeAlreadyPurchased || code == market.ECodeOwnListing || code == market.ECodeListingNotActive) {
				// Refused (or paid from the wallet) before the payment
				// was looked at.
				want = ""
			}
			if want == x402.CodePaymentReplayed && code == x402.CodePaymentExpired {
				want = code // an old payment may have expired first: refused all the same
			}
			if want != "" {
				if code != want {
					t.Fatalf("seed %d step %d: a crafted payment answered %v, want %s", seed, step, err, want)
				}
				refused[want]++
				if chainTotal() != before || railBalance() != inMarket {
					t.Fatalf("seed %d step %d: a refused payment (%s) moved money", seed, step, want)
				}
			}
			check(step, "buy with payment", err)
			if err == nil {
				bought = append(bought, [2]string{listing, buyer})
				proofs = append(proofs, proof{listing, req.Pay})
			}
		case op == 11: // a deposit paid over x402
			agent := pick(agents)
			amt := market.AmountRequest{AmountUSD: raw(fmt.Sprintf(`"%d.%02d"`, rng.IntN(3), 1+rng.IntN(99)))}
			_, err := e.svc.Deposit(ctx, anon, agent, amt, idem.Request{})
			if errors.As(err, new(*rail.PaymentRequired)) {
				nonce++
				amt.Pay = pay(t, err, keyOf(agent), now, nonce, nil)
				_, err = e.svc.Deposit(ctx, anon, agent, amt, idem.Request{})
			}
			check(step, "deposit", err)
		case op <= 14: // challenge a purchase: "4" fails the squares checker, "3" passes it
			if len(bought) == 0 {
				continue
			}
			b := bought[rng.IntN(len(bought))]
			r, err := e.svc.Challenge(ctx, anon, b[0], market.ChallengeRequest{Agent: b[1], Evidence: raw(pick([]string{`"4"`, `"3"`}))}, idem.Request{})
			check(step, "challenge", err)
			if err == nil {
				var out struct{ Challenge market.Challenge }
				json.Unmarshal(r.Body, &out)
				if out.Challenge.Status == market.ChallengeOpen {
					challenges = append(challenges, out.Challenge.ID)
				}
			}
		case op <= 16: // the operator resolves
			_, err := e.svc.Resolve(ctx, principal.Operator(), pick(challenges), market.ResolveRequest{Verdict: pick([]string{"uphold", "reject"})}, idem.Request{})
			check(step, "resolve", err)
		default: // time passes; windows close and settle
			e.ck.Add(time.Duration(rng.IntN(90)) * time.Minute)
			_, err := e.svc.Tick(ctx, market.TickRequest{})
			check(step, "tick", err)
		}
	}
	// Every refund of a purchase paid over x402 names the rail's refund.
	var paid, refunded int
	err := e.svc.Store().View(ctx, func(tx store.Tx) error {
		return tx.Scan("market/purchase/", false, func(_ string, v []byte) error {
			var p market.Purchase
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			if p.Rail == "x402" && !x402.IsRef(p.PaymentRef) {
				t.Fatalf("purchase %s paid over x402 has payment_ref %q", p.ID, p.PaymentRef)
			}
			if p.Rail == "x402" && p.Status == market.PurchaseRefunded && !x402.IsRef(p.RefundRef) {
				t.Fatalf("purchase %s refunded over x402 has no refund reference", p.ID)
			}
			if p.Rail == "x402" {
				paid++
				if p.Status == market.PurchaseRefunded {
					refunded++
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d purchases paid over x402, %d refunded on the rail; refused payments %v", paid, refunded, refused)
}

// TestX402_PayBackRetry: a refund the facilitator cannot take now stays
// owed, with the ledger whole; a tick pays it once the facilitator is
// back, and never twice.
func TestX402_PayBackRetry(t *testing.T) {
	ctx := context.Background()
	e := newX402Env(t)
	buyer, _ := crypto.ToECDSA(crypto.Keccak256([]byte("retry buyer")))
	addr := crypto.PubkeyToAddress(buyer.PublicKey).Hex()
	if _, err := e.fac.Fund(ctx, addr, 10_000_000); err != nil {
		t.Fatal(err)
	}
	chain := func() string { b, _ := e.fac.BalanceOf(ctx, addr); return b.Balance }
	r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "squares", ProblemStatement: "squares", Artifact: raw(table),
		ArtifactType: "dataset", PriceUSD: raw("2.50"), Checker: &market.CheckerSpec{SHA256: e.squares}}, idem.Request{}))(t)
	var pub market.Published
	json.Unmarshal(r.Body, &pub)
	id := pub.Listing.ListingID
	_, err := e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{})
	r, err = e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer", Pay: pay(t, err, buyer, e.ck.Now(), 1, nil)}, idem.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var b market.Bought
	json.Unmarshal(r.Body, &b)
	if b.Purchase.Payer != addr || chain() != "7425000" {
		t.Fatalf("paid by %s, chain balance %s", b.Purchase.Payer, chain())
	}
	e.down.Store(true)
	must(e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"4"`)}, idem.Request{}))(t)
	p := must(e.svc.PurchaseOf(ctx, b.Purchase.ID))(t)
	if p.Status != market.PurchaseRefunded || p.RefundRef != "" {
		t.Fatalf("with the facilitator down: status %s refund_ref %q", p.Status, p.RefundRef)
	}
	if _, err := e.svc.Tick(ctx, market.TickRequest{}); fault.CodeOf(err) != market.ECodeRailFailed {
		t.Fatalf("a tick with the facilitator down: %v, want rail_failed", err)
	}
	e.down.Store(false)
	if chain() != "7425000" {
		t.Fatalf("the buyer holds %s before the refund was paid back", chain())
	}
	tk := must(e.svc.Tick(ctx, market.TickRequest{}))(t)
	p = must(e.svc.PurchaseOf(ctx, b.Purchase.ID))(t)
	if tk.PaidBack != 1 || !x402.IsRef(p.RefundRef) || chain() != "10000000" {
		t.Fatalf("after the facilitator came back: paid back %d, refund_ref %q, chain %s", tk.PaidBack, p.RefundRef, chain())
	}
	if tk := must(e.svc.Tick(ctx, market.TickRequest{}))(t); tk.PaidBack != 0 || chain() != "10000000" {
		t.Fatalf("a second tick paid back %d; chain %s", tk.PaidBack, chain())
	}
	sums, _ := ledger.SumsOf(ctx, e.svc.Store())
	for c, v := range sums {
		if v != 0 {
			t.Fatalf("ledger sums to %d %s", v, c)
		}
	}
}
