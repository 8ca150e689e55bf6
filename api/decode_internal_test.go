package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{"a":"x"}`, -1},
		{`{"a":"\ud83d\ude00"}`, -1},
		{`{"a":"\uD83D\uDE00"}`, -1},
		{`{"a":"\\ud800"}`, -1},
		{`{"a":"\u00e9\n\t\"\\"}`, -1},
		{`{"a":"\ud800"}`, 6},
		{`{"a":"\udc00"}`, 6},
		{`{"a":"\ud83d\ud83d"}`, 6},
		{`{"a":"\ud83dx"}`, 6},
		{`{"a":"\ud83d`, 6},
		{`{"a":"ok","b":"\\\udfff"}`, 17},
	} {
		if got := loneSurrogate([]byte(tc.in)); got != tc.want {
			t.Errorf("loneSurrogate(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzLoneSurrogate: a valid UTF-8 JSON text that loneSurrogate passes
// decodes with no U+FFFD that its text did not spell: nothing is replaced.
func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `{"a":["\udc00x"]}`, `"\ufffd"`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !utf8.Valid(b) || !json.Valid(b) || loneSurrogate(b) >= 0 {
			return
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v)
		spelled := strings.Contains(s, "\uFFFD") || strings.Contains(strings.ToLower(s), `\ufffd`)
		if strings.Contains(string(out), "\uFFFD") && !spelled {
			t.Fatalf("%q decoded with a replacement character: %s", s, out)
		}
	})
}

// selfDecoding is a body type with its own UnmarshalJSON, which decode's
// shortcut for {} must leave to the decoder.
type selfDecoding struct{ called bool }

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.called = true; return nil }

// TestDecode_Empty: an empty body and {} decode as the JSON decoder
// decodes {}: a struct left as it is, a nil map made, an Unmarshaler
// called, a nil pointer refused.
func TestDecode_Empty(t *testing.T) {
	type body struct {
		A string          `json:"a"`
		M map[string]any  `json:"m"`
		R json.RawMessage `json:"r"`
	}
	for _, b := range []string{"", "{}", " {}\n", "\t{ }", "{\n}"} {
		var st struct{}
		if err := decode([]byte(b), &st, "no fields"); err != nil {
			t.Errorf("%q into struct{}: %v", b, err)
		}
		v := body{A: "kept"}
		if err := decode([]byte(b), &v, "a, m, r"); err != nil || v.A != "kept" || v.M != nil || v.R != nil {
			t.Errorf("%q into a struct: %v, %+v", b, err, v)
		}
		var m map[string]any
		if err := decode([]byte(b), &m, "any"); err != nil || m == nil {
			t.Errorf("%q into a nil map: %v, %v", b, err, m)
		}
		var sd selfDecoding
		if err := decode([]byte(b), &sd, "any"); err != nil || !sd.called {
			t.Errorf("%q into an Unmarshaler: %v, called %v", b, err, sd.called)
		}
		var nilBody *body
		want := "invalid_json: the body is not a JSON object: json: Unmarshal(nil *api.body)"
		if err := decode([]byte(b), nilBody, "a"); err == nil || err.Error() != want {
			t.Errorf("%q into a nil pointer: %v, want %s", b, err, want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{} {}`, "invalid_json: the body must hold one JSON object and nothing after it"},
		{`{}x`, "invalid_json: the body must hold one JSON object and nothing after it"},
		{`{"a":1}`, "invalid_type: a must not be a JSON number"},
	} {
		var v struct {
			A string `json:"a"`
		}
		if err := decode([]byte(tc.in), &v, "a"); err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v, want %s", tc.in, err, tc.want)
		}
	}
}
