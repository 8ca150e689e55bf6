package adjudicate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecide: for any criteria and deliverable, Compile and ParseDeliverable
// return a plan or a coded error, and Decide returns a verdict, the same
// bytes twice, without panicking.
func FuzzDecide(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.case"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		parts := strings.Split(string(b), "\n"+caseSep+"\n")
		if len(parts) == 4 {
			f.Add([]byte(parts[0]), []byte(parts[1]))
		}
	}
	f.Add([]byte(`{"assertions":[{"path":"items.0.id","op":"regex","value":"^x"},{"expr":"keys($env) != nil"}]}`), []byte(opsDeliverable))
	f.Add([]byte(`{"schema":{"type":["integer","null"],"enum":[1,null,1.0]}}`), []byte(`1.0`))
	codes := map[string]bool{EInvalidCriteria: true, EInvalidSchema: true, EInvalidAssertion: true}
	f.Fuzz(func(t *testing.T, criteria, deliverable []byte) {
		p, err := Compile(criteria)
		if err != nil {
			if !codes[ErrorCode(err)] {
				t.Fatalf("compile: uncoded error %v", err)
			}
			return
		}
		d, err := ParseDeliverable(deliverable)
		if err != nil {
			if ErrorCode(err) != EInvalidDeliverable {
				t.Fatalf("deliverable: uncoded error %v", err)
			}
			return
		}
		r := p.Decide(d, Record{})
		switch r.Verdict {
		case VerdictRelease, VerdictRefund, VerdictEscalated:
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
		if a, b := r.JSON(), p.Decide(d, Record{}).JSON(); string(a) != string(b) {
			t.Fatalf("not deterministic:\n%s\n%s", a, b)
		}
	})
}

// FuzzMeter_SameResults: any expression that compiles gives the same
// outcome metered as unmetered, within the budget.
func FuzzMeter_SameResults(f *testing.F) {
	for _, src := range meteredExprs {
		f.Add(src)
	}
	d, err := ParseDeliverable([]byte(opsDeliverable))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		plain, err := compileProgram(src, plainOptions)
		if err != nil {
			return
		}
		p, err := Compile([]byte(`{"assertions":[{"expr":` + quote(src) + `}]}`))
		if err != nil {
			if code := ErrorCode(err); code != EInvalidAssertion && code != EInvalidCriteria {
				t.Fatalf("metered: %v", err)
			}
			return
		}
		got := p.Decide(d, Record{}).Checks[0].Detail
		if strings.Contains(got, "budget exhausted") || strings.Contains(got, "may build at most") ||
			strings.Contains(got, "longer than") || strings.Contains(got, "memory budget") {
			return // over a bound the unmetered program does not have
		}
		if want := p.checks[0].ex.label + " -> " + runPlain(plain, d.env); got != want {
			t.Fatalf("metered:   %s\nunmetered: %s", got, want)
		}
	})
}
