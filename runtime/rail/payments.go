package rail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// Remote is a rail that settles on a remote system, which may do what it
// was asked and never say so: it keeps an intent of every payment before
// the payment crosses (x402). Payments drives the intents.
type Remote interface {
	Rail
	// Begin checks p, paid for purpose, and claims its intent (Claim) in
	// one transaction of the store, leased with lease. A payment sent
	// again answers the intent it already has.
	//
	// # Errors
	//
	// *PaymentRequired when p carries no payment, or one that paying
	// anew can cure; the rail's coded refusals of a payment (a malformed
	// one, or one used for another purpose: payment_replayed).
	Begin(ctx context.Context, p Payment, purpose Purpose, lease Lease) (Intent, Claimed, error)
	// Settle moves the money of the collection in, or finds out whether
	// it moved, and answers the settlement's reference and what the rail
	// says of it. fresh says that no attempt before this one can have
	// asked the remote system to move it: the intent was claimed new by
	// this attempt.
	//
	// # Errors
	//
	// *Refused when the money did not move and will not; any other error
	// when the rail cannot tell now (the intent stays unresolved).
	Settle(ctx context.Context, in Intent, fresh bool) (string, Settled, error)
	// Record writes in tx what the rail keeps of a collection that
	// settled, in the transaction that resolves its intent (x402: the
	// reference, for the refund; the agent's address, for payouts).
	Record(tx store.Tx, in Intent) error
	// Find returns the intent of the payment proof presents, when it has
	// one that moved money or may have.
	//
	// # Errors
	//
	// store.ErrNotFound when it has none (or only a released one); a
	// malformed proof is not found.
	Find(ctx context.Context, proof string) (Intent, error)
}

// Refused is Remote.Settle's error when the payment did not move and
// never will: the intent is released, and Err is what the request
// answers (a *PaymentRequired, or a coded refusal).
type Refused struct{ Err error }

func (e *Refused) Error() string { return e.Err.Error() }
func (e *Refused) Unwrap() error { return e.Err }

// Completer completes a collection's purpose once its money moved
// (in.Ref and in.Settled say how): in one transaction of the store it
// makes the purpose's changes and calls done with the reply, which
// resolves the intent in that same transaction. Payments calls it for
// the live request and again, with the same intent, when it resolves the
// intent after a crash.
//
// # Errors
//
// A coded error: the purpose is refused, and the money is paid back; the
// *Resolved that done returns when another attempt resolved the intent
// first; store.ErrCommitUnknown; any other error leaves the intent to be
// resolved later.
type Completer func(ctx context.Context, in Intent, done Done) (idem.Reply, error)

// Done resolves a collection's intent with rep in tx, the transaction
// that completes its purpose.
//
// # Errors
//
// *Resolved when another attempt resolved it first: tx must not commit.
type Done func(tx store.Tx, rep idem.Reply) error

// Named points of the intent discipline, where a test may crash the
// process (PaymentsConfig.Fault, x402.Config.Fault): before a collection's
// intent is recorded, after it, after the facilitator's /verify and
// /settle answered, after the local commit that resolves the intent, and
// inside a refund (after its intent is recorded, after it settled).
const (
	FaultBeforeIntent      = "before-intent"
	FaultAfterIntent       = "after-intent"
	FaultAfterVerify       = "after-verify"
	FaultAfterSettle       = "after-settle"
	FaultAfterCommit       = "after-commit"
	FaultRefundAfterIntent = "refund-after-intent"
	FaultRefundAfterSettle = "refund-after-settle"
)

// FaultPoints lists the named points, in the order a payment meets them.
var FaultPoints = []string{FaultBeforeIntent, FaultAfterIntent, FaultAfterVerify, FaultAfterSettle, FaultAfterCommit,
	FaultRefundAfterIntent, FaultRefundAfterSettle}

// Counters counts how intents end, for /metrics: resolved by outcome,
// and attempts that left an intent unresolved (failed). A Payments and
// its rail share one.
type Counters struct {
	done, refunded, released, failed atomic.Int64
}

