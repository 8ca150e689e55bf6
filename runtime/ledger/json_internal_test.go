package ledger

import (
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
