package receipt

import (
	"encoding/json"
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "update golden files in testdata")

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time          { return c.t }
func (c *clock) Advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)} }
func seeded(n byte) *rand.ChaCha8        { return rand.NewChaCha8([32]byte{n}) }

// mustKeyring opens a keyring in a fresh directory with a seeded source.
func mustKeyring(tb testing.TB, c *clock) *Keyring {
	tb.Helper()
	return mustKeyringSeed(tb, c, 1)
}

func mustKeyringSeed(tb testing.TB, c *clock, seed byte) *Keyring {
	tb.Helper()
	k, err := OpenKeyring(KeyringConfig{Dir: tb.TempDir(), Now: c.Now, Rand: seeded(seed)})
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// verdict is a subject shaped like the escrow seed's verdict.
type verdict struct {
	ContractID string         `json:"contract_id"`
	Buyer      string         `json:"buyer"`
	Seller     string         `json:"seller"`
	Verdict    string         `json:"verdict"`
	Tier       string         `json:"tier"`
	Checks     []check        `json:"checks"`
	Payout     map[string]int `json:"payout"`
	Reason     string         `json:"reason"`
}

type check struct {
	Kind   string         `json:"kind"`
	Spec   map[string]any `json:"spec"`
	Passed bool           `json:"passed"`
	Detail string         `json:"detail"`
}

func sampleVerdict() verdict {
	return verdict{
		ContractID: "lex-1d32e6667c804456",
		Buyer:      "did:nanda:doc-buyer",
		Seller:     "did:nanda:doc-seller",
		Verdict:    "refund",
		Tier:       "tier0",
		Checks: []check{{
			Kind:   "assertion",
			Spec:   map[string]any{"path": "rows", "op": "gte", "value": 100, "ratio": 0.000001},
			Passed: false,
			Detail: "rows gte 100 -> False",
		}},
		Payout: map[string]int{"did:nanda:doc-buyer": 50},
		Reason: "only 40 of 100 rows — «schön» 😀 <&>",
	}
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
