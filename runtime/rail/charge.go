package rail

import (
	"context"
	"errors"
	"fmt"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// The codes of a payment that went wrong on a rail.
const (
	ECodeRailFailed    = "rail_failed"    // 503: the rail refused or failed; nothing was taken, or it was given back
	ECodeCommitUnknown = "commit_unknown" // 500: collected, and whether it was recorded is unknown
)

// Failed is the error a client gets when the rail refused what: a fixed
// message, the rail's own words kept as the cause, for the log only.
func Failed(what string, cause error) error {
	return &fault.Error{Kind: fault.Unavailable, Code: ECodeRailFailed, Message: what + " on the payment rail; try again later", Err: cause}
}

// Charge is the one way money collected on a rail is recorded:
// collect takes amount on r and answers the payment's reference; commit
// then records it in one transaction of the store (an idem.Mutate) and
// answers the request's reply. When the collection is not what the
// ledger records (commit failed, or answered an earlier request's reply,
// which recorded a collection of its own), the collection is refunded on
// r, so that no money is taken without being held. When the commit's
// fate is unknown (store.ErrCommitUnknown) the money is kept: it may be
// recorded, and refunding it could pay it twice; the error is internal,
// so that it is logged for reconciliation.
//
// # Errors
//
// collect's error, unchanged (nothing was taken); commit's error, with the
// refund's reference in its message when it is coded; commit_unknown
// (internal); rail_failed (internal) when the refund failed too.
func Charge(ctx context.Context, r Rail, amount int64, collect func() (string, error), commit func(ref string) (idem.Reply, error)) (idem.Reply, error) {
	ref, err := collect()
	if err != nil {
		return idem.Reply{}, err
	}
	rep, err := commit(ref)
	if errors.Is(err, store.ErrCommitUnknown) {
		return idem.Reply{}, fault.Wrap(fault.Internal, ECodeCommitUnknown,
			fmt.Errorf("payment %s was collected on the %s rail and its recording is unknown; not refunded, reconcile it: %w", ref, r.Name(), err))
	}
	if err == nil && !rep.Replayed {
		return rep, nil
	}
	back, rerr := r.Refund(context.WithoutCancel(ctx), ref, amount)
	if rerr != nil {
		// Money taken and neither held nor returned: an internal error,
		// so that it is logged, whatever the request's own.
		return idem.Reply{}, fault.Wrap(fault.Internal, ECodeRailFailed,
			fmt.Errorf("payment %s was collected on the %s rail, not recorded, and not refunded: %w", ref, r.Name(), errors.Join(err, rerr)))
	}
	if f, ok := fault.As(err); ok {
		g := *f
		g.Message = f.Message + "; the payment " + ref + " was refunded as " + back
		return idem.Reply{}, &g
	}
	return rep, err
}
