package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestBenchCourt runs the load generator against a real server: whole cases
// from concurrent clients, every one decided, and the ledger balanced after.
func TestBenchCourt(t *testing.T) {
	s := start(t, t.TempDir())
	out, err := exec.Command(binary, "bench", "court", "--base", s.base, "--clients", "8", "--cases", "60", "--json").Output()
	if err != nil {
		t.Fatalf("assay bench court: %v\n%s", err, out)
	}
	var res struct {
		Cases, Accepted, Disputed, Errors int
		CasesPerSec                       float64 `json:"cases_per_sec"`
		CaseP99NS                         int64   `json:"case_p99_ns"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Cases != 60 || res.Accepted != 30 || res.Disputed != 30 || res.Errors != 0 || res.CasesPerSec <= 0 || res.CaseP99NS <= 0 {
		t.Fatalf("unexpected result: %s", out)
	}
	ledger := s.get(t, "/ledger").obj(t)
	if ledger["balanced"] != true {
		t.Errorf("ledger after the load: %v", ledger)
	}
}
