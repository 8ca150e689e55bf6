package matters

import (
	"context"
	"encoding/json"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// View is a Matter as one actor may see it: the full Matter when the
// actor holds economic:private, and the redacted projection otherwise.
type View struct {
	Private *Matter
	Public  Public
}

// Value returns what to serve.
func (v View) Value() any {
	if v.Private != nil {
		return v.Private
	}
	return v.Public
}

func view(a caller, m *Matter) View {
	if a.Can(ScopePrivate) {
		return View{Private: m, Public: m.Public()}
	}
	return View{Public: m.Public()}
}

// evaluate loads the Matters by id and expires those due, in one
// transaction when any is due.
func (s *Service) evaluate(ctx context.Context, a caller, ids []string) ([]*Matter, error) {
	var (
		out    []*Matter
		anyDue bool
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		out, anyDue = out[:0], false
		now := s.now().UTC()
		for _, id := range ids {
			m, err := load(tx, a, id)
			if err != nil {
				return err
			}
			anyDue = anyDue || due(m, now) || exchangeDue(m, now)
			out = append(out, m)
		}
		return nil
	})
	if err != nil || !anyDue {
		return out, err
	}
	err = s.st.Update(ctx, func(tx store.Tx) error {
		out = out[:0]
		now := s.now().UTC()
		for _, id := range ids {
			m, err := load(tx, a, id)
			if err != nil {
				return err
			}
			if due(m, now) {
				if _, err := s.expire(tx, m, now); err != nil {
					return err
				}
			}
			if err := s.advanceAll(tx, m, now); err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// Get returns one Matter of the actor's tenant, expiring it first when it
// is open at or past its deadline.
//
// # Errors
//
// insufficient_scope (403); matter_not_found (404).
func (s *Service) Get(ctx context.Context, actor Actor, id string) (View, error) {
	a, err := s.caller(actor)
	if err != nil {
		return View{}, err
	}
	if err := need(a, ScopeRead); err != nil {
		return View{}, err
	}
	if id == "" {
		return View{}, notFound(id)
	}
	ms, err := s.evaluate(ctx, a, []string{id})
	if err != nil {
		return View{}, err
	}
	return view(a, ms[0]), nil
}

// List returns the actor's tenant's Matters, oldest id first, at most
// MaxList: only the open ones, or all when all is set. Open Matters past
// their deadline expire first, and so leave the open list.
//
// # Errors
//
// insufficient_scope (403).
func (s *Service) List(ctx context.Context, actor Actor, all bool) ([]View, error) {
	a, err := s.caller(actor)
	if err != nil {
		return nil, err
	}
	if err := need(a, ScopeRead); err != nil {
		return nil, err
	}
	var ids []string
	err = s.st.View(ctx, func(tx store.Tx) error {
		var err error
		ids, err = matterIDs(tx, a.Tenant, !all, MaxList)
		return err
	})
	if err != nil {
		return nil, err
	}
	ms, err := s.evaluate(ctx, a, ids)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(ms))
	for _, m := range ms {
		if !all && m.Status != StatusOpen {
			continue
		}
		out = append(out, view(a, m))
	}
	return out, nil
}

// Receipts returns a Matter's receipts, oldest first: the chain, each
// carrying the previous one's proof.subjectHash.
//
// # Errors
//
// insufficient_scope (403); matter_not_found (404).
func (s *Service) Receipts(ctx context.Context, actor Actor, id string) ([]receipt.Receipt, error) {
	a, err := s.caller(actor)
	if err != nil {
		return nil, err
	}
	if err := need(a, ScopeRead); err != nil {
		return nil, err
	}
	var out []receipt.Receipt
	err = s.st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		m, err := load(tx, a, id)
		if err != nil {
			return err
		}
		for i, id := range m.Receipts {
			b, err := receipt.Get(tx, id)
			if fault.CodeOf(err) == "receipt_not_found" {
				b, err = legacyReceipt(tx, m.ID, i)
			}
			if err != nil {
				return err
			}
			var r receipt.Receipt
			if err := json.Unmarshal(b, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// Now reads the service clock: the transport checks signature freshness
// against it.
func (s *Service) Now() time.Time { return s.now() }
