package receipt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
