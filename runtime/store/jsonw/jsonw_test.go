package jsonw_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/store/jsonw"
	"github.com/assayhq/assay/runtime/store/jsonw/jsonwtest"
)

type sample struct {
	S  string           `json:"s"`
	SO string           `json:"so,omitempty"`
	I  int64            `json:"i"`
	IO int64            `json:"io,omitempty"`
	U  uint64           `json:"u"`
	F  float64          `json:"f"`
	T  time.Time        `json:"t"`
	TO time.Time        `json:"to,omitzero"`
	R  json.RawMessage  `json:"r"`
	RO json.RawMessage  `json:"ro,omitempty"`
	L  []string         `json:"l"`
	LO []string         `json:"lo,omitempty"`
	M  map[string]int64 `json:"m"`
	MO map[string]int64 `json:"mo,omitempty"`
}

func (s sample) AppendJSON(b []byte) ([]byte, bool) {
	o := jsonw.NewObject(b)
	o.String("s", s.S)
	o.StringOmitEmpty("so", s.SO)
	o.Int("i", s.I)
	o.IntOmitEmpty("io", s.IO)
	o.Uint("u", s.U)
	o.Float("f", s.F)
	o.Time("t", s.T)
	o.TimeOmitZero("to", s.TO)
	o.Raw("r", s.R)
	o.RawOmitEmpty("ro", s.RO)
	o.Strings("l", s.L)
	o.StringsOmitEmpty("lo", s.LO)
	o.IntMap("m", s.M)
	o.IntMapOmitEmpty("mo", s.MO)
	return o.Bytes()
}

// TestObject: whatever the writer writes is what encoding/json writes,
// and it writes the plain values services store.
func TestObject(t *testing.T) {
	v := jsonwtest.Values{R: rand.New(rand.NewPCG(1, 2))}
	wrote := 0
	for range 20000 {
		s := sample{S: v.String(), SO: v.String(), I: v.Int(), IO: v.Int(), U: uint64(v.R.Int64()), F: v.Float(),
			T: v.Time(), TO: v.Time(), R: v.Raw(), RO: v.Raw(), L: v.Strings(), LO: v.Strings(), M: v.IntMap(), MO: v.IntMap()}
		jsonwtest.Check(t, s)
		if _, ok := s.AppendJSON(nil); ok {
			wrote++
		}
	}
	if wrote < 5 {
		t.Fatalf("the writer wrote %d of 20000 samples: it gives up on plain values", wrote)
	}
	plain := sample{S: "a", I: 1, F: 1.5, T: time.Unix(1, 2).UTC(), R: json.RawMessage(`{"a":1}`), L: []string{"x"}, M: map[string]int64{"b": 2, "a": 1}}
	if _, ok := plain.AppendJSON(nil); !ok {
		t.Fatal("the writer gave up on a plain sample")
	}
	jsonwtest.Check(t, plain)
}
