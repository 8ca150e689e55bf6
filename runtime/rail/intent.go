package rail

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// An Intent is a payment about to cross a rail that settles on a remote
// system (x402: a facilitator and a chain). The rail records it in the
// store before the first remote call, and it stays unresolved until what
// happened remotely is known and recorded locally: the money moved and
// its purpose was completed (a deposit credited, a purchase made) in the
// transaction that resolved the intent, or it moved and was paid back,
// or it never moved and never will. A process that dies at any point
// leaves an intent that says what to find out; RATIONALE.md walks
// through each point.
type Intent struct {
	// ID names the intent on its rail; with Rail it is its store key
	// (IntentKey). x402 names a payment by its payer and its
	// authorization's nonce, so that one signed payment has one intent.
	ID   string `json:"id"`
	Rail string `json:"rail"`
	// Kind is IntentCollect, IntentRefund or IntentPayout.
	Kind  string `json:"kind"`
	State string `json:"state"`
	// Payment is the Payment.ID the intent was made for.
	Payment string `json:"payment"`
	Agent   string `json:"agent,omitempty"`
	// Party is the address on the rail: the payer of a collection, the
	// payee of a refund or a payout.
	Party    string  `json:"party"`
	Amount   int64   `json:"amount"`
	Currency string  `json:"currency"`
	Purpose  Purpose `json:"purpose"`
	// Ref is the rail's reference of the settlement, once it is known;
	// Settled what the rail says of it.
	Ref     string   `json:"ref,omitempty"`
	Settled *Settled `json:"settled,omitempty"`
	// RefundRef is the reference of the refund of a collection whose
	// purpose was refused after it settled.
	RefundRef string `json:"refund_ref,omitempty"`
	// Result is what the purpose answered, once resolved: a re-sent
	// payment answers it again.
	Result   *Result `json:"result,omitempty"`
	Lease    Lease   `json:"lease,omitzero"`
	Attempts int     `json:"attempts"`
	// Error says why the last attempt left the intent unresolved.
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Remote is the rail's own record of what to settle or ask about
	// (x402: the signed authorization and what it was checked against).
	Remote json.RawMessage `json:"remote,omitempty"`
}

// Intent kinds.
const (
	IntentCollect = "collect" // money in: a payment settled for a purpose
	IntentRefund  = "refund"  // money back to the address that paid
	IntentPayout  = "payout"  // money out to an agent's address
)

// Intent states. Pending and refunding are unresolved.
const (
	StatePending   = "pending"   // recorded before the remote call; what happened there is not known yet
	StateDone      = "done"      // settled, and its purpose completed in the same transaction as this state
	StateRefunding = "refunding" // settled, its purpose refused: the money is being paid back
	StateRefunded  = "refunded"  // settled and paid back
	StateReleased  = "released"  // never settled and never will: nothing moved
)

// Unresolved reports whether the intent still waits for an outcome.
func (in Intent) Unresolved() bool { return in.State == StatePending || in.State == StateRefunding }

