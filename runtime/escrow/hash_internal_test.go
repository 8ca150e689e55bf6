package escrow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/receipt"
)

// TestContractHash: the hash written from the contract's fields is the
// SHA-256 of the terms marshalled to JSON and canonicalised, the
// definition the package documentation gives.
func TestContractHash(t *testing.T) {
	byText := func(c *Contract) string {
		terms := map[string]any{"contract_id": c.ID, "buyer": c.Buyer, "seller": c.Seller, "price": c.Price,
			"currency": c.Currency, "acceptance": c.Acceptance, "deadline_tick": c.DeadlineTick}
		if !c.DeliverBy.IsZero() {
			terms["deliver_by"] = c.DeliverBy.Format(time.RFC3339)
		}
		if c.ReviewWindow != "" {
			terms["review_window"] = c.ReviewWindow
		}
		canon, err := receipt.Canonical(terms)
		if err != nil {
			return "error: " + err.Error()
		}
		sum := sha256.Sum256(canon)
		return hex.EncodeToString(sum[:])
	}
	base := Contract{ID: "esc-00112233", Buyer: "did:nanda:b", Seller: "did:nanda:s", Price: 10, Currency: "credits",
		Acceptance: json.RawMessage(`{"assertions":[{"op":"gte","path":"rows","value":100}]}`), DeadlineTick: 1000}
	for name, edit := range map[string]func(*Contract){
		"OK": func(*Contract) {},
		"Deadlines": func(c *Contract) {
			c.DeliverBy, c.ReviewWindow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), "72h0m0s"
		},
		"Odd":     func(c *Contract) { c.Buyer, c.Seller = "did:x:<&>\u2028\"é😀", "did:x:\x01\\" },
		"Largest": func(c *Contract) { c.Price, c.DeadlineTick = MaxPrice, MaxPrice },
		"Empty":   func(c *Contract) { c.Acceptance = json.RawMessage(`{}`) },
	} {
		t.Run(name, func(t *testing.T) {
			c := base
			edit(&c)
			got, err := contractHash(&c)
			if err != nil {
				got = "error: " + err.Error()
			}
			if want := byText(&c); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
	c := base
	c.Acceptance = json.RawMessage(`{"value":9007199254740994}`)
	if _, err := contractHash(&c); err == nil {
		t.Error("an integer beyond 2^53 in the criteria: no error")
	}
}

// TestCanonicalMembers_complete: the members written from the fields are
// every field of VerdictSubject and adjudicate.Check. When this fails, a
// field was added: teach CanonicalMembers or appendCheck to write it
// (until then receipts are signed from the JSON text, correct but slower).
func TestCanonicalMembers_complete(t *testing.T) {
	if !verdictMembers {
		t.Errorf("VerdictSubject's JSON names are %s", jsonNames(reflect.TypeFor[VerdictSubject]()))
	}
	if !checkMembers {
		t.Errorf("adjudicate.Check's JSON names are %s", jsonNames(reflect.TypeFor[adjudicate.Check]()))
	}
}

// TestExtraStrings: a string field VerdictSubject gains is written from
// the fields too; a known field renamed or retagged, or a new field of
// another type, sends signing back to the JSON text.
func TestExtraStrings(t *testing.T) {
	const known = "a b,omitempty"
	for name, c := range map[string]struct {
		v    any
		want string
		ok   bool
	}{
		"OK": {struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
		}{}, "[]", true},
		"Actor": {struct {
			A     string `json:"a"`
			B     int    `json:"b,omitempty"`
			Actor string `json:"actor,omitempty"`
			Plain string
		}{}, "[{2 actor true} {3 Plain false}]", true},
		"Retagged": {struct{ A, B string }{}, "[]", false},
		"OmitemptyOff": {struct {
			A string `json:"a"`
			B string `json:"b"`
		}{}, "[]", false},
		"NotString": {struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
			N int    `json:"n"`
		}{}, "[]", false},
		"AsString": {struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
			S string `json:"s,string"`
		}{}, "[]", false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := extraStrings(reflect.TypeOf(c.v), known)
			if ok != c.ok || ok && fmt.Sprint(got) != c.want {
				t.Errorf("got %v %v, want %s %v", got, ok, c.want, c.ok)
			}
		})
	}
}
