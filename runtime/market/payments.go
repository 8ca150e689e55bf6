package market

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
)

// The market's payments on a rail that settles remotely (x402) go
// through the rail's intents (rail.Payments): a deposit or a purchase
// paid by the request's own payment is recorded as an intent before the
// facilitator is called, and the deposit's posting or the purchase is
// committed in the transaction that resolves the intent. These are the
// operations that complete them, for the live request and again for the
// resolution of an intent a crash or a lost answer left unresolved.
const (
	opDeposit  = "market.deposit"
	opPurchase = "market.purchase"
)

// depositArgs are what completes a paid deposit.
type depositArgs struct {
	ID     string       `json:"id"` // the deposit's posting
	Agent  string       `json:"agent"`
	Amount USD          `json:"amount_usd"`
	Idem   idem.Request `json:"idem,omitzero"`
}

// purchaseArgs are what completes a paid purchase.
type purchaseArgs struct {
	Listing string          `json:"listing"`
	Agent   string          `json:"agent"`
	Purpose string          `json:"purpose,omitempty"`
	ID      string          `json:"purchase_id"`
	Amount  USD             `json:"amount_usd"`
	Actor   principal.Actor `json:"actor"`
	Idem    idem.Request    `json:"idem,omitzero"`
}

// newPayments returns the intents of a rail that settles remotely, with
// the market's operations registered; nil on any other rail.
func (s *Service) newPayments(cfg rail.PaymentsConfig) *rail.Payments {
	r, ok := s.rail.(rail.Remote)
	if !ok {
		return nil
	}
	cfg.Store, cfg.Rail, cfg.Now = s.st, r, s.now
	p := rail.NewPayments(cfg)
	p.Handle(opDeposit, s.completeDeposit)
	p.Handle(opPurchase, s.completePurchase)
	return p
}

// payFor collects p for purpose op on the rail's intents and completes
// it; without a payment it answers what to pay.
func (s *Service) payFor(ctx context.Context, p rail.Payment, op, key string, args any) (Reply, error) {
	if p.Proof == "" {
		return Reply{}, s.pay.Rail().(rail.Asker).Ask(p)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return Reply{}, err
	}
	return s.pay.Pay(ctx, p, rail.Purpose{Op: op, Key: key, Args: b})
}

// payAgain answers a payment the request presents that was sent before
// (rail.Payments.Again): its first result, whatever a new payment's
// checks would say now; found is false for a new payment.
func (s *Service) payAgain(ctx context.Context, p rail.Payment, op, key string, args func(amount USD) any) (Reply, bool, error) {
	if s.pay == nil || p.Proof == "" {
		return Reply{}, false, nil
	}
	return s.pay.Again(ctx, p, func(in rail.Intent) rail.Purpose {
		b, _ := json.Marshal(args(USD(in.Amount)))
		return rail.Purpose{Op: op, Key: key, Args: b}
	})
}

func (s *Service) completeDeposit(ctx context.Context, in rail.Intent, done rail.Done) (Reply, error) {
	var a depositArgs
	if err := json.Unmarshal(in.Purpose.Args, &a); err != nil {
		return Reply{}, fmt.Errorf("market: intent %s: %w", in.ID, err)
	}
	return s.deposit(ctx, a.Agent, a.Amount, a.ID, in.Ref, in.Settled, s.now().UTC(), a.Idem, done)
}

func (s *Service) completePurchase(ctx context.Context, in rail.Intent, done rail.Done) (Reply, error) {
	var a purchaseArgs
	if err := json.Unmarshal(in.Purpose.Args, &a); err != nil {
		return Reply{}, fmt.Errorf("market: intent %s: %w", in.ID, err)
	}
	pay := &paid{ref: in.Ref, settled: in.Settled, amount: a.Amount}
	return s.buy(ctx, a.Actor, a.Listing, PurchaseRequest{Agent: a.Agent, Purpose: a.Purpose}, a.Idem, a.ID, s.now().UTC(), pay, done)
}

// Recover resolves, at start-up, what a crash left unresolved on a rail
// that settles remotely: every pending payment is found out and
// completed once or released (rail.Payments.Recover), and every refund
// and withdrawal owed is paid (PayBack, PayOut); Unresolved counts what
// is left. On another rail it does nothing.
//
// # Errors
//
// A store error; payments and refunds that cannot be resolved now are
// left for the next tick, and counted.
func (s *Service) Recover(ctx context.Context) (rail.Resolution, error) {
	if s.pay == nil {
		return rail.Resolution{}, nil
	}
	res, err := s.pay.Recover(ctx)
	if err != nil {
		return res, err
	}
	_, backErr := s.PayBack(ctx)
	_, outErr := s.PayOut(ctx)
	n, err := rail.CountUnresolved(ctx, s.st, s.rail.Name())
	if err != nil {
		return res, err
	}
	res.Unresolved = n
	return res, firstOf(backErr, outErr)
}

// Intents counts how the payment intents ended since start (nil: the
// rail keeps none).
func (s *Service) Intents() *rail.Counters {
	if s.pay == nil {
		return nil
	}
	return s.pay.Counters()
}

// IntentView is an unresolved payment intent as the operator sees it.
type IntentView struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	State   string `json:"state"`
	Payment string `json:"payment"`
	Agent   string `json:"agent,omitempty"`
	// Party is the address that pays (a collection) or is paid (a
	// refund or payout).
	Party     string `json:"party"`
	AmountUSD USD    `json:"amount_usd"`
	// Operation and Key say what the payment is for.
	Operation string `json:"operation,omitempty"`
	Key       string `json:"key"`
	Ref       string `json:"ref,omitempty"`
	Attempts  int    `json:"attempts"`
	// Error is why the last attempt left it unresolved.
	Error       string    `json:"error,omitempty"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	LeasedUntil time.Time `json:"leased_until,omitzero"`
}

// UnresolvedIntents is the operator's list of payments whose outcome is
// not settled yet.
type UnresolvedIntents struct {
	Rail    string       `json:"rail"`
	Count   int          `json:"count"`
	Intents []IntentView `json:"intents"`
}

// MaxIntents bounds the list Unresolved answers.
const MaxIntents = 1000

// Unresolved lists, oldest first, the payment intents not yet resolved
// on the market's rail (none on a rail that settles locally), at most
// limit (1 to MaxIntents; 0 is MaxIntents); Count is how many there are
// in all.
//
// # Errors
//
// invalid_limit (400).
func (s *Service) Unresolved(ctx context.Context, limit int) (UnresolvedIntents, error) {
	out := UnresolvedIntents{Rail: s.rail.Name(), Intents: []IntentView{}}
	if limit < 0 || limit > MaxIntents {
		return out, fault.New(fault.Invalid, ECodeInvalidLimit, "limit is 0 to %d", MaxIntents)
	}
	if limit == 0 {
		limit = MaxIntents
	}
	if _, ok := s.rail.(rail.Remote); !ok {
		return out, nil
	}
	all, err := rail.Unresolved(ctx, s.st, s.rail.Name(), 0)
	if err != nil {
		return out, err
	}
	out.Count = len(all)
	for _, in := range all[:min(limit, len(all))] {
		out.Intents = append(out.Intents, IntentView{ID: in.ID, Kind: in.Kind, State: in.State, Payment: in.Payment, Agent: in.Agent, Party: in.Party,
			AmountUSD: USD(in.Amount), Operation: in.Purpose.Op, Key: in.Purpose.Key, Ref: in.Ref, Attempts: in.Attempts, Error: in.Error,
			Created: in.Created, Updated: in.Updated, LeasedUntil: in.Lease.Until})
	}
	return out, nil
}
