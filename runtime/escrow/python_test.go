package escrow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
)

// TestService_PythonChecker: a Python checker uploaded to the court decides
// disputes like a wasm one, replayed in the sandbox.
func TestService_PythonChecker(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles CPython for the sandbox")
	}
	ctx := context.Background()
	c := mustCourt(t, withSandbox(t))
	src := []byte("rows = data[\"rows\"]\nassert rows >= 2, f\"only {rows} rows\"\n")
	r, err := c.PutChecker(ctx, checkers.KindPython, src, idem.Request{})
	if err != nil || !r.Created {
		t.Fatalf("put: %+v %v", r, err)
	}
	crit := `{"checkers":[{"sha256":"` + checkers.SHA256(src) + `","kind":"python"}]}`
	for _, tc := range []struct{ deliverable, verdict string }{
		{`{"rows":1}`, "refund"},
		{`{"rows":3}`, "release"},
	} {
		id := c.delivered(t, createReq("did:a", "did:b", "5", crit), tc.deliverable)
		r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "check"}, idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if got := subject(t, r.Body); got.Verdict != tc.verdict {
			t.Errorf("%s: verdict %s, want %s: %+v", tc.deliverable, got.Verdict, tc.verdict, got.Checks)
		}
	}
}

// TestService_PythonCodeTricks: a seller's code cannot skip the buyer's
// Python checker. An artifact that exits, raises SystemExit or replaces
// exec before the checker runs is refunded; honest code is released.
func TestService_PythonCodeTricks(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles CPython for the sandbox")
	}
	ctx := context.Background()
	c := mustCourt(t, withSandbox(t))
	src := []byte("assert add(2, 2) == 4\n")
	if _, err := c.PutChecker(ctx, checkers.KindPython, src, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	crit := `{"checkers":[{"sha256":"` + checkers.SHA256(src) + `","kind":"python","artifact_type":"code"}]}`
	for _, tc := range []struct{ name, code, verdict, detail string }{
		{"Honest", "def add(a, b):\n    return a + b\n", "release", ""},
		{"SysExit", "import sys\nsys.exit(0)\n", "refund", "SystemExit: 0"},
		{"RaiseSystemExit", "raise SystemExit\n", "refund", "SystemExit"},
		{"ExecReplaced", "import builtins\nbuiltins.exec = lambda *a, **k: None\ndef add(a, b):\n    return 5\n", "refund", "AssertionError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deliverable, err := json.Marshal(tc.code)
			if err != nil {
				t.Fatal(err)
			}
			id := c.delivered(t, createReq("did:a", "did:b", "5", crit), string(deliverable))
			r, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "check"}, idem.Request{})
			if err != nil {
				t.Fatal(err)
			}
			got := subject(t, r.Body)
			if got.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %+v", got.Verdict, tc.verdict, got.Checks)
			}
			if tc.detail != "" {
				b, _ := json.Marshal(got.Checks)
				if !strings.Contains(string(b), tc.detail) {
					t.Errorf("checks %s lack %q", b, tc.detail)
				}
			}
		})
	}
}

// TestService_PythonSyntaxRefused: a Python checker that does not compile
// is refused at upload, with the line and CPython's message.
func TestService_PythonSyntaxRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles CPython for the sandbox")
	}
	c := mustCourt(t, withSandbox(t))
	_, err := c.PutChecker(context.Background(), checkers.KindPython, []byte("def f(:\n"), idem.Request{})
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "invalid syntax") {
		t.Fatalf("put: %v", err)
	}
}
