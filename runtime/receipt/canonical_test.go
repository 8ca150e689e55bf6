package receipt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/assayhq/assay/internal/conformance"
)

// TestCanonicalJSON_RFC8785 runs every vector of the RFC 8785 reference
// implementation: input/X.json canonicalises to output/X.json byte for byte.
func TestCanonicalJSON_RFC8785(t *testing.T) {
	dir := conformance.Dir(t, "jcs")
	inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors in %s: %v", dir, err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := CanonicalJSON(input)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("canonical form differs\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"OK", `{"b":1,"a":[1e-6,"x"]}`, `{"a":[0.000001,"x"],"b":1}`, nil},
		{"OKSafeInteger", `{"n":9007199254740992,"m":-9007199254740992}`, `{"m":-9007199254740992,"n":9007199254740992}`, nil},
		{"OKBigFloat", `[1E30]`, `[1e+30]`, nil},
		{"OKDigitsInString", `{"s":"12345678901234567890"}`, `{"s":"12345678901234567890"}`, nil},
		{"ErrUnsafeInteger", `{"n":9007199254740993}`, "", ErrUnsafeInteger},
		{"ErrUnsafeNegative", `[-12345678901234567890]`, "", ErrUnsafeInteger},
		{"ErrDuplicateKey", `{"a":1,"a":2}`, "", nil},
		{"ErrNotJSON", `{"a":`, "", nil},
		{"OKCanonicalAlready", `{"a":[1,-20,true,false,null,{}],"b":{"c":"d e"},"bb":[]}`, `{"a":[1,-20,true,false,null,{}],"b":{"c":"d e"},"bb":[]}`, nil},
		{"OKNegativeZero", `[-0]`, `[0]`, nil},
		{"OKEscape", `["\u0041\n"]`, `["A\n"]`, nil},
		{"OKSpace", ` {"a" : 1} `, `{"a":1}`, nil},
		{"ErrDuplicateKeyInOrder", `{"a":1,"b":2,"b":3}`, "", nil},
		{"ErrTrailing", `{"a":1}x`, "", nil},
		{"ErrLeadingZero", `[01]`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tt.in))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				if tt.err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestIsCanonical checks the subset isCanonical takes as canonical as it
// stands, and some text just outside it, which CanonicalJSON hands to jcs.
func TestIsCanonical(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `0`, `-1`, `"x"`, `true`, `null`,
		`{"op":"gte","path":"rows","value":100}`,
		`{"deliverable":{"rows":150},"evidence":null}`,
		`{"A":1,"B":2,"a":3}`, `[[[[]]]]`, `{"a":{"a":{"a":[]}}}`,
	} {
		if !isCanonical([]byte(in)) {
			t.Errorf("isCanonical(%s) = false, want true", in)
		}
	}
	for _, in := range []string{
		``, ` {}`, `{} `, `{"b":1,"a":2}`, `{"a":1,"a":1}`, `[1.0]`, `[1e3]`, `[-0]`, `[01]`,
		`["\u0041"]`, `["\n"]`, `["é"]`, "[\"\x7f\"]", `{"a":1,}`, `[1,]`, `{"a"}`, `[tru]`, `truex`,
		`{"a":1`, `[`, `"open`, `{1:2}`,
	} {
		if isCanonical([]byte(in)) {
			t.Errorf("isCanonical(%s) = true, want false", in)
		}
	}
	deep := strings.Repeat("[", maxCanonicalDepth+2) + strings.Repeat("]", maxCanonicalDepth+2)
	if isCanonical([]byte(deep)) {
		t.Error("isCanonical takes text nested past maxCanonicalDepth")
	}
}

// FuzzIsCanonical holds isCanonical to jcs: text it takes as canonical is
// what jcs makes of it, byte for byte.
func FuzzIsCanonical(f *testing.F) {
	for _, seed := range []string{
		`{"op":"gte","path":"rows","value":100}`, `{"b":1,"a":[1e-6,"x"]}`, `[-0,0,1,-1]`,
		`{"a":[1,-20,true,false,null,{}],"b":{"c":"d e"}}`, `"\u0041"`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isCanonical(data) || checkIntegers(data) != nil {
			return
		}
		out, err := jcs.Transform(data)
		if err != nil {
			t.Fatalf("isCanonical(%q) = true, and jcs refuses it: %v", data, err)
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("isCanonical(%q) = true, and jcs makes it %q", data, out)
		}
	})
}
