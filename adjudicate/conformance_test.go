package adjudicate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/assayhq/assay/internal/conformance"
)

// subsetForm reports whether a test-suite schema uses only the subset, and
// if not, why.
func subsetForm(v any) (bool, string) {
	switch x := v.(type) {
	case bool:
		return true, ""
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := x[k]
			if !schemaKeywords[k] {
				return false, "keyword " + k
			}
			switch k {
			case "additionalProperties":
				if _, ok := e.(bool); !ok {
					return false, "additionalProperties as a schema"
				}
			case "items":
				if ok, why := subsetForm(e); !ok {
					return false, why
				}
			case "properties":
				m, _ := e.(map[string]any)
				for _, sub := range m {
					if ok, why := subsetForm(sub); !ok {
						return false, why
					}
				}
			}
		}
		return true, ""
	}
	return false, "not a schema"
}

func TestSchema_Conformance(t *testing.T) {
	dir := conformance.Dir(t, "json-schema-test-suite")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	ran, skipped := 0, 0
	reasons := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var groups []struct {
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Tests       []struct {
				Description string          `json:"description"`
				Data        json.RawMessage `json:"data"`
				Valid       bool            `json:"valid"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(b, &groups); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range groups {
			var schemaV any
			if err := json.Unmarshal(g.Schema, &schemaV); err != nil {
				t.Fatal(err)
			}
			// $schema names the suite's dialect (2020-12), of which the
			// subset is a part; the subset itself rejects the keyword.
			if m, ok := schemaV.(map[string]any); ok {
				delete(m, "$schema")
			}
			if ok, why := subsetForm(schemaV); !ok {
				skipped++
				reasons[why]++
				continue
			}
			ran++
			criteria, _ := json.Marshal(map[string]any{"schema": schemaV})
			name := filepath.Base(f) + "/" + g.Description
			p, err := Compile(criteria)
			if err != nil {
				t.Errorf("%s: compile: %v", name, err)
				continue
			}
			for _, tc := range g.Tests {
				d, err := ParseDeliverable(tc.Data)
				if err != nil {
					t.Errorf("%s/%s: %v", name, tc.Description, err)
					continue
				}
				r := p.Decide(d, Record{})
				if got := r.Verdict == VerdictRelease; got != tc.Valid {
					t.Errorf("%s/%s: valid=%v, got %s: %s", name, tc.Description, tc.Valid, r.Verdict, r.Checks[0].Detail)
				}
			}
		}
	}
	var why []string
	for k := range reasons {
		why = append(why, k)
	}
	sort.Strings(why)
	for _, k := range why {
		t.Logf("skipped %d group(s): %s", reasons[k], k)
	}
	t.Logf("json-schema-test-suite: ran %d groups, skipped %d", ran, skipped)
	if ran == 0 {
		t.Fatal("ran no group")
	}
}
