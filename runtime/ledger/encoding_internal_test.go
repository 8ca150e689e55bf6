package ledger

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLegEncoding: a leg reads back as it was posted, from its key and
// its bytes, and a leg stored as JSON before reads as it was.
func TestLegEncoding(t *testing.T) {
	for _, leg := range []Leg{
		{Transfer: "esc-1.fund", Account: "hold:escrow:esc-1", Counter: "rail:dev", Amount: 5, Currency: "credits",
			Memo: "fund esc-1 (dev dev:esc-1.fund.0)", At: time.Unix(1, 5).UTC()},
		{Transfer: "t", Account: "agent:did:x/y z%", Counter: "", Amount: -MaxAmount, Currency: "usd-micro", At: time.Unix(1<<33, 7).UTC()},
	} {
		b, err := encodeLeg(leg)
		if err != nil {
			t.Fatal(err)
		}
		key := legKey(leg, 1)
		if got, err := decodeLeg(key, b); err != nil || got != leg {
			t.Errorf("decoded %+v, %v; want %+v", got, err, leg)
		}
		old, _ := json.Marshal(leg)
		if got, err := decodeLeg(key, old); err != nil || got != leg {
			t.Errorf("decoded from JSON %+v, %v; want %+v", got, err, leg)
		}
	}
}

// TestShardOf: a transfer's counters are where hash/fnv's FNV-1a put
// them before it was written out by hand.
func TestShardOf(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		b := make([]byte, r.IntN(80))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		id := string(b)
		if i == 0 {
			id = "esc-0123456789abcdef.fund"
		}
		h := fnv.New32a()
		h.Write([]byte(id))
		if got, want := shardOf(id), h.Sum32()%Shards; got != want {
			t.Fatalf("shardOf(%q) = %d, want %d", id, got, want)
		}
	}
}
