// Package jsonwtest has what the tests of runtime/store/jsonw's writers share:
// random values, plain and not, and the check against encoding/json.
package jsonwtest

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Values are random test values, plain and not: what the records'
// differential tests (escrow, ledger) build theirs from.
type Values struct{ R *rand.Rand }

var strs = []string{"", "a", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "esc-0123456789abcdef",
	"<b>", "a&b", "é", "\u2028", `"q"`, `x\y`, "\x01", "\x7f", "tab\there", " spaced ", "credits", "release"}

// String returns a random string.
func (v Values) String() string { return strs[v.R.IntN(len(strs))] }

// Int returns a random integer, often 0.
func (v Values) Int() int64 {
	switch v.R.IntN(4) {
	case 0:
		return 0
	case 1:
		return -v.R.Int64()
	}
	return v.R.Int64N(1 << 53)
}

// Time returns a random time: zero, UTC, UTC without nanoseconds, in
// another zone, or past year 9999.
func (v Values) Time() time.Time {
	t := time.Unix(v.R.Int64N(4e9), v.R.Int64N(1e9))
	switch v.R.IntN(6) {
	case 0:
		return time.Time{}
	case 1:
		return t.Truncate(time.Second).UTC()
	case 2:
		return t.In(time.FixedZone("X", 3600))
	case 3:
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return t.UTC()
}

// Float returns a random float, of every form encoding/json writes.
func (v Values) Float() float64 {
	fs := []float64{0, 1e-7, 1.5e-9, 1e21, 123.456, 1764614400.123456, -2.5, math.Inf(1), math.NaN(), float64(v.R.Int64N(4e15)) / 1e6}
	return fs[v.R.IntN(len(fs))]
}

// Raw returns random raw JSON: compact, spaced, escaped, empty.
func (v Values) Raw() json.RawMessage {
	rs := []string{`{"a":1}`, `{"assertions":[{"op":"gte","path":"rows","value":2}]}`, `{ "a": 1 }`, `{"a":"<"}`, ``, `[1,2]`, `"é"`}
	if r := rs[v.R.IntN(len(rs))]; r != "" {
		return json.RawMessage(r)
	}
	return nil
}

// Strings returns a random list, nil or empty too.
func (v Values) Strings() []string {
	switch v.R.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+v.R.IntN(3))
	for i := range out {
		out[i] = v.String()
	}
	return out
}

// IntMap returns a random map, nil or empty too.
func (v Values) IntMap() map[string]int64 {
	switch v.R.IntN(3) {
	case 0:
		return nil
	case 1:
		return map[string]int64{}
	}
	m := map[string]int64{}
	for range 1 + v.R.IntN(3) {
		m[v.String()] = v.Int()
	}
	return m
}

// Check fails t when v writes bytes other than encoding/json's.
func Check(t testing.TB, v interface {
	AppendJSON([]byte) ([]byte, bool)
}) {
	t.Helper()
	got, ok := v.AppendJSON([]byte("prefix"))
	want, err := json.Marshal(v)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("the writer wrote %s where encoding/json fails: %v", got, err)
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("the writer wrote\n%s\nencoding/json\n%s", got[len("prefix"):], want)
	}
}
