package escrow_test

import (
	"context"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
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
	r, err := c.PutChecker(ctx, checkers.KindPython, src, escrow.Idem{})
	if err != nil || !r.Created {
		t.Fatalf("put: %+v %v", r, err)
	}
	crit := `{"checkers":[{"sha256":"` + checkers.SHA256(src) + `","kind":"python"}]}`
	for _, tc := range []struct{ deliverable, verdict string }{
		{`{"rows":1}`, "refund"},
		{`{"rows":3}`, "release"},
	} {
		id := c.delivered(t, createReq("did:a", "did:b", "5", crit), tc.deliverable)
		r, err := c.Dispute(ctx, id, escrow.DisputeRequest{Reason: "check"}, escrow.Idem{})
		if err != nil {
			t.Fatal(err)
		}
		if got := subject(t, r.Body); got.Verdict != tc.verdict {
			t.Errorf("%s: verdict %s, want %s: %+v", tc.deliverable, got.Verdict, tc.verdict, got.Checks)
		}
	}
}
