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

// TestService_CaseCounts drives whole cases (create, fund, deliver, and a
// dispute decided by a wasm checker) through a store that counts, and
// states what each step costs in transactions and keys.
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
	acceptance := `{"assertions":[{"path":"rows","op":"gte","value":1}],"checkers":[{"sha256":"` + checkers.SHA256(pass) + `"}]}`
	type step struct {
		name string
		run  func(id string) (string, error)
	}
	steps := []step{
		{"create", func(string) (string, error) {
			r, err := c.Create(ctx, createReq("did:count:buyer", "did:count:seller", "10", acceptance), idem.Request{})
			if err != nil {
				return "", err
			}
			var created escrow.Created
			return created.ContractID, json.Unmarshal(r.Body, &created)
		}},
		{"fund", func(id string) (string, error) { _, err := c.Fund(ctx, anon, id, idem.Request{}); return id, err }},
		{"deliver", func(id string) (string, error) {
			_, err := c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(fmt.Sprintf(`{"rows":5,"case":%q}`, id))}, idem.Request{})
			return id, err
		}},
		{"dispute", func(id string) (string, error) {
			_, err := c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "count"}, idem.Request{})
			return id, err
		}},
	}
	var per []storetest.Counts
	for i := range 2 { // the first case meets empty counters and a cold memo
		per = per[:0]
		id := ""
		for _, s := range steps {
			before := cnt.Counts()
			if id, err = s.run(id); err != nil {
				t.Fatalf("case %d %s: %v", i, s.name, err)
			}
			per = append(per, cnt.Counts().Sub(before))
		}
	}
	var total storetest.Counts
	for i, s := range steps {
		t.Logf("%-8s %v", s.name, per[i])
		total.Updates += per[i].Updates
		total.Views += per[i].Views
		total.Reads += per[i].Reads
		total.Scans += per[i].Scans
		total.Writes += per[i].Writes
	}
	t.Logf("a case: %v", total)
}

func TestService_CaseBytes(t *testing.T) {
	ctx := context.Background()
	db, _ := storage.Open("", storage.Options{InMemory: true})
	cnt := storetest.Count(db)
	cnt.OnSet = func(k string, v []byte) { t.Logf("%5d %s", len(k)+len(v), k) }
	c := mustCourtOn(t, cnt, t.TempDir())
	for i := range 2 {
		t.Logf("case %d", i)
		r, _ := c.Create(ctx, createReq("did:bench:buyer-1", "did:bench:seller-2", "10", `{"schema":{"type":"object","required":["rows"]},"assertions":[{"path":"rows","op":"gte","value":3},{"path":"rows","op":"lte","value":1000}]}`), idem.Request{})
		var created escrow.Created
		json.Unmarshal(r.Body, &created)
		id := created.ContractID
		c.Fund(ctx, anon, id, idem.Request{})
		c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":3}`), Evidence: json.RawMessage(`{}`)}, idem.Request{})
		c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "bench"}, idem.Request{})
	}
	t.Logf("%v", cnt.Counts())
}