// CounterValues is a snapshot of Counters.
type CounterValues struct {
	// Done counts intents whose money moved and whose purpose was
	// completed; Refunded those paid back after their purpose was
	// refused; Released those that never moved money.
	Done, Refunded, Released int64
	// Failed counts attempts that could not resolve an intent (the
	// facilitator unreachable, an answer that never came): each such
	// intent stays unresolved for the next tick.
	Failed int64
}

// Values returns the counts so far; a nil Counters counts nothing.
func (c *Counters) Values() CounterValues {
	if c == nil {
		return CounterValues{}
	}
	return CounterValues{Done: c.done.Load(), Refunded: c.refunded.Load(), Released: c.released.Load(), Failed: c.failed.Load()}
}

// Count records that an intent reached state (done, refunded, released).
func (c *Counters) Count(state string) {
	if c == nil {
		return
	}
	switch state {
	case StateDone:
		c.done.Add(1)
	case StateRefunded:
		c.refunded.Add(1)
	case StateReleased:
		c.released.Add(1)
	}
}

// Fail records an attempt that left an intent unresolved.
func (c *Counters) Fail() {
	if c != nil {
		c.failed.Add(1)
	}
}

// PaymentsConfig configures Payments.
type PaymentsConfig struct {
	Store store.Store
	Rail  Remote
	// Now is the clock of leases; time.Now when nil.
	Now func() time.Time
	// Lease is how long one attempt holds an intent before another may
	// take it over; DefaultLease when 0. It should outlast the remote
	// calls of one attempt.
	Lease time.Duration
	// Exclusive says that no other process shares the store (badger):
	// at start-up (Recover) every lease is a dead process's.
	Exclusive bool
	// Counters counts outcomes; one of its own when nil.
	Counters *Counters
	// Fault, when set, is called at each named point a collection
	// passes (FaultBeforeIntent, FaultAfterIntent, FaultAfterCommit); a
	// test's hook may end the process there.
	Fault func(point string)
}

// DefaultLease is how long an attempt holds an intent by default: the
// facilitator's calls time out after 30 s each.
const DefaultLease = 2 * time.Minute

// Payments is the intent discipline of a Remote rail for one service:
// every collection is recorded as an intent before the money crosses,
// and its purpose is completed in the transaction that resolves the
// intent (Pay); an intent that a crash or a lost answer left unresolved
// is resolved by Resolve (every tick) and Recover (start-up), by asking
// the rail what happened. It is safe for concurrent use, and several
// nodes sharing a store may each run one.
type Payments struct {
	st        store.Store
	r         Remote
	now       func() time.Time
	lease     time.Duration
	exclusive bool
	owner     string
	attempts  atomic.Int64
	ops       map[string]Completer
	count     *Counters
	fault     func(string)
}

// NewPayments returns the Payments of cfg.Rail.
func NewPayments(cfg PaymentsConfig) *Payments {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := &Payments{st: cfg.Store, r: cfg.Rail, now: cfg.Now, lease: cfg.Lease, exclusive: cfg.Exclusive, owner: hex.EncodeToString(b[:]),
		ops: map[string]Completer{}, count: cfg.Counters, fault: cfg.Fault}
	if p.now == nil {
		p.now = time.Now
	}
	if p.lease <= 0 {
		p.lease = DefaultLease
	}
	if p.count == nil {
		p.count = &Counters{}
	}
	if p.fault == nil {
		p.fault = func(string) {}
	}
	return p
}

// Handle registers c as the completer of purpose op. Register every op
// before the first Pay or Resolve.
func (p *Payments) Handle(op string, c Completer) { p.ops[op] = c }

// Rail returns the rail the payments cross.
func (p *Payments) Rail() Remote { return p.r }

// Counters returns the counts of outcomes.
func (p *Payments) Counters() *Counters { return p.count }

// newLease is the lease of a new attempt: its owner names this process
// and the attempt, so that two attempts in one process exclude each other
// as attempts in two do.
func (p *Payments) newLease() Lease {
	return Lease{Owner: fmt.Sprintf("%s.%d", p.owner, p.attempts.Add(1)), Until: p.now().Add(p.lease)}
}

