package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchCourt runs the load generator against a real server: whole cases
// from concurrent clients, every one decided, and the ledger balanced after.
func TestBenchCourt(t *testing.T) {
	t.Parallel()
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

// TestBenchCourt_Table: a list of client counts runs once per count, and
// the disk's floor is measured in the same run, in the directory named.
func TestBenchCourt_Table(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir())
	dir := t.TempDir()
	out, err := exec.Command(binary, "bench", "court", "--base", s.base, "--clients", "2,4", "--cases", "12",
		"--fsync-dir", dir, "--fsync-writes", "5", "--json").Output()
	if err != nil {
		t.Fatalf("assay bench court: %v\n%s", err, out)
	}
	var res struct {
		Floor struct {
			Dir    string
			Writes int
			P50NS  int64 `json:"p50_ns"`
			FourNS int64 `json:"four_p50_ns"`
		}
		Runs []struct {
			Clients, Cases, Errors int
			CaseP50NS              int64   `json:"case_p50_ns"`
			Ratio                  float64 `json:"p50_over_four_fsyncs"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Floor.Dir != dir || res.Floor.Writes != 10 || res.Floor.P50NS <= 0 || res.Floor.FourNS != 4*res.Floor.P50NS {
		t.Errorf("floor: %+v", res.Floor)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("runs: %s", out)
	}
	for i, r := range res.Runs {
		if r.Clients != []int{2, 4}[i] || r.Cases != 12 || r.Errors != 0 || r.Ratio <= 0 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	// The table, as a person reads it.
	text, err := exec.Command(binary, "bench", "court", "--base", s.base, "--clients", "2,4", "--cases", "8", "--fsync-dir", dir, "--fsync-writes", "3").Output()
	if err != nil {
		t.Fatalf("assay bench court: %v\n%s", err, text)
	}
	for _, want := range []string{"clients", "cases/s", "p50 / 4 fsyncs", "server CPU µs/case", "server page faults/case", "client CPU µs/case", "disk floor in " + dir} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the table has no %q:\n%s", want, text)
		}
	}
}
