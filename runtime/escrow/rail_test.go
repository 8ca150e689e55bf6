package escrow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
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
		created, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "50", rows100), idem.Request{})
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
				if _, err := c.Fund(ctx, anon, cr.ContractID, idem.Request{}); err == nil {
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
		created, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "50", rows100), idem.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var cr escrow.Created
		json.Unmarshal(created.Body, &cr)
		_, err = c.Fund(ctx, anon, cr.ContractID, idem.Request{})
		wantCode(t, err, "rail_failed")
		got, err := c.Get(ctx, cr.ContractID)
		if err != nil || got.Status != escrow.StatusCreated {
			t.Fatalf("after a failed collection the contract is %v (%v), want created", got.Status, err)
		}
	})
}

// unsureStore commits the Updates it is armed for and then reports that it
// cannot tell whether they committed, as a store whose connection failed
// during COMMIT does.
type unsureStore struct {
	store.Store
	armed atomic.Bool
}

func (s *unsureStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("connection reset during COMMIT: %w", store.ErrCommitUnknown)
	}
	return err
}

// A fund whose commit's fate is unknown keeps the money: it may be held,
// and refunding it could pay it out twice. The error is an internal one,
// so that it is logged for reconciliation.
func TestService_Fund_commitUnknown(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	us := &unsureStore{Store: db}
	r := newRecordingRail()
	c := mustCourtOn(t, us, t.TempDir(), withRail(r))
	created, err := c.Create(ctx, createReq("did:x:buyer", "did:x:seller", "50", rows100), idem.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var cr escrow.Created
	json.Unmarshal(created.Body, &cr)
	us.armed.Store(true)
	_, err = c.Fund(ctx, anon, cr.ContractID, idem.Request{})
	wantCode(t, err, "commit_unknown")
	if fault.KindOf(err) != fault.Internal {
		t.Errorf("kind %q, want internal", fault.KindOf(err))
	}
	got, err := c.Get(ctx, cr.ContractID)
	if err != nil || got.Status != escrow.StatusFunded || r.net() != 50 {
		t.Fatalf("contract %v (%v), rail kept %d: want funded and 50 kept", got.Status, err, r.net())
	}
}
