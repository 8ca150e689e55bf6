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
