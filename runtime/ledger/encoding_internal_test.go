package ledger

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/store/jsonw/jsonwtest"
)

// TestLegAppendJSON: legs are stored in the bytes encoding/json writes.
func TestLegAppendJSON(t *testing.T) {
	v := jsonwtest.Values{R: rand.New(rand.NewPCG(5, 6))}
	for range 5000 {
		jsonwtest.Check(t, Leg{Transfer: v.String(), Account: v.String(), Counter: v.String(), Amount: v.Int(),
			Currency: v.String(), Memo: v.String(), At: v.Time()})
	}
	leg := Leg{Transfer: "esc-1.fund", Account: "hold:escrow:esc-1", Counter: "rail:dev", Amount: 5, Currency: "credits",
		Memo: "fund esc-1 (dev dev:esc-1.fund.0)", At: time.Unix(1, 5).UTC()}
	if _, ok := leg.AppendJSON(nil); !ok {
		t.Fatalf("%+v: written by encoding/json", leg)
	}
	jsonwtest.Check(t, leg)
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
