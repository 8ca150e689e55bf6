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

// mutate is idem.Mutate on the court's store.
func (s *Service) mutate(ctx context.Context, ik idem.Request, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	return idem.Mutate(ctx, s.st, ik, fn)
}

// mutateReading is idem.MutateReading on the court's store: reads names
// what fn reads, for a store that reads ahead.
func (s *Service) mutateReading(ctx context.Context, ik idem.Request, reads func() []string, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	return idem.MutateReading(ctx, s.st, ik, reads, fn)
}

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
