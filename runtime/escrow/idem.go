package escrow

import (
	"context"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// Reply is a mutation's answer: the JSON body the client gets, the same
// bytes on every replay.
type Reply = idem.Reply

// replay looks ik up on a snapshot, before any slow work (an
// adjudication, a collection on a rail).
func (s *Service) replay(ctx context.Context, ik idem.Request) (*Reply, error) {
	return idem.Replay(ctx, s.st, ik)
}

// mutate is idem.MutateReading on the court's store: reads names what fn
// reads (nil: only what it reads first), so that the transaction reads it
// in one exchange, and the records fn saves through w are kept for the
// next mutation once the transaction commits.
func (s *Service) mutate(ctx context.Context, ik idem.Request, reads func() []string, fn func(tx store.Tx, w *saved) (Reply, error)) (Reply, error) {
	var w saved
	rep, err := idem.MutateReading(ctx, s.st, ik, reads, func(tx store.Tx) (Reply, error) {
		w = saved{}
		return fn(tx, &w)
	})
	if err == nil {
		s.contracts.committed(&w)
	}
	return rep, err
}

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