// Pay collects payment pay for purpose and completes the purpose: the
// intent is claimed (Remote.Begin), the money moved (Remote.Settle), and
// the purpose's completer records both in one transaction. A payment sent
// again for the same purpose answers the first one's result, once it is
// known; sent for another purpose it is refused (payment_replayed).
//
// # Errors
//
// Begin's refusals; the refusal of a payment the rail would not settle
// (nothing moved); the completer's coded error, after the money was paid
// back (its message names the refund); payment_pending (503) when the
// outcome is not known yet: sending the same payment again answers it
// once a tick has resolved it.
func (p *Payments) Pay(ctx context.Context, pay Payment, purpose Purpose) (idem.Reply, error) {
	p.fault(FaultBeforeIntent)
	in, claimed, err := p.r.Begin(ctx, pay, purpose, p.newLease())
	if err != nil {
		return idem.Reply{}, err
	}
	switch claimed {
	case ClaimedResolved:
		return in.Result.Answer()
	case ClaimedBusy:
		return idem.Reply{}, pending(in, errors.New("another request is settling it now"))
	case ClaimedNew:
		p.fault(FaultAfterIntent)
	}
	return p.drive(context.WithoutCancel(ctx), in, claimed == ClaimedNew)
}

// Again answers a payment sent again: when pay's proof is a payment that
// already has an intent, it is handled as Pay handles it (its result, or
// its resolution now), and found is true; otherwise nothing is done, and
// the caller goes on as with a new payment. A request calls it before
// the checks a new payment must pass, so that a payment sent again
// answers its first result even when those checks would now refuse (the
// listing is bought, the authorization has expired).
// purpose makes the purpose from the intent found (its amount).
func (p *Payments) Again(ctx context.Context, pay Payment, purpose func(Intent) Purpose) (rep idem.Reply, found bool, err error) {
	if pay.Proof == "" {
		return idem.Reply{}, false, nil
	}
	in, err := p.r.Find(ctx, pay.Proof)
	if errors.Is(err, store.ErrNotFound) {
		return idem.Reply{}, false, nil
	} else if err != nil {
		return idem.Reply{}, true, err
	}
	pay.Amount, pay.Currency = in.Amount, in.Currency
	rep, err = p.Pay(ctx, pay, purpose(in))
	return rep, true, err
}

// pending is the error of a payment whose outcome is not known yet.
func pending(in Intent, cause error) error {
	return &fault.Error{Kind: fault.Unavailable, Code: ECodePaymentPending,
		Message: "the outcome of this payment (" + in.ID + ") is not known yet; it is resolved on the next tick: send the same payment again for its result",
		Err:     cause}
}

// drive settles in and completes its purpose.
func (p *Payments) drive(ctx context.Context, in Intent, fresh bool) (idem.Reply, error) {
	ref, settled, err := p.r.Settle(ctx, in, fresh)
	var refused *Refused
	if errors.As(err, &refused) {
		_, terr := p.update(ctx, in, []string{StatePending}, &in, func(_ store.Tx, c *Intent) error {
			c.State, c.Error = StateReleased, refused.Err.Error()
			return nil
		})
		if terr != nil {
			return p.settledElsewhere(in, terr)
		}
		p.count.Count(StateReleased)
		return idem.Reply{}, refused.Err
	}
	if err != nil {
		p.unlease(ctx, in, err)
		return idem.Reply{}, pending(in, err)
	}
	in.Ref, in.Settled = ref, &settled
	return p.complete(ctx, in)
}

// settledElsewhere answers a request whose transition found the intent
// taken over: the result another attempt recorded, or payment_pending.
func (p *Payments) settledElsewhere(in Intent, err error) (idem.Reply, error) {
	var r *Resolved
	if errors.As(err, &r) && !r.Intent.Unresolved() && r.Intent.Result != nil {
		return r.Intent.Result.Answer()
	}
	return idem.Reply{}, pending(in, err)
}

