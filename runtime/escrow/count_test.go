package escrow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/storetest"
)

// TestService_CaseCounts drives whole cases through a store that counts,
// and holds each step to the transactions and keys it costs: a case whose
// dispute a wasm checker decides, and a case the buyer accepts. The
// second case of each kind is counted (the first meets empty counters and
// a cold memo). docs/performance.md gives these counts, and the counts
// before the court's records were laid out for the work.
func TestService_CaseCounts(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cnt := storetest.Count(db)
	c := mustCourtOn(t, cnt, t.TempDir(), withSandbox(t))
	pass := fixture(t, "pass.wasm")
	if _, err := c.PutChecker(ctx, "wasm", pass, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	withChecker := `{"assertions":[{"path":"rows","op":"gte","value":1}],"checkers":[{"sha256":"` + checkers.SHA256(pass) + `"}]}`
	type want struct{ updates, views, reads, writes int }
	for _, tc := range []struct {
		name       string
		acceptance string
		dispute    bool
		steps      []want // create, fund, deliver, then dispute or accept
	}{
		// The dispute: one view and one commit of the checker's memo, the
		// dispute's own commit.
		{"DisputeWithChecker", withChecker, true, []want{{1, 0, 2, 2}, {1, 0, 4, 6}, {1, 0, 1, 2}, {2, 1, 7, 13}}},
		{"Accept", rows100, false, []want{{1, 0, 1, 2}, {1, 0, 4, 6}, {1, 0, 1, 2}, {1, 0, 5, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []storetest.Counts
			for i := range 2 {
				got = got[:0]
				id := ""
				step := func(name string, run func() error) {
					t.Helper()
					before := cnt.Counts()
					if err := run(); err != nil {
						t.Fatalf("case %d %s: %v", i, name, err)
					}
					got = append(got, cnt.Counts().Sub(before))
				}
				step("create", func() error {
					r, err := c.Create(ctx, createReq("did:count:buyer", "did:count:seller", "10", tc.acceptance), idem.Request{})
					if err != nil {
						return err
					}
					var created escrow.Created
					err = json.Unmarshal(r.Body, &created)
					id = created.ContractID
					return err
				})
				step("fund", func() error { _, err := c.Fund(ctx, anon, id, idem.Request{}); return err })
				step("deliver", func() error {
					// A deliverable of its own, so that the checker runs.
					_, err := c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(fmt.Sprintf(`{"rows":150,"case":%q}`, id))}, idem.Request{})
					return err
				})
				step("decide", func() error {
					if tc.dispute {
						_, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "count"}, idem.Request{})
						return err
					}
					_, err := c.Accept(ctx, anon, id, idem.Request{})
					return err
				})
			}
			var total storetest.Counts
			for i, g := range got {
				w := tc.steps[i]
				t.Logf("step %d: %v", i, g)
				if g.Updates != w.updates || g.Views != w.views || g.Reads != w.reads || g.Writes != w.writes {
					t.Errorf("step %d: %d read-write and %d read-only transactions, %d keys read, %d written; want %d, %d, %d, %d",
						i, g.Updates, g.Views, g.Reads, g.Writes, w.updates, w.views, w.reads, w.writes)
				}
				total = total.Add(g)
			}
			t.Logf("a case: %v", total)
		})
	}
}
