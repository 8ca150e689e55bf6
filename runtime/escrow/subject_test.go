package escrow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// plainSubject is a VerdictSubject without CanonicalMembers: the receipt
// package marshals it and canonicalises the JSON text, as it does any
// subject.
type plainSubject escrow.VerdictSubject

// TestVerdictSubject_CanonicalMembers: a verdict signed from its members
// is the very receipt, byte for byte, that signing its JSON text gives,
// whatever its strings hold.
func TestVerdictSubject_CanonicalMembers(t *testing.T) {
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(),
		Now: func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	base := escrow.VerdictSubject{ContractID: "esc-1d32e6667c804456", ContractHash: "ab12", EvidenceHash: "cd34",
		Buyer: "did:nanda:buyer", Seller: "did:nanda:seller", Price: 50, Currency: "credits",
		Verdict: "refund", Tier: "tier0", Payout: map[string]int64{"did:nanda:buyer": 50},
		Checks: []adjudicate.Check{{Kind: "assertion", Spec: json.RawMessage(`{"path":"rows","op":"gte","value":1e2,"ratio":0.000001}`), Detail: "rows gte 100 -> False"}},
		Reason: "only 40 of 100 rows", CriteriaSHA256: "ef56", DecidedAt: "2026-05-01T12:00:00.123Z"}
	odd := "quote \" backslash \\ controls \x00\x01\b\t\n\f\r\x1f\x7f html <&> seps \u2028\u2029 bad \xff\xfe utf8 «schön» 😀 \uffff"
	cases := map[string]func(v *escrow.VerdictSubject){
		"OK": func(*escrow.VerdictSubject) {},
		"Accept": func(v *escrow.VerdictSubject) {
			v.Checks, v.EvidenceHash, v.Reason, v.CriteriaSHA256 = []adjudicate.Check{}, "", "", ""
		},
		"Escalated": func(v *escrow.VerdictSubject) { v.Payout = map[string]int64{} },
		"NilParts":  func(v *escrow.VerdictSubject) { v.Checks, v.Payout = nil, nil },
		"OddStrings": func(v *escrow.VerdictSubject) {
			// Every string field, those added since this test too.
			rv := reflect.ValueOf(v).Elem()
			for i := range rv.NumField() {
				if rv.Field(i).Kind() == reflect.String {
					rv.Field(i).SetString(odd)
				}
			}
		},
		"OddPayout": func(v *escrow.VerdictSubject) {
			v.Payout = map[string]int64{odd: 1, "\uffff": 2, "😀": 3, "z": 4, "<a>": 5, "": 6}
		},
		"LargestPrice": func(v *escrow.VerdictSubject) { v.Price = 1 << 53; v.Payout = map[string]int64{"did:x": -(1 << 53)} },
		"Checks": func(v *escrow.VerdictSubject) {
			v.Checks = append(v.Checks,
				adjudicate.Check{Kind: "assertion", Spec: json.RawMessage(` { "path" : "a\u003cb" , "value": [1.50, -0, 1E3, "\u00e9\/"] } `), Passed: true, Skipped: true, Detail: odd},
				adjudicate.Check{Kind: "schema", Detail: ""},
				adjudicate.Check{Kind: "semantic", Spec: json.RawMessage(`{"semantic":true}`), Jurors: []adjudicate.JurorVote{{Model: "m", Vote: "pass", Rationale: odd}}})
		},
		"CheckOutcome": func(v *escrow.VerdictSubject) {
			v.Checks = append(v.Checks, adjudicate.Check{Kind: "checker", Spec: json.RawMessage(`{"sha256":"00"}`), Passed: true, Detail: odd,
				Outcome: &adjudicate.CheckerOutcome{ExitCode: 3}})
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			v := base
			v.Payout = map[string]int64{"did:nanda:buyer": 50}
			edit(&v)
			fast, err := keys.Sign(receipt.KindVerdict, "7d6a250e86c842be", v)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := keys.Sign(receipt.KindVerdict, "7d6a250e86c842be", plainSubject(v))
			if err != nil {
				t.Fatal(err)
			}
			fb, _ := receipt.Marshal(fast)
			sb, _ := receipt.Marshal(slow)
			if !bytes.Equal(fb, sb) {
				t.Errorf("from the members:\n%s\nfrom the JSON text:\n%s", fb, sb)
			}
		})
	}
	t.Run("ErrUnsafeInteger", func(t *testing.T) {
		v := base
		v.Price = 1<<53 + 1
		if _, err := keys.Sign(receipt.KindVerdict, "x", v); !errors.Is(err, receipt.ErrUnsafeInteger) {
			t.Errorf("got %v", err)
		}
		if _, err := keys.Sign(receipt.KindVerdict, "x", plainSubject(v)); !errors.Is(err, receipt.ErrUnsafeInteger) {
			t.Errorf("the JSON path: got %v", err)
		}
	})
}

// TestService_ContractCache: a contract that changed under its key behind
// the Service's back (another node, a restore) is read as stored, never
// as the Service last decoded it.
func TestService_ContractCache(t *testing.T) {
	ctx := context.Background()
	c := mustCourt(t)
	r, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "10", rows100), idem.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var created escrow.Created
	if err := json.Unmarshal(r.Body, &created); err != nil {
		t.Fatal(err)
	}
	err = c.store.Update(ctx, func(tx store.Tx) error {
		return escrow.ChangeStored(tx, created.ContractID, func(ct *escrow.Contract) { ct.Price = 11 })
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, created.ContractID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Price != 11 {
		t.Errorf("price %d, want the stored 11", got.Price)
	}
	if _, err := c.Fund(ctx, anon, created.ContractID, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	// A copy: what a caller does to it is not what the next read sees.
	got, _ = c.Get(ctx, created.ContractID)
	got.Receipts = append(got.Receipts, "x")
	if again, _ := c.Get(ctx, created.ContractID); got.Status != escrow.StatusFunded || len(again.Receipts) != 0 {
		t.Errorf("after fund: %+v, then %+v", got, again)
	}
}

// BenchmarkVerdictSubject_Sign: a dispute's verdict signed from its
// members, against the same subject signed from its JSON text.
func BenchmarkVerdictSubject_Sign(b *testing.B) {
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: b.TempDir(),
		Now: func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		b.Fatal(err)
	}
	v := escrow.VerdictSubject{ContractID: "esc-1d32e6667c804456", ContractHash: "9f2b6c1e8d7a4f3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b",
		EvidenceHash: "1f2b6c1e8d7a4f3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b", Buyer: "did:bench:buyer-3", Seller: "did:bench:seller-44",
		Price: 55, Currency: "credits", Verdict: "release", Tier: "tier0", Payout: map[string]int64{"did:bench:seller-44": 55},
		Checks: []adjudicate.Check{
			{Kind: "schema", Spec: json.RawMessage(`{"required":["rows"],"type":"object"}`), Passed: true, Detail: "schema ok"},
			{Kind: "assertion", Spec: json.RawMessage(`{"op":"gte","path":"rows","value":3}`), Passed: true, Detail: "rows gte 3 -> True"},
			{Kind: "assertion", Spec: json.RawMessage(`{"op":"lte","path":"rows","value":1000}`), Passed: true, Detail: "rows lte 1000 -> True"},
		},
		Reason: "bench", CriteriaSHA256: "2f2b6c1e8d7a4f3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b", DecidedAt: "2026-05-01T12:00:00.123Z"}
	for name, subject := range map[string]any{"members": v, "text": plainSubject(v)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := keys.Sign(receipt.KindVerdict, "7d6a250e86c842be", subject); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
