package adjudicate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected results of testdata/*.case")

const caseSep = "----------"

// A case file has four sections split on ---------- lines: the criteria,
// the deliverable, the record (checker outcomes and juror answers; {} for
// none), and the expected result, or "error: <code>: <message>".
func TestDecide_Golden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.case"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".case"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(string(b), "\n"+caseSep+"\n")
			if len(parts) != 4 {
				t.Fatalf("%d sections, want 4", len(parts))
			}
			got := runCase(t, parts[0], parts[1], parts[2])
			again := runCase(t, parts[0], parts[1], parts[2])
			if got != again {
				t.Fatalf("not deterministic:\n%s\n%s", got, again)
			}
			want := strings.TrimSpace(parts[3])
			if *update {
				parts[3] = got + "\n"
				if err := os.WriteFile(f, []byte(strings.Join(parts, "\n"+caseSep+"\n")), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func runCase(t *testing.T, criteria, deliverable, record string) string {
	t.Helper()
	p, err := Compile([]byte(criteria))
	if err != nil {
		return "error: " + err.Error()
	}
	d, err := ParseDeliverable([]byte(deliverable))
	if err != nil {
		return "error: " + err.Error()
	}
	var rec Record
	dec := json.NewDecoder(strings.NewReader(record))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("record: %v", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, p.Decide(d, rec).JSON(), "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
