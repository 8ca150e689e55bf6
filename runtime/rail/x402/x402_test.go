package x402_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
	"github.com/assayhq/assay/storage"
)

// Fixed test keys (never funded anywhere real).
const (
	buyerHex    = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
	operatorHex = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a"
	strangerHex = "7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func key(tb testing.TB, h string) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := x402.ParseKey(h)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func addr(k *ecdsa.PrivateKey) string { return crypto.PubkeyToAddress(k.PublicKey).Hex() }

func requirements(payTo string, amount string) x402.Requirements {
	return x402.Requirements{Scheme: x402.SchemeExact, Network: x402.BaseSepolia, Amount: amount, Asset: x402.USDCBaseSepolia,
		PayTo: payTo, MaxTimeoutSeconds: 300, Extra: map[string]any{"name": "USDC", "version": "2"}}
}

func nonce(b byte) [32]byte {
	var n [32]byte
	n[0], n[31] = 0xa5, b
	return n
}

func TestCheck(t *testing.T) {
	buyer, op, stranger := key(t, buyerHex), key(t, operatorHex), key(t, strangerHex)
	want := requirements(addr(op), "1030000")
	pay := func(k *ecdsa.PrivateKey, r x402.Requirements, after, before int64) x402.Payload {
		p, err := x402.NewPayment(k, r, after, before, nonce(1))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := pay(buyer, want, 0, now.Unix()+300)
	forged := ok
	forged.Payload.Authorization.From = addr(stranger) // signed by the buyer, claims the stranger
	tampered := ok
	tampered.Payload.Authorization.Value = "1" // the signature no longer covers it
	wrongAsset := ok
	wrongAsset.Accepted.Network = x402.Base
	for _, c := range []struct {
		name string
		p    x402.Payload
		code string
	}{
		{"OK", ok, ""},
		{"ErrExpired", pay(buyer, want, 0, now.Unix()), x402.CodePaymentExpired},
		{"ErrNotYetValid", pay(buyer, want, now.Unix()+10, now.Unix()+300), x402.CodePaymentNotYetValid},
		{"ErrUnderpaid", pay(buyer, requirements(addr(op), "1029999"), 0, now.Unix()+300), x402.CodePaymentUnderpaid},
		{"ErrOverpaid", pay(buyer, requirements(addr(op), "1030001"), 0, now.Unix()+300), x402.CodePaymentOverpaid},
		{"ErrWrongRecipient", pay(buyer, requirements(addr(stranger), "1030000"), 0, now.Unix()+300), x402.CodeWrongRecipient},
		{"ErrForged", forged, x402.CodeSignatureInvalid},
		{"ErrTampered", tampered, x402.CodePaymentUnderpaid},
		{"ErrWrongNetwork", wrongAsset, x402.CodeWrongAsset},
	} {
		t.Run(c.name, func(t *testing.T) {
			payer, err := x402.Check(c.p, want, now)
			if fault.CodeOf(err) != c.code && !(c.code == "" && err == nil) {
				t.Fatalf("err %v, want %q", err, c.code)
			}
			if c.code == "" && payer.Hex() != addr(buyer) {
				t.Fatalf("payer %s, want %s", payer.Hex(), addr(buyer))
			}
		})
	}
	t.Run("ErrTamperedSameValue", func(t *testing.T) {
		p := ok
		p.Payload.Authorization.ValidBefore = "99999999999" // longer than signed
		if _, err := x402.Check(p, want, now); fault.CodeOf(err) != x402.CodeSignatureInvalid {
			t.Fatalf("err %v, want %s", err, x402.CodeSignatureInvalid)
		}
	})
}

// TestDecodePayload: a header that is not base64 of a v2 payload is
// invalid_payment.
func TestDecodePayload(t *testing.T) {
	p, _ := x402.NewPayment(key(t, buyerHex), requirements(addr(key(t, operatorHex)), "5"), 0, now.Unix()+60, nonce(2))
	h, _ := x402.Encode(p)
	if _, err := x402.DecodePayload(h); err != nil {
		t.Fatalf("OK: %v", err)
	}
	p.X402Version = 1
	v1, _ := x402.Encode(p)
	for name, h := range map[string]string{"ErrNotBase64": "%%%", "ErrNotJSON": "bm90IGpzb24", "ErrV1": v1, "ErrHuge": strings.Repeat("A", x402.MaxHeaderBytes+1)} {
		if _, err := x402.DecodePayload(h); fault.CodeOf(err) != x402.CodeInvalidPayment {
			t.Errorf("%s: err %v, want invalid_payment", name, err)
		}
	}
}

type world struct {
	rail   *x402.Rail
	client *x402.Client
	buyer  *ecdsa.PrivateKey
	op     *ecdsa.PrivateKey
}

// newWorld runs the local facilitator on a loopback HTTP server over its
// own store and a rail over another (the market's), both badger.
func newWorld(tb testing.TB) *world {
	tb.Helper()
	chain, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { chain.Close() })
	f, err := x402.NewFacilitator(x402.FacilitatorConfig{Store: chain, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	w := &world{client: &x402.Client{URL: srv.URL}, buyer: key(tb, buyerHex), op: key(tb, operatorHex)}
	w.rail, err = x402.New(x402.Config{Store: db, Facilitator: w.client, Operator: w.op, Currency: "usd-micro", Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.client.Fund(context.Background(), addr(w.buyer), 5_000_000); err != nil {
		tb.Fatal(err)
	}
	return w
}

func (w *world) balance(tb testing.TB, k *ecdsa.PrivateKey) string {
	tb.Helper()
	b, err := w.client.BalanceOf(context.Background(), addr(k))
	if err != nil {
		tb.Fatal(err)
	}
	return b.Balance
}

// required asks the rail what to pay for p.
func required(tb testing.TB, r *x402.Rail, p rail.Payment) x402.Required {
	tb.Helper()
	var pr *rail.PaymentRequired
	if !errors.As(r.Ask(p), &pr) {
		tb.Fatal("Ask did not answer *rail.PaymentRequired")
	}
	return pr.Required.(x402.Required)
}

func TestRail_CollectRefund(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	p := rail.Payment{ID: "pur_1.in", Agent: "buyer-agent", Amount: 1_030_000, Currency: "usd-micro", Resource: "http://assay/market/listings/x/purchase"}
	if _, err := w.rail.Collect(ctx, p); !errors.As(err, new(*rail.PaymentRequired)) {
		t.Fatalf("no proof: %v, want payment required", err)
	}
	req := required(t, w.rail, p)
	if len(req.Accepts) != 1 || req.Accepts[0].PayTo != addr(w.op) || req.Accepts[0].Amount != "1030000" {
		t.Fatalf("requirements %+v", req)
	}
	pay, err := x402.NewPayment(w.buyer, req.Accepts[0], 0, now.Unix()+60, nonce(9))
	if err != nil {
		t.Fatal(err)
	}
	p.Proof, _ = x402.Encode(pay)
	ref, err := w.rail.Collect(ctx, p)
	if err != nil || !x402.IsRef(ref) {
		t.Fatalf("collect: %q %v", ref, err)
	}
	if b := w.balance(t, w.buyer); b != "3970000" {
		t.Fatalf("buyer holds %s after paying, want 3970000", b)
	}
	st, err := w.rail.Settled(ctx, ref)
	if err != nil || st.Payer != addr(w.buyer) || x402.RefPrefix+st.Transaction != ref {
		t.Fatalf("settled %+v %v", st, err)
	}
	t.Run("ErrReplayed", func(t *testing.T) {
		_, err := w.rail.Collect(ctx, rail.Payment{ID: "pur_2.in", Agent: "other", Amount: 1_030_000, Currency: "usd-micro", Proof: p.Proof})
		if fault.CodeOf(err) != x402.CodePaymentReplayed || fault.KindOf(err) != fault.Conflict {
			t.Fatalf("err %v, want payment_replayed", err)
		}
		if b := w.balance(t, w.buyer); b != "3970000" {
			t.Fatalf("a replay moved money: buyer holds %s", b)
		}
	})
	t.Run("ErrInsufficientFunds", func(t *testing.T) {
		big := rail.Payment{ID: "pur_3.in", Agent: "buyer-agent", Amount: 9_000_000, Currency: "usd-micro"}
		pay, _ := x402.NewPayment(w.buyer, required(t, w.rail, big).Accepts[0], 0, now.Unix()+60, nonce(10))
		big.Proof, _ = x402.Encode(pay)
		var pr *rail.PaymentRequired
		if _, err := w.rail.Collect(ctx, big); !errors.As(err, &pr) || fault.CodeOf(pr.Err) != x402.CodePaymentRefused {
			t.Fatalf("err %v, want payment required with payment_refused", err)
		}
		// Refused: the nonce is free again, for when the payer is funded.
		if _, err := w.client.Fund(ctx, addr(w.buyer), 9_000_000); err != nil {
			t.Fatal(err)
		}
		if _, err := w.rail.Collect(ctx, big); err != nil {
			t.Fatalf("the same payment once funded: %v", err)
		}
	})
	back, err := w.rail.Refund(ctx, ref, 1_030_000)
	if err != nil || !x402.IsRef(back) || back == ref {
		t.Fatalf("refund %q %v", back, err)
	}
	again, err := w.rail.Refund(ctx, ref, 1_030_000)
	if err != nil || again != back {
		t.Fatalf("a retried refund answered %q %v, want %q", again, err, back)
	}
	if b := w.balance(t, w.buyer); b != "5000000" {
		t.Fatalf("buyer holds %s after the refund, want 5000000", b)
	}
	if _, err := w.rail.Refund(ctx, ref, 2_000_000); err == nil {
		t.Fatal("a refund above the payment was sent")
	}
	if _, err := w.rail.Refund(ctx, "x402:0xnope", 1); err == nil {
		t.Fatal("a refund of an unknown payment was sent")
	}
	// Payout goes to the address the agent paid from.
	out, err := w.rail.Payout(ctx, rail.Payment{ID: "wd-1", Agent: "buyer-agent", Amount: 30_000, Currency: "usd-micro"})
	if err != nil || !x402.IsRef(out) {
		t.Fatalf("payout %q %v", out, err)
	}
	if _, err := w.rail.Payout(ctx, rail.Payment{ID: "wd-2", Agent: "never-paid", Amount: 1, Currency: "usd-micro"}); err == nil {
		t.Fatal("a payout to an agent with no known address was sent")
	}
}

// TestFacilitator_ledger: the facilitator's balances are a ledger that
// sums to zero, and a settled authorization settles once.
func TestFacilitator_ledger(t *testing.T) {
	ctx := context.Background()
	chain, _ := storage.Open("", storage.Options{InMemory: true})
	defer chain.Close()
	f, err := x402.NewFacilitator(x402.FacilitatorConfig{Store: chain, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	buyer, op := key(t, buyerHex), key(t, operatorHex)
	if _, err := f.Fund(ctx, addr(buyer), "100"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fund(ctx, addr(buyer), "-1"); fault.CodeOf(err) != "invalid_amount" {
		t.Fatalf("fund -1: %v", err)
	}
	req := requirements(addr(op), "60")
	pay, _ := x402.NewPayment(buyer, req, 0, now.Unix()+60, nonce(3))
	fr := x402.FacilitatorRequest{PaymentPayload: pay, PaymentRequirements: req}
	if v := f.Verify(ctx, fr); !v.IsValid || v.Payer != addr(buyer) {
		t.Fatalf("verify %+v", v)
	}
	s1, s2 := f.Settle(ctx, fr), f.Settle(ctx, fr)
	if !s1.Success || s2.Transaction != s1.Transaction {
		t.Fatalf("settle twice: %+v %+v", s1, s2)
	}
	other, _ := x402.NewPayment(buyer, req, 0, now.Unix()+61, nonce(3)) // the same nonce, another authorization
	if s := f.Settle(ctx, x402.FacilitatorRequest{PaymentPayload: other, PaymentRequirements: req}); s.Success || s.ErrorReason != x402.ReasonNonceUsed {
		t.Fatalf("a reused nonce settled: %+v", s)
	}
	if v := f.Verify(ctx, x402.FacilitatorRequest{PaymentPayload: pay, PaymentRequirements: requirements(addr(op), "61")}); v.IsValid {
		t.Fatal("verified against other requirements")
	}
	b, _ := f.BalanceOf(ctx, addr(buyer))
	if b.Balance != "40" {
		t.Fatalf("buyer holds %s, want 40", b.Balance)
	}
	sums, _ := ledger.SumsOf(ctx, chain)
	for c, v := range sums {
		if v != 0 {
			t.Fatalf("the facilitator's ledger sums to %d %s", v, c)
		}
	}
}

// TestRail_CollectHammer: one signed payment sent by many requests at
// once is collected once: every request answers its one reference, or
// payment_pending while another settles it; the same payment sent for
// another purpose is refused as a replay.
func TestRail_CollectHammer(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	p := rail.Payment{ID: "dep-1", Agent: "a", Amount: 700_000, Currency: "usd-micro"}
	pay, _ := x402.NewPayment(w.buyer, required(t, w.rail, p).Accepts[0], 0, now.Unix()+60, nonce(42))
	p.Proof, _ = x402.Encode(pay)
	const n = 16
	type answer struct {
		ref string
		err error
	}
	answers := make(chan answer, n)
	for range n {
		go func() { ref, err := w.rail.Collect(ctx, p); answers <- answer{ref, err} }()
	}
	refs := map[string]int{}
	for range n {
		switch a := <-answers; {
		case a.err == nil:
			refs[a.ref]++
		case fault.CodeOf(a.err) != rail.ECodePaymentPending:
			t.Errorf("err %v, want the reference or payment_pending", a.err)
		}
	}
	if len(refs) != 1 {
		t.Fatalf("the requests answered references %v, want one", refs)
	}
	if b := w.balance(t, w.buyer); b != "4300000" {
		t.Fatalf("the buyer holds %s, want 4300000: paid once", b)
	}
	other := p
	other.ID = "dep-2"
	if _, err := w.rail.Collect(ctx, other); fault.CodeOf(err) != x402.CodePaymentReplayed {
		t.Fatalf("the payment sent for another purpose: %v, want payment_replayed", err)
	}
}

// TestSign_viemVector: the digest and signature of one authorization, as
// viem 2.57.20's hashTypedData and signTypedData computed them (with the
// buyer's key); Hash, Sign and Recover agree byte for byte.
func TestSign_viemVector(t *testing.T) {
	const (
		digest    = "0xefbd98678c9f14127477f5545d685ccf6ee07b41254df1361f37879057e8f05b"
		signature = "0x6b32ac8024631116ac3a7f09a48e3a2cbbd97fb8fdf1f0f0526981105958923d22c3a087a2963c936a91fa248a9fbe2f731c0aa9f3ec5233936c71dda309aa121b"
	)
	buyer := key(t, buyerHex)
	d, err := x402.DomainOf(requirements("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "515000"))
	if err != nil {
		t.Fatal(err)
	}
	a := x402.Authorization{From: addr(buyer), To: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Value: "515000", ValidAfter: "0",
		ValidBefore: "1777644000", Nonce: "0xa500000000000000000000000000000000000000000000000000000000000007"}
	if addr(buyer) != "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" {
		t.Fatalf("buyer address %s", addr(buyer))
	}
	h, err := x402.Hash(d, a)
	if err != nil || fmt.Sprintf("0x%x", h) != digest {
		t.Fatalf("digest 0x%x %v, want %s", h, err, digest)
	}
	sig, err := x402.Sign(buyer, d, a)
	if err != nil || sig != signature {
		t.Fatalf("signature %s %v, want viem's %s", sig, err, signature)
	}
	if who, err := x402.Recover(d, a, signature); err != nil || who.Hex() != addr(buyer) {
		t.Fatalf("recovered %s %v", who.Hex(), err)
	}
}
