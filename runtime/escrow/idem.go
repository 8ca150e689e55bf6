package escrow

import (
	"context"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// idemScope is the scope of the court's keys.
const idemScope = "escrow"

// Reply is a mutation's answer: the JSON body the client gets, the same
// bytes on every replay.
type Reply = idem.Reply

// replay looks ik up on a snapshot, before any slow work.
func (s *Service) replay(ctx context.Context, ik idem.Idem) (*Reply, error) {
	return idem.Replay(ctx, s.st, ik.In(idemScope))
}

// mutate is idem.Mutate in the court's scope.
func (s *Service) mutate(ctx context.Context, ik idem.Idem, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	return idem.Mutate(ctx, s.st, ik.In(idemScope), fn)
}

// mutateReading is idem.MutateReading in the court's scope: reads names
// what fn reads, for a store that reads ahead.
func (s *Service) mutateReading(ctx context.Context, ik idem.Idem, reads func() []string, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	return idem.MutateReading(ctx, s.st, ik.In(idemScope), reads, fn)
}