// Purpose is what a collection pays for: the operation that completes
// it once the money moved, and that operation's arguments.
type Purpose struct {
	// Op names the operation (Payments.Handle), e.g. market.deposit.
	Op string `json:"op"`
	// Key says what is paid for: the same payment sent again for the same
	// Key answers the intent's result; sent for another, it is refused.
	Key  string          `json:"key"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Lease is who drives an unresolved intent now, and until when. A
// process that dies leaves its lease to run out; another then takes the
// intent over.
type Lease struct {
	Owner string    `json:"owner,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// live reports whether the lease is held at now by another owner than me.
func (l Lease) live(me string, now time.Time) bool {
	return l.Owner != "" && l.Owner != me && now.Before(l.Until)
}

// Result is an intent's answer: the reply its purpose made, or the coded
// error it ended with.
type Result struct {
	Body    json.RawMessage `json:"body,omitempty"`
	Created bool            `json:"created,omitempty"`
	Kind    fault.Kind      `json:"kind,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
}

// resultOf is the Result of a reply or of a coded error.
func resultOf(rep idem.Reply, err error) *Result {
	if err != nil {
		f, ok := fault.As(err)
		if !ok {
			f = &fault.Error{Kind: fault.Internal, Code: "internal", Message: err.Error()}
		}
		return &Result{Kind: f.Kind, Code: f.Code, Message: f.Message}
	}
	return &Result{Body: rep.Body, Created: rep.Created}
}

// Answer is the result as a request answers it again: the reply, marked
// replayed, or the error.
func (r *Result) Answer() (idem.Reply, error) {
	if r == nil {
		return idem.Reply{}, fault.New(fault.Conflict, ECodePaymentReplayed, "this payment was already used; sign a new payment")
	}
	if r.Code != "" {
		return idem.Reply{}, &fault.Error{Kind: r.Kind, Code: r.Code, Message: r.Message}
	}
	return idem.Reply{Body: r.Body, Created: r.Created, Replayed: true}, nil
}

// Codes of a payment whose intent is not resolved.
const (
	// ECodePaymentPending (503): the payment's outcome is not known yet;
	// sending the same payment again answers its result once it is.
	ECodePaymentPending = "payment_pending"
	// ECodePaymentReplayed (409): the payment was used for something
	// else.
	ECodePaymentReplayed = "payment_replayed"
)

// IntentKey is the store key of the intent id on rail r.
func IntentKey(r, id string) string { return "rail/" + r + "/" + id }

// openKey indexes the unresolved intents of rail r.
func openKey(r, id string) string { return "rail/" + r + "/open/" + id }

// OpenPrefix starts the index of rail r's unresolved intents.
func OpenPrefix(r string) string { return "rail/" + r + "/open/" }

// LoadIntent reads intent id of rail r in tx.
//
// # Errors
//
// store.ErrNotFound when there is none.
func LoadIntent(tx store.Tx, r, id string) (Intent, error) {
	var in Intent
	err := store.GetJSON(tx, IntentKey(r, id), &in)
	return in, err
}

// SaveIntent writes in, and keeps the index of unresolved intents
// (rail/<rail>/open/<id>) in step with its state.
func SaveIntent(tx store.Tx, in Intent) error {
	if in.ID == "" || in.Rail == "" {
		return errors.New("rail: an intent needs an id and a rail")
	}
	if err := store.SetJSON(tx, IntentKey(in.Rail, in.ID), in); err != nil {
		return err
	}
	if in.Unresolved() {
		return tx.Set(openKey(in.Rail, in.ID), nil)
	}
	return tx.Delete(openKey(in.Rail, in.ID))
}

// Claimed says what Claim found.
type Claimed int

// What Claim found.
const (
	// ClaimedNew: the intent was recorded, pending and leased to its
	// owner: drive it.
	ClaimedNew Claimed = iota
	// ClaimedAgain: the same payment's intent, unresolved, is now leased
	// to the caller: resume it.
	ClaimedAgain
	// ClaimedBusy: the same payment's intent is being driven by a live
	// attempt elsewhere.
	ClaimedBusy
	// ClaimedResolved: the same payment's intent is resolved; its Result
	// is the answer.
	ClaimedResolved
)

// ErrOtherPurpose is Claim's error for a payment whose intent was made
// for another purpose.
var ErrOtherPurpose = errors.New("rail: the payment's intent was made for another purpose")

// Claim records in, a new intent leased to in.Lease.Owner, unless the
// payment already has one that is not released: then it answers that one,
// leased to the caller when it is unresolved and no live attempt holds it.
// A released intent moved nothing, so its payment may be sent again, for
// any purpose.
//
// # Errors
//
// ErrOtherPurpose when the payment's intent is for another purpose.
func Claim(tx store.Tx, in Intent, now time.Time) (Intent, Claimed, error) {
	cur, err := LoadIntent(tx, in.Rail, in.ID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && cur.State == StateReleased):
		in.State, in.Attempts, in.Created, in.Updated = StatePending, 1, now, now
		return in, ClaimedNew, SaveIntent(tx, in)
	case err != nil:
		return Intent{}, 0, err
	case cur.Purpose.Key != in.Purpose.Key:
		return cur, 0, ErrOtherPurpose
	case !cur.Unresolved():
		return cur, ClaimedResolved, nil
	case cur.Lease.live(in.Lease.Owner, now):
		return cur, ClaimedBusy, nil
	}
	cur.Lease, cur.Attempts, cur.Updated = in.Lease, cur.Attempts+1, now
	return cur, ClaimedAgain, SaveIntent(tx, cur)
}

// Take leases the unresolved intent id of rail r to lease.Owner, when no
// live attempt of another owner holds it (or force: the caller knows
// every other owner is dead). It answers the intent as leased, and
// whether it took it.
func Take(tx store.Tx, r, id string, lease Lease, now time.Time, force bool) (Intent, bool, error) {
	cur, err := LoadIntent(tx, r, id)
	if errors.Is(err, store.ErrNotFound) {
		return Intent{}, false, nil
	} else if err != nil {
		return Intent{}, false, err
	}
	if !cur.Unresolved() || (!force && cur.Lease.live(lease.Owner, now)) {
		return cur, false, nil
	}
	cur.Lease, cur.Attempts, cur.Updated = lease, cur.Attempts+1, now
	return cur, true, SaveIntent(tx, cur)
}

// Resolved is the error of a transition that found the intent already
// resolved by another attempt: its Intent holds what that attempt
// recorded.
type Resolved struct{ Intent Intent }

func (e *Resolved) Error() string {
	return fmt.Sprintf("rail: intent %s was already resolved (%s)", e.Intent.ID, e.Intent.State)
}

// Transition rewrites the intent id of rail r in tx with change, when its
// state is one of from; held also requires that the caller's attempt
// (owner and attempt number) still holds its lease, which a transition
// that decides nothing moved needs, so that it never undoes what a later
// attempt did.
//
// # Errors
//
// *Resolved when the intent is in another state, or is held by another
// attempt.
func Transition(tx store.Tx, r, id string, from []string, held *Intent, now time.Time, change func(tx store.Tx, in *Intent) error) (Intent, error) {
	cur, err := LoadIntent(tx, r, id)
	if err != nil {
		return Intent{}, err
	}
	ok := false
	for _, s := range from {
		ok = ok || cur.State == s
	}
	if held != nil && (cur.Lease.Owner != held.Lease.Owner || cur.Attempts != held.Attempts) {
		ok = false
	}
	if !ok {
		return cur, &Resolved{Intent: cur}
	}
	if err := change(tx, &cur); err != nil {
		return cur, err
	}
	cur.Updated = now
	if !cur.Unresolved() {
		cur.Lease = Lease{}
	}
	return cur, SaveIntent(tx, cur)
}
