package escrow_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/rail"
)

// recordingRail is the dev rail with a ledger of its own: what it collected
// and refunded, and an optional failure. It speaks the Rail interface, as a
// real rail's adapter would.
type recordingRail struct {
	rail.Dev
	fail error

	mu        sync.Mutex
	collected map[string]int64
	refunded  map[string]int64
}

func newRecordingRail() *recordingRail {
	return &recordingRail{collected: map[string]int64{}, refunded: map[string]int64{}}
}

func (r *recordingRail) Collect(ctx context.Context, p rail.Payment) (string, error) {
	if r.fail != nil {
		return "", r.fail
	}
	ref, err := r.Dev.Collect(ctx, p)
	r.mu.Lock()
	r.collected[ref] += p.Amount
	r.mu.Unlock()
	return ref, err
}

func (r *recordingRail) Refund(ctx context.Context, ref string, amount int64) (string, error) {
	r.mu.Lock()
	r.refunded[ref] += amount
	r.mu.Unlock()
	return r.Dev.Refund(ctx, ref, amount)
}

// net is what the rail kept: collected less refunded.
func (r *recordingRail) net() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for ref, a := range r.collected {
		n += a - r.refunded[ref]
	}
	return n
}

func withRail(r rail.Rail) option { return func(c *escrow.Config) { c.Rail = r } }

func TestService_Fund_rail(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		// Ten concurrent funds of one contract: one is recorded, and the
		// rail keeps exactly the price; the others were refunded.
		r := newRecordingRail()
		c := mustCourt(t, withRail(r))
		created, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "50", rows100), escrow.Idem{})
		if err != nil {
			t.Fatal(err)
		}
		var cr escrow.Created
		json.Unmarshal(created.Body, &cr)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Fund(ctx, cr.ContractID, escrow.Idem{}); err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if won != 1 || r.net() != 50 {
			t.Fatalf("%d funds won, the rail kept %d; want 1 and 50", won, r.net())
		}
		if sums := c.sums(t); sums["credits"] != 0 {
			t.Errorf("ledger sums %v", sums)
		}
	})
	t.Run("ErrRail", func(t *testing.T) {
		r := newRecordingRail()
		r.fail = errors.New("card declined")
		c := mustCourt(t, withRail(r))
		created, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "50", rows100), escrow.Idem{})
		if err != nil {
			t.Fatal(err)
		}
		var cr escrow.Created
		json.Unmarshal(created.Body, &cr)
		_, err = c.Fund(ctx, cr.ContractID, escrow.Idem{})
		wantCode(t, err, "rail_failed")
		got, err := c.Get(ctx, cr.ContractID)
		if err != nil || got.Status != escrow.StatusCreated {
			t.Fatalf("after a failed collection the contract is %v (%v), want created", got.Status, err)
		}
	})
}
