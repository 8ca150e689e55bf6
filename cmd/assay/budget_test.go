package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/internal/wasmtest"
)

// TestJudge_budget: assay judge decides within the court's budget, so the
// criteria that took the process down before end in a refund that says
// why, the same bytes on every run; criteria over a static limit are
// refused as the court refuses them.
func TestJudge_budget(t *testing.T) {
	nesting := `let s = string(1..1000000); let t = string([s,s,s,s,s,s,s,s,s,s]); let u = string([t,t,t,t,t,t,t,t,t,t]); len(string([u,u,u,u,u,u,u,u,u,u])) > 0`
	var many []string
	for i := range adjudicate.MaxAssertions {
		many = append(many, `{"expr":"len(string(1..1000000)) > `+strings.Repeat("1", i%5+1)+`"}`)
	}
	for _, tc := range []struct {
		name, criteria string
		code           int
		want           string
	}{
		{"refundStringBound", `{"assertions":[{"expr":"` + strings.ReplaceAll(nesting, `"`, `\"`) + `"}]}`, exitNo, "string longer than 1048576 bytes"},
		{"refundExhausted", `{"assertions":[` + strings.Join(many, ",") + `]}`, exitNo, "budget exhausted: the decision's 200000000 units ran out in this check"},
		{"refundLoweredBudget", `{"budget":1000,"assertions":[{"expr":"all(1..100000, # > 0)"}]}`, exitNo, "the decision's 1000 units ran out"},
		{"badBudget", `{"budget":200000001}`, exitUsage, "invalid_criteria: budget: must be a whole number of units from 1 to 200000000"},
		{"badRegexProgram", `{"assertions":[{"path":"x","op":"regex","value":"[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}"}]}`, exitUsage, "(MaxRegexInsts)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crit := writeFile(t, "criteria.json", tc.criteria)
			deliv := writeFile(t, "deliverable.json", `{"rows":1}`)
			args := []string{"judge", "--json", "--criteria", crit, "--deliverable", deliv}
			code, stdout, stderr := runAssay(t, args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if code != exitNo {
				return
			}
			var out struct{ Verdict string }
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Verdict != adjudicate.VerdictRefund {
				t.Errorf("verdict %q (%v), want refund", out.Verdict, err)
			}
			if _, again, _ := runAssay(t, args...); again != stdout {
				t.Errorf("not byte-identical:\n%s\n%s", stdout, again)
			}
		})
	}
}

// TestCheck_criteria: with --criteria, assay check runs the checker as the
// court does for those criteria: their entry's limits, the deliverable as
// the court passes it, the criteria in /in.
func TestCheck_criteria(t *testing.T) {
	probe := fixtureSHA256(t, "probe.wasm")
	cache := wasmtest.TempCacheDir(t)
	art := writeFile(t, "deliverable.json", "{ \"rows\" : [1, 2] }\n")
	t.Run("OK", func(t *testing.T) {
		crit := writeFile(t, "criteria.json", `{"checkers":[{"sha256":"`+probe+`"}]}`)
		code, stdout, stderr := runAssay(t, "check", "--cache", cache, "--checker", fixturePath("probe.wasm"), "--artifact", art, "--criteria", crit)
		if code != exitOK {
			t.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
		for _, want := range []string{`stdin: "{\"rows\":[1,2]}"`, "/in: [artifact criteria.json]"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})
	t.Run("OKEntryLimits", func(t *testing.T) {
		crit := writeFile(t, "criteria.json", `{"checkers":[{"sha256":"`+probe+`","fuel":1000}]}`)
		code, stdout, _ := runAssay(t, "check", "--cache", cache, "--checker", fixturePath("probe.wasm"), "--artifact", art, "--criteria", crit)
		if code != exitNo || !strings.Contains(stdout, "fuel_exhausted") || !strings.Contains(stdout, "of 1000") {
			t.Errorf("exit %d, want 1 and fuel_exhausted at the entry's 1000:\n%s", code, stdout)
		}
	})
	for _, tc := range []struct{ name, criteria, flag, msg string }{
		{"ErrNotNamed", `{"checkers":[{"sha256":"` + strings.Repeat("0", 64) + `"}]}`, "", "names no checker with sha256 " + probe},
		{"ErrCriteria", `{"budget":0}`, "", "invalid_criteria"},
		{"ErrFlagSetByEntry", `{"checkers":[{"sha256":"` + probe + `"}]}`, "--fuel=5", "--fuel and --criteria"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crit := writeFile(t, "criteria.json", tc.criteria)
			args := []string{"check", "--cache", "", "--checker", fixturePath("probe.wasm"), "--artifact", art, "--criteria", crit}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			code, _, stderr := runAssay(t, args...)
			if code != exitUsage || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d stderr %q, want 2 and %q", code, stderr, tc.msg)
			}
		})
	}
}