// complete runs in's purpose, in whose transaction the intent resolves.
func (p *Payments) complete(ctx context.Context, in Intent) (idem.Reply, error) {
	c, ok := p.ops[in.Purpose.Op]
	if !ok {
		err := fmt.Errorf("payment %s settled as %s and no operation completes its purpose %q: credit it by hand", in.ID, in.Ref, in.Purpose.Op)
		p.unlease(ctx, in, err)
		return idem.Reply{}, pending(in, err)
	}
	done := func(tx store.Tx, rep idem.Reply) error {
		_, err := Transition(tx, in.Rail, in.ID, []string{StatePending}, nil, p.now().UTC(), func(tx store.Tx, c *Intent) error {
			c.State, c.Ref, c.Settled, c.Result, c.Error = StateDone, in.Ref, in.Settled, resultOf(rep, nil), ""
			return p.r.Record(tx, *c)
		})
		return err
	}
	rep, err := c(ctx, in, done)
	if err == nil && !rep.Replayed {
		p.fault(FaultAfterCommit)
		p.count.Count(StateDone)
		return rep, nil
	}
	var resolved *Resolved
	_, coded := fault.As(err)
	switch {
	case errors.As(err, &resolved):
		return p.settledElsewhere(in, err)
	case errors.Is(err, store.ErrCommitUnknown):
		p.unlease(ctx, in, err)
		return idem.Reply{}, pending(in, err)
	case coded || err == nil:
		// Refused, or answered by a reply an earlier request stored,
		// which recorded a payment of its own: pay this one back.
		return p.refund(ctx, in, rep, err)
	}
	p.unlease(ctx, in, err)
	return idem.Reply{}, pending(in, err)
}

// refund pays back a collection that settled and whose purpose was
// refused with cause (or answered by an earlier request's rep): the
// intent turns refunding first, so that no later attempt completes the
// purpose of money on its way back.
func (p *Payments) refund(ctx context.Context, in Intent, rep idem.Reply, cause error) (idem.Reply, error) {
	cur, err := p.update(ctx, in, []string{StatePending}, nil, func(tx store.Tx, c *Intent) error {
		c.State, c.Ref, c.Settled, c.Result = StateRefunding, in.Ref, in.Settled, resultOf(rep, cause)
		return p.r.Record(tx, *c)
	})
	if err != nil {
		var r *Resolved
		if !errors.As(err, &r) {
			p.unlease(ctx, in, err)
		}
		return p.settledElsewhere(in, err)
	}
	return p.payBack(ctx, cur)
}

// payBack refunds a refunding intent on the rail and records it.
func (p *Payments) payBack(ctx context.Context, in Intent) (idem.Reply, error) {
	back, err := p.r.Refund(ctx, in.Ref, in.Amount)
	if err != nil {
		p.unlease(ctx, in, err)
		return idem.Reply{}, fault.Wrap(fault.Internal, ECodeRailFailed,
			fmt.Errorf("payment %s settled as %s, its request was refused (%s), and its refund is owed: the next tick pays it: %w", in.ID, in.Ref, in.Result.Code, err))
	}
	cur, err := p.update(ctx, in, []string{StateRefunding}, nil, func(_ store.Tx, c *Intent) error {
		c.State, c.RefundRef = StateRefunded, back
		if c.Result != nil && c.Result.Code != "" {
			c.Result.Message += "; the payment " + in.Ref + " was refunded as " + back
		}
		return nil
	})
	if err != nil {
		return p.settledElsewhere(in, err)
	}
	p.count.Count(StateRefunded)
	return cur.Result.Answer()
}

// update runs Transition on in's intent in a transaction of its own.
func (p *Payments) update(ctx context.Context, in Intent, from []string, held *Intent, change func(store.Tx, *Intent) error) (Intent, error) {
	var cur Intent
	err := p.st.Update(ctx, func(tx store.Tx) error {
		var err error
		cur, err = Transition(tx, in.Rail, in.ID, from, held, p.now().UTC(), change)
		return err
	})
	return cur, err
}

// unlease gives up an attempt that could not resolve in: its lease ends
// now, so that the next tick takes it up, and the error is kept for the
// operator.
func (p *Payments) unlease(ctx context.Context, in Intent, cause error) {
	p.count.Fail()
	_, _ = p.update(context.WithoutCancel(ctx), in, []string{StatePending, StateRefunding}, &in, func(_ store.Tx, c *Intent) error {
		c.Lease, c.Error = Lease{}, cause.Error()
		return nil
	})
}

