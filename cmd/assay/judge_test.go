package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/internal/wasmtest"
)

func fixtureSHA256(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(fixturePath(name))
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestJudge_exitCodes(t *testing.T) {
	t.Parallel()
	cache := wasmtest.TempCacheDir(t)
	dir := filepath.Join("..", "..", "fixtures", "checkers")
	rows := fixtureSHA256(t, "rows.wasm")
	withChecker := `{"schema":{"type":"object","required":["rows"]},
		"assertions":[{"path":"rows","op":"nonempty"}],
		"checkers":[{"sha256":"` + rows + `","fuel":1000000000}]}`
	good := `{"min_rows":2,"rows":[{"id":"a"},{"id":"b"}]}`
	for _, tc := range []struct {
		name        string
		criteria    string
		deliverable string
		extra       []string
		code        int
		verdict     string
		want        string // in stdout or stderr
	}{
		{"OK", withChecker, good, []string{"--checkers", dir}, exitOK, "release", "pass"},
		{"refundByChecker", withChecker, `{"min_rows":3,"rows":[{"id":"a"}]}`, []string{"--checkers", dir}, exitNo, "refund", `"kind": "fail"`},
		{"refundByAssertion", withChecker, `{"rows":[]}`, []string{"--checkers", dir}, exitNo, "refund", "not run: an earlier check already failed"},
		{"escalatedSemantic", `{"assertions":[{"path":"rows","semantic":true,"description":"rows are real"}]}`, good, nil, exitEscalated, "escalated", "no juror answer"},
		{"escalatedMissingChecker", `{"checkers":[{"sha256":"` + strings.Repeat("0", 64) + `"}]}`, good, []string{"--checkers", dir}, exitEscalated, "escalated", "could not run"},
		{"escalatedInvalidChecker", `{"checkers":[{"sha256":"` + fixtureSHA256(t, "badimport.wasm") + `"}]}`, good, []string{"--checkers", dir}, exitEscalated, "escalated", "invalid_checker"},
		{"badSchema", `{"schema":{"type":"object","$ref":"#"}}`, good, nil, exitUsage, "", `invalid_schema: schema: keyword "$ref"`},
		{"badDeliverable", `{}`, `{"rows":`, nil, exitUsage, "", "invalid_deliverable"},
		{"noCheckersDir", withChecker, good, nil, exitUsage, "", "give --checkers DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crit := writeFile(t, "criteria.json", tc.criteria)
			deliv := writeFile(t, "deliverable.json", tc.deliverable)
			args := append([]string{"judge", "--cache", cache, "--json", "--criteria", crit, "--deliverable", deliv}, tc.extra...)
			code, stdout, stderr := runAssay(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("output does not contain %q:\n%s%s", tc.want, stdout, stderr)
			}
			if tc.verdict == "" {
				return
			}
			var out struct{ Verdict string }
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Verdict != tc.verdict {
				t.Errorf("verdict %q (%v), want %q", out.Verdict, err, tc.verdict)
			}
			_, again, _ := runAssay(t, args...)
			if again != stdout {
				t.Errorf("not byte-identical:\n%s\n%s", stdout, again)
			}
		})
	}
}

func TestJudge_text(t *testing.T) {
	t.Parallel()
	crit := writeFile(t, "criteria.json", `{"assertions":[{"path":"rows","op":"gte","value":100}]}`)
	deliv := writeFile(t, "deliverable.json", `{"rows":40}`)
	code, stdout, _ := runAssay(t, "judge", "--criteria", crit, "--deliverable", deliv)
	if code != exitNo || !strings.Contains(stdout, "verdict: refund (tier0)") || !strings.Contains(stdout, "rows gte 100 -> false (got 40)") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	if code, _, _ := runAssay(t, "judge", "--criteria", crit); code != exitUsage {
		t.Errorf("missing flag: exit %d", code)
	}
}