// Resolution is what one pass over the unresolved intents did.
type Resolution struct {
	// Done, Refunded and Released count the intents resolved so.
	Done     int `json:"done"`
	Refunded int `json:"refunded"`
	Released int `json:"released"`
	// Unresolved counts those still unresolved: the rail could not tell
	// what happened, a live attempt held them, or they are refunds and
	// payouts, which what owes them resolves.
	Unresolved int `json:"unresolved"`
}

// Resolve resolves every unresolved collection whose lease has run out:
// what settled has its purpose completed once (or is paid back when the
// purpose is refused), what never settled and never will is released,
// and what the rail cannot tell about stays for the next call. A tick
// calls it.
//
// # Errors
//
// A store error; the failures of single intents are counted, not
// returned.
func (p *Payments) Resolve(ctx context.Context) (Resolution, error) { return p.resolve(ctx, false) }

// Recover is Resolve at start-up: on a store no other process shares
// (PaymentsConfig.Exclusive) every lease is a dead process's and is taken
// over at once.
func (p *Payments) Recover(ctx context.Context) (Resolution, error) {
	return p.resolve(ctx, p.exclusive)
}

func (p *Payments) resolve(ctx context.Context, force bool) (Resolution, error) {
	var res Resolution
	open, err := Unresolved(ctx, p.st, p.r.Name(), 0)
	if err != nil {
		return res, err
	}
	for _, in := range open {
		if in.Kind != IntentCollect {
			// What owes a refund or payout resolves it (the market pays
			// back what it owes on every tick); at start-up a dead
			// attempt's lease is ended, so that it can.
			if force {
				err := p.st.Update(ctx, func(tx store.Tx) error {
					_, err := Transition(tx, in.Rail, in.ID, []string{StatePending}, nil, p.now().UTC(), func(_ store.Tx, c *Intent) error {
						c.Lease = Lease{}
						return nil
					})
					var r *Resolved
					if errors.As(err, &r) {
						return nil
					}
					return err
				})
				if err != nil {
					return res, err
				}
			}
			res.Unresolved++
			continue
		}
		var took bool
		err := p.st.Update(ctx, func(tx store.Tx) error {
			var err error
			in, took, err = Take(tx, in.Rail, in.ID, p.newLease(), p.now().UTC(), force)
			return err
		})
		if err != nil {
			return res, err
		}
		if !took {
			if in.Unresolved() {
				res.Unresolved++
			}
			continue
		}
		if in.State == StateRefunding {
			_, _ = p.payBack(ctx, in)
		} else {
			_, _ = p.drive(ctx, in, false)
		}
		after, err := p.load(ctx, in)
		if err != nil {
			return res, err
		}
		switch after.State {
		case StateDone:
			res.Done++
		case StateRefunded:
			res.Refunded++
		case StateReleased:
			res.Released++
		default:
			res.Unresolved++
		}
	}
	return res, nil
}

func (p *Payments) load(ctx context.Context, in Intent) (Intent, error) {
	var cur Intent
	err := p.st.View(ctx, func(tx store.Tx) error {
		var err error
		cur, err = LoadIntent(tx, in.Rail, in.ID)
		return err
	})
	return cur, err
}

// Unresolved returns the unresolved intents of rail r, oldest first, at
// most limit of them (0: all).
func Unresolved(ctx context.Context, st store.Store, r string, limit int) ([]Intent, error) {
	var out []Intent
	err := st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		prefix := OpenPrefix(r)
		return tx.Scan(prefix, false, func(k string, _ []byte) error {
			in, err := LoadIntent(tx, r, k[len(prefix):])
			if errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			out = append(out, in)
			return nil
		})
	})
	sortByCreated(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// CountUnresolved counts rail r's unresolved intents, by reading only
// their index.
func CountUnresolved(ctx context.Context, st store.Store, r string) (int, error) {
	n := 0
	err := st.View(ctx, func(tx store.Tx) error {
		n = 0
		return tx.Scan(OpenPrefix(r), false, func(string, []byte) error { n++; return nil })
	})
	return n, err
}

func sortByCreated(ins []Intent) {
	slices.SortStableFunc(ins, func(a, b Intent) int { return a.Created.Compare(b.Created) })
}
