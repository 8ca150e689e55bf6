package x402

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/store"
)

// Account is the ledger account of the x402 rail.
const Account = "rail:x402"

// RefPrefix begins every reference the rail answers: "x402:" and the
// facilitator's transaction.
const RefPrefix = "x402:"

// Config configures a Rail.
type Config struct {
	// Store is the shared store: nonces claimed there are refused on
	// every node that shares it, and after a restart.
	Store store.Store
	// Facilitator verifies and settles.
	Facilitator *Client
	// Network (CAIP-2) and Asset (an EIP-3009 token's contract); Base
	// Sepolia and its USDC when empty. Name and Version are the asset's
	// EIP-712 domain; USDC's ("USDC", "2") when empty.
	Network, Asset, Name, Version string
	// PayTo receives payments; the operator's address when empty.
	PayTo string
	// Operator signs refunds and payouts: transfers from its address.
	// Nil: refunds and payouts fail, and the rail says so.
	Operator *ecdsa.PrivateKey
	// Timeout is how long a client has to pay (maxTimeoutSeconds); 5
	// minutes when 0.
	Timeout time.Duration
	// Currency is the ledger currency whose minor unit is one unit of the
	// asset (USDC has 6 decimals: one micro-USD); required.
	Currency string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Chain, when set, is asked whether an authorization's nonce was used
	// when the facilitator's answer is not known: the exact way to
	// resolve a payment a crash or a lost answer left pending. Without
	// it the facilitator is asked to settle the payment again.
	Chain Chain
	// Lease is how long one attempt holds an intent; rail.DefaultLease
	// when 0.
	Lease time.Duration
	// Counters counts how the rail's own intents (refunds, payouts) end;
	// nil counts nothing.
	Counters *rail.Counters
	// Fault, when set, is called at the named points the rail passes
	// (rail.FaultAfterVerify, rail.FaultAfterSettle and the refund's);
	// a test's hook may end the process there.
	Fault func(point string)
}

// Name is the rail's name, and the store's name for its intents
// (rail/x402/…).
const Name = "x402"

// Rail is the x402 rail. It is safe for concurrent use.
type Rail struct {
	cfg      Config
	payTo    common.Address
	owner    string // names this process's attempts in the intents' leases
	attempts atomic.Int64
}

// Interface guard.
var _ rail.Asker = (*Rail)(nil)

// New returns a Rail.
func New(cfg Config) (*Rail, error) {
	if cfg.Store == nil || cfg.Facilitator == nil || cfg.Currency == "" {
		return nil, errors.New("x402: Config.Store, Config.Facilitator and Config.Currency are required")
	}
	if cfg.Network == "" {
		cfg.Network = BaseSepolia
	}
	if _, err := ChainID(cfg.Network); err != nil {
		return nil, fmt.Errorf("x402: %w", err)
	}
	if cfg.Asset == "" {
		cfg.Asset = DefaultAsset(cfg.Network)
	}
	if !ValidAddress(cfg.Asset) {
		return nil, fmt.Errorf("x402: asset %q is not an address (no default asset on %s)", cfg.Asset, cfg.Network)
	}
	if cfg.Name == "" {
		cfg.Name = USDCName
	}
	if cfg.Version == "" {
		cfg.Version = USDCVersion
	}
	r := &Rail{cfg: cfg}
	switch {
	case cfg.PayTo != "":
		if !ValidAddress(cfg.PayTo) {
			return nil, fmt.Errorf("x402: pay-to %q is not an address", cfg.PayTo)
		}
		r.payTo = common.HexToAddress(cfg.PayTo)
	case cfg.Operator != nil:
		r.payTo = crypto.PubkeyToAddress(cfg.Operator.PublicKey)
	default:
		return nil, errors.New("x402: a pay-to address or an operator key is required")
	}
	if r.cfg.Timeout <= 0 {
		r.cfg.Timeout = 5 * time.Minute
	}
	if r.cfg.Now == nil {
		r.cfg.Now = time.Now
	}
	if r.cfg.Lease <= 0 {
		r.cfg.Lease = rail.DefaultLease
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	r.owner = "x402-" + hex.EncodeToString(b[:])
	return r, nil
}

// Name implements rail.Rail.
func (*Rail) Name() string { return Name }

// Account implements rail.Rail.
func (*Rail) Account() string { return Account }

// PayTo returns the address payments go to.
func (r *Rail) PayTo() common.Address { return r.payTo }

// Operator returns the address refunds and payouts come from, and whether
// the rail has the operator's key.
func (r *Rail) Operator() (common.Address, bool) {
	if r.cfg.Operator == nil {
		return common.Address{}, false
	}
	return crypto.PubkeyToAddress(r.cfg.Operator.PublicKey), true
}

// requirements is what paying amount to to means on this rail.
func (r *Rail) requirements(amount int64, to common.Address) Requirements {
	return Requirements{Scheme: SchemeExact, Network: r.cfg.Network, Amount: strconv.FormatInt(amount, 10), Asset: common.HexToAddress(r.cfg.Asset).Hex(),
		PayTo: to.Hex(), MaxTimeoutSeconds: int64(r.cfg.Timeout / time.Second), Extra: map[string]any{"name": r.cfg.Name, "version": r.cfg.Version}}
}

// Required is what a client must pay for p: x402's PaymentRequired.
func (r *Rail) Required(p rail.Payment, why string) Required {
	return Required{X402Version: Version, Error: why, Resource: Resource{URL: p.Resource, Description: p.Description, MimeType: "application/json"},
		Accepts: []Requirements{r.requirements(p.Amount, r.payTo)}}
}

// Ask implements rail.Asker.
func (r *Rail) Ask(p rail.Payment) error { return r.ask(p, nil) }

func (r *Rail) ask(p rail.Payment, cause error) error {
	why := "PAYMENT-SIGNATURE header is required"
	if cause != nil {
		why = cause.Error()
	} else {
		cause = fault.New(fault.Conflict, CodePaymentRequired, "this must be paid first: $%s in %s units of %s on %s, to %s (x402 v2, exact scheme); send the payment in the PAYMENT-SIGNATURE header",
			usd(p.Amount), strconv.FormatInt(p.Amount, 10), r.cfg.Name, r.cfg.Network, r.payTo.Hex())
	}
	req := r.Required(p, why)
	h, err := Encode(req)
	if err != nil {
		return err
	}
	return &rail.PaymentRequired{Header: h, Required: req, Err: cause}
}

// claim is what the rail keeps of a collected payment under its
// reference (paymentKey), for its refund and for Settled: which intent it
// settled, who paid and how much. A store written before intents existed
// keeps the same record under the nonce's key.
type claim struct {
	Payment     string    `json:"payment"`
	Agent       string    `json:"agent"`
	Payer       string    `json:"payer"`
	Amount      int64     `json:"amount"`
	Network     string    `json:"network"`
	Transaction string    `json:"transaction,omitempty"`
	At          time.Time `json:"at"`
	Intent      string    `json:"intent,omitempty"`
}

// remote is the rail's part of an intent (rail.Intent.Remote): the signed
// authorization, what it was checked against, and what it paid for.
type remote struct {
	Payload      Payload      `json:"payload"`
	Requirements Requirements `json:"requirements"`
	Resource     string       `json:"resource,omitempty"`
	Description  string       `json:"description,omitempty"`
}

// The ids of intents (rail.IntentKey: rail/x402/<id>): a collection is
// named by its payer and nonce, an outgoing transfer by the operator and
// the nonce derived from its purpose.
func inID(payer common.Address, nonce string) string { return nonceKeyOf("nonce/", payer, nonce) }
func outID(from common.Address, nonce string) string { return nonceKeyOf("out/", from, nonce) }
func paymentKey(ref string) string                   { return "rail/x402/payment/" + ref }
func payerKey(agent string) string {
	return "rail/x402/payer/" + hexutil.Encode(crypto.Keccak256([]byte(agent)))
}

// lease is the lease of a new attempt, named for this process and the
// attempt.
func (r *Rail) lease() rail.Lease {
	return rail.Lease{Owner: fmt.Sprintf("%s.%d", r.owner, r.attempts.Add(1)), Until: r.cfg.Now().Add(r.cfg.Lease)}
}

// load reads an intent, reading a record written before intents existed
// as the intent it stands for: a claimed nonce (a collection, done when
// it names its transaction, pending otherwise) or an outgoing transfer.
func load(tx store.Tx, id string) (rail.Intent, error) {
	b, err := tx.Get(rail.IntentKey(Name, id))
	if err != nil {
		return rail.Intent{}, err
	}
	var in rail.Intent
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("x402: decode intent %s: %w", id, err)
	}
	if in.State != "" {
		return in, nil
	}
	var old struct {
		claim
		Payload *Payload `json:"payload"`
		Ref     string   `json:"ref"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return in, fmt.Errorf("x402: decode %s: %w", id, err)
	}
	in = rail.Intent{ID: id, Rail: Name, Payment: old.Payment, Agent: old.Agent, Party: old.Payer, Amount: old.Amount, Created: old.At, Updated: old.At,
		Kind: rail.IntentCollect, State: rail.StatePending, Purpose: rail.Purpose{Key: "legacy"}}
	switch {
	case old.Payload != nil:
		in.Kind, in.Purpose.Key, in.Ref = rail.IntentRefund, "legacy", old.Ref
		in.Remote, _ = json.Marshal(remote{Payload: *old.Payload, Requirements: old.Payload.Accepted})
		if old.Ref != "" {
			in.State = rail.StateDone
		}
	case old.Transaction != "":
		in.State, in.Ref = rail.StateDone, RefPrefix+old.Transaction
	}
	return in, nil
}

// Collect implements rail.Rail: Begin and Settle, for a payment with no
// purpose to complete but its own collection (the market collects through
// rail.Payments, which completes its purposes). The same payment sent
// again answers the same reference.
//
// # Errors
//
// Begin's and Settle's; payment_pending when the settlement's outcome is
// not known.
func (r *Rail) Collect(ctx context.Context, p rail.Payment) (string, error) {
	in, claimed, err := r.Begin(ctx, p, rail.Purpose{Key: "collect/" + p.ID}, r.lease())
	if err != nil {
		return "", err
	}
	switch claimed {
	case rail.ClaimedResolved:
		if in.State == rail.StateDone {
			return in.Ref, nil
		}
		_, err := in.Result.Answer()
		return "", err
	case rail.ClaimedBusy:
		return "", fault.New(fault.Unavailable, rail.ECodePaymentPending, "another request is settling this payment; send it again for its result")
	}
	ref, settled, err := r.Settle(ctx, in, claimed == rail.ClaimedNew)
	if err != nil {
		var refused *rail.Refused
		if errors.As(err, &refused) {
			err := r.transition(ctx, in, &in, []string{rail.StatePending}, func(_ store.Tx, c *rail.Intent) error {
				c.State, c.Error = rail.StateReleased, refused.Err.Error()
				return nil
			})
			var other *rail.Resolved
			switch {
			case errors.As(err, &other) && other.Intent.State == rail.StateDone:
				return other.Intent.Ref, nil // another attempt settled it
			case err != nil:
				return "", fault.Wrap(fault.Unavailable, rail.ECodePaymentPending, err)
			}
			return "", refused.Err
		}
		r.unlease(ctx, in, err)
		return "", fault.Wrap(fault.Unavailable, rail.ECodePaymentPending, err)
	}
	err = r.transition(ctx, in, nil, []string{rail.StatePending}, func(tx store.Tx, c *rail.Intent) error {
		c.State, c.Ref, c.Settled = rail.StateDone, ref, &settled
		return r.Record(tx, *c)
	})
	var done *rail.Resolved
	if errors.As(err, &done) && done.Intent.State == rail.StateDone {
		return done.Intent.Ref, nil
	}
	return ref, err
}

// Begin implements rail.Remote: p.Proof is the PAYMENT-SIGNATURE header.
// A payment seen before (the same signed authorization) answers its
// intent, whatever the clock says now; a new one is checked here (Check)
// and its intent claimed in the store, so that a payment is collected at
// most once on every node that shares the store, and after a restart.
//
// # Errors
//
//   - *rail.PaymentRequired with no cause when p.Proof is empty, and with
//     the refusal as cause when paying anew can cure it (payment_expired,
//     payment_underpaid, payment_wrong_recipient, …);
//   - invalid_payment (400) for a header that does not decode;
//   - payment_replayed (409) for a nonce used by another payment, or by
//     this one for another purpose.
func (r *Rail) Begin(ctx context.Context, p rail.Payment, purpose rail.Purpose, lease rail.Lease) (rail.Intent, rail.Claimed, error) {
	if p.Currency != r.cfg.Currency || p.Amount <= 0 {
		return rail.Intent{}, 0, fmt.Errorf("x402: collect a positive amount in %s, not %d %s", r.cfg.Currency, p.Amount, p.Currency)
	}
	if p.Proof == "" {
		return rail.Intent{}, 0, r.Ask(p)
	}
	payload, err := DecodePayload(p.Proof)
	if err != nil {
		return rail.Intent{}, 0, err
	}
	a, err := parseAuth(payload.Payload.Authorization)
	if err != nil {
		return rail.Intent{}, 0, err
	}
	nonce := payload.Payload.Authorization.Nonce
	id := inID(a.from, nonce)
	now := r.cfg.Now()
	var prior rail.Intent
	err = r.cfg.Store.View(ctx, func(tx store.Tx) error { prior, err = load(tx, id); return err })
	seen := err == nil && prior.State != rail.StateReleased
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rail.Intent{}, 0, err
	}
	replayed := refuse(CodePaymentReplayed, "this payment's nonce %s was already used; sign a new payment", nonce)
	in := prior
	if seen {
		if !samePayment(prior, payload) {
			return rail.Intent{}, 0, replayed
		}
	} else {
		want := r.requirements(p.Amount, r.payTo)
		payer, err := Check(payload, want, now)
		if err != nil {
			if Payable(fault.CodeOf(err)) {
				return rail.Intent{}, 0, r.ask(p, err)
			}
			return rail.Intent{}, 0, err
		}
		rm, err := json.Marshal(remote{Payload: payload, Requirements: want, Resource: p.Resource, Description: p.Description})
		if err != nil {
			return rail.Intent{}, 0, err
		}
		in = rail.Intent{ID: id, Rail: Name, Kind: rail.IntentCollect, Payment: p.ID, Agent: p.Agent, Party: payer.Hex(), Amount: p.Amount,
			Currency: p.Currency, Purpose: purpose, Remote: rm}
	}
	// Claim compares the caller's purpose with the one the intent has.
	in.Purpose, in.Lease = purpose, lease
	var got rail.Intent
	var claimed rail.Claimed
	err = r.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if cur, err := load(tx, id); err == nil && cur.State != rail.StateReleased && !samePayment(cur, payload) {
			return replayed
		}
		var err error
		got, claimed, err = rail.Claim(tx, in, now.UTC())
		return err
	})
	if errors.Is(err, rail.ErrOtherPurpose) {
		return rail.Intent{}, 0, replayed
	}
	return got, claimed, err
}

// Find implements rail.Remote.
func (r *Rail) Find(ctx context.Context, proof string) (rail.Intent, error) {
	payload, err := DecodePayload(proof)
	if err != nil {
		return rail.Intent{}, store.ErrNotFound
	}
	a, err := parseAuth(payload.Payload.Authorization)
	if err != nil {
		return rail.Intent{}, store.ErrNotFound
	}
	var in rail.Intent
	err = r.cfg.Store.View(ctx, func(tx store.Tx) error {
		in, err = load(tx, inID(a.from, payload.Payload.Authorization.Nonce))
		return err
	})
	if err == nil && (in.State == rail.StateReleased || !samePayment(in, payload)) {
		err = store.ErrNotFound
	}
	return in, err
}

// samePayment reports whether in was claimed for the signed payment p:
// the same authorization under the same signature. An intent with no
// signed payment recorded (written before intents existed) is no payment
// sent again.
func samePayment(in rail.Intent, p Payload) bool {
	var rm remote
	if len(in.Remote) == 0 || json.Unmarshal(in.Remote, &rm) != nil {
		return false
	}
	return strings.EqualFold(rm.Payload.Payload.Signature, p.Payload.Signature) && rm.Payload.Payload.Authorization == p.Payload.Authorization
}

// Settle implements rail.Remote. A fresh attempt has the facilitator
// verify the payment and settle it. Any other (a payment sent again, or
// the resolution of one a crash left) first asks the chain, when the
// rail has one, whether the authorization's nonce was used: used, the
// transaction that used it is the settlement; cancelled, or unused and
// expired, it never will settle; unused and still valid, it is settled
// now. Without a chain it asks the facilitator to settle it again, which
// answers an authorization it settled before with its transaction (the
// local facilitator does; a hosted one may refuse, and the intent waits).
func (r *Rail) Settle(ctx context.Context, in rail.Intent, fresh bool) (string, rail.Settled, error) {
	var rm remote
	if len(in.Remote) > 0 {
		if err := json.Unmarshal(in.Remote, &rm); err != nil {
			return "", rail.Settled{}, fmt.Errorf("x402: intent %s: %w", in.ID, err)
		}
	}
	p := rail.Payment{ID: in.Payment, Agent: in.Agent, Amount: in.Amount, Currency: in.Currency, Resource: rm.Resource, Description: rm.Description}
	payer := common.HexToAddress(in.Party)
	settled := func(tx string) (string, rail.Settled, error) {
		return RefPrefix + tx, rail.Settled{Payer: payer.Hex(), Network: r.cfg.Network, Transaction: tx}, nil
	}
	checked := false
	if !fresh {
		st, err := r.onChain(ctx, in, payer)
		switch {
		case errors.Is(err, errNoChain):
		case err != nil:
			return "", rail.Settled{}, err
		case st.State == AuthorizationUsed:
			return settled(st.Transaction)
		case st.State == AuthorizationCanceled:
			return "", rail.Settled{}, &rail.Refused{Err: r.ask(p, refuse(CodePaymentRefused, "the payer cancelled the authorization"))}
		case len(in.Remote) == 0 || r.expired(rm):
			return "", rail.Settled{}, &rail.Refused{Err: r.ask(p, refuse(CodePaymentExpired, "the authorization expired unused"))}
		default:
			checked = true
		}
	}
	if len(in.Remote) == 0 {
		return "", rail.Settled{}, fmt.Errorf("x402: intent %s has no signed payment recorded, and %w", in.ID, errNoChain)
	}
	fr := FacilitatorRequest{PaymentPayload: rm.Payload, PaymentRequirements: rm.Requirements}
	if fresh {
		v, err := r.cfg.Facilitator.Verify(ctx, fr)
		if err != nil {
			// Nothing was sent to /settle: the payment can be sent again.
			return "", rail.Settled{}, &rail.Refused{Err: rail.Failed("the payment could not be verified", err)}
		}
		if !v.IsValid {
			return "", rail.Settled{}, &rail.Refused{Err: r.ask(p, refuse(CodePaymentRefused, "the facilitator refused the payment: %s", v.InvalidReason))}
		}
		r.fault(rail.FaultAfterVerify)
	}
	s, err := r.cfg.Facilitator.Settle(ctx, fr)
	if err != nil {
		return "", rail.Settled{}, fmt.Errorf("x402: settle payment %s (nonce %s from %s): %w", in.Payment, rm.Payload.Payload.Authorization.Nonce, payer.Hex(), err)
	}
	r.fault(rail.FaultAfterSettle)
	if s.Success && s.Transaction != "" {
		return settled(s.Transaction)
	}
	// A refusal is the end only when nothing before this attempt can have
	// settled the payment: this attempt claimed it, or the chain said
	// just now that its nonce is unused.
	if (fresh || checked) && Definitive(s.ErrorReason) {
		return "", rail.Settled{}, &rail.Refused{Err: r.ask(p, refuse(CodePaymentRefused, "the facilitator did not settle the payment: %s", s.ErrorReason))}
	}
	return "", rail.Settled{}, fmt.Errorf("x402: the facilitator did not settle payment %s again (%s), and whether it settled before %w", in.Payment, s.ErrorReason, errNoChain)
}

// Definitive reports whether a facilitator's refusal to settle says the
// payment was not made (it is invalid, or the payer cannot pay), rather
// than that settling it went wrong in a way that may still complete.
func Definitive(reason string) bool {
	return reason == ReasonInsufficientFunds || (strings.HasPrefix(reason, "invalid_") && reason != ReasonNonceUsed)
}

// onChain asks the rail's chain about in's authorization.
func (r *Rail) onChain(ctx context.Context, in rail.Intent, authorizer common.Address) (AuthorizationState, error) {
	if r.cfg.Chain == nil {
		return AuthorizationState{}, errNoChain
	}
	_, nonce, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(in.ID, "nonce/"), "out/"), "/")
	return r.cfg.Chain.Authorization(ctx, common.HexToAddress(r.cfg.Asset), authorizer, common.HexToHash(nonce))
}

// expired reports whether the authorization rm carries can no longer be
// settled: its validBefore passed, with a margin for the chain's clock.
func (r *Rail) expired(rm remote) bool {
	before, ok := uint256(rm.Payload.Payload.Authorization.ValidBefore)
	return ok && before.Cmp(big.NewInt(r.cfg.Now().Add(-ClockSkew).Unix())) <= 0
}

// ClockSkew is how far the rail allows the chain's clock to lag its own
// before an unused authorization past its validBefore is taken as
// expired.
const ClockSkew = 2 * time.Minute

// Record implements rail.Remote: the payment under its reference, for its
// refund and for Settled, and its payer as the address its agent is paid
// out to.
func (r *Rail) Record(tx store.Tx, in rail.Intent) error {
	if in.Settled == nil {
		return fmt.Errorf("x402: intent %s has no settlement to record", in.ID)
	}
	c := claim{Payment: in.Payment, Agent: in.Agent, Payer: in.Party, Amount: in.Amount, Network: in.Settled.Network,
		Transaction: in.Settled.Transaction, At: in.Updated, Intent: in.ID}
	if err := store.SetJSON(tx, paymentKey(in.Ref), c); err != nil {
		return err
	}
	return tx.Set(payerKey(in.Agent), []byte(in.Party))
}

// Settled implements rail.Asker.
func (r *Rail) Settled(ctx context.Context, ref string) (rail.Settled, error) {
	var c claim
	if err := r.cfg.Store.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, paymentKey(ref), &c) }); err != nil {
		return rail.Settled{}, fmt.Errorf("x402: payment %s: %w", ref, err)
	}
	return rail.Settled{Payer: c.Payer, Network: c.Network, Transaction: c.Transaction}, nil
}

// Refund implements rail.Rail: the operator's key signs a transfer of
// amount from the operator's address to the address that paid ref, and
// the facilitator settles it. The refund is an intent of its own, keyed
// by a nonce derived from what it refunds: a retry, after any failure or
// crash, sends the very same authorization, which the chain executes at
// most once, and answers the same reference.
func (r *Rail) Refund(ctx context.Context, ref string, amount int64) (string, error) {
	if amount <= 0 {
		return "", fmt.Errorf("x402: refund a positive amount, not %d", amount)
	}
	var c claim
	if err := r.cfg.Store.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, paymentKey(ref), &c) }); err != nil {
		return "", fmt.Errorf("x402: refund of %s: no such payment on this rail: %w", ref, err)
	}
	if amount > c.Amount {
		return "", fmt.Errorf("x402: refund of %d exceeds payment %s of %d", amount, ref, c.Amount)
	}
	return r.send(ctx, rail.IntentRefund, "refund/"+ref+"/"+strconv.FormatInt(amount, 10), c.Agent, common.HexToAddress(c.Payer), amount)
}

// Payout implements rail.Rail: a transfer from the operator's address to
// the address the agent last paid from, once per payment id.
//
// # Errors
//
// *rail.Refused when nothing was sent and nothing will be (no address is
// known, no operator key, the facilitator refused it); any other error
// when whether it was sent is not known: the same call later finds out.
func (r *Rail) Payout(ctx context.Context, p rail.Payment) (string, error) {
	if p.Amount <= 0 {
		return "", fmt.Errorf("x402: pay out a positive amount, not %d", p.Amount)
	}
	var addr []byte
	err := r.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		addr, err = tx.Get(payerKey(p.Agent))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", &rail.Refused{Err: fmt.Errorf("x402: agent %s never paid over x402, so no address is known to pay it", p.Agent)}
	} else if err != nil {
		return "", err
	}
	return r.send(ctx, rail.IntentPayout, "payout/"+p.ID, p.Agent, common.HexToAddress(string(addr)), p.Amount)
}

// send has the operator pay amount to to, once per purpose: its intent,
// holding the signed authorization, is recorded before the facilitator
// is asked to settle it.
func (r *Rail) send(ctx context.Context, kind, purpose, agent string, to common.Address, amount int64) (string, error) {
	if r.cfg.Operator == nil {
		return "", &rail.Refused{Err: errors.New("x402: no operator key: refunds and payouts cannot be signed")}
	}
	from := crypto.PubkeyToAddress(r.cfg.Operator.PublicKey)
	var nonce [32]byte
	copy(nonce[:], crypto.Keccak256([]byte("assay/x402/"+purpose)))
	id := outID(from, hexutil.Encode(nonce[:]))
	now := r.cfg.Now()
	var in rail.Intent
	var claimed rail.Claimed
	err := r.cfg.Store.Update(ctx, func(tx store.Tx) error {
		cur, err := load(tx, id)
		if err == nil && cur.State != rail.StateReleased {
			cur.Purpose.Key, cur.Lease = purpose, r.lease()
			in, claimed, err = rail.Claim(tx, cur, now.UTC())
			return err
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		want := r.requirements(amount, to)
		pay, err := NewPayment(r.cfg.Operator, want, 0, now.Add(24*time.Hour).Unix(), nonce)
		if err != nil {
			return err
		}
		rm, err := json.Marshal(remote{Payload: pay, Requirements: want})
		if err != nil {
			return err
		}
		in, claimed, err = rail.Claim(tx, rail.Intent{ID: id, Rail: Name, Kind: kind, Payment: purpose, Agent: agent, Party: to.Hex(), Amount: amount,
			Currency: r.cfg.Currency, Purpose: rail.Purpose{Key: purpose}, Remote: rm, Lease: r.lease()}, now.UTC())
		return err
	})
	if err != nil {
		return "", err
	}
	switch claimed {
	case rail.ClaimedResolved:
		if in.State == rail.StateDone {
			return in.Ref, nil
		}
		return "", fmt.Errorf("x402: %s of %d to %s ended %s", kind, amount, to.Hex(), in.State)
	case rail.ClaimedBusy:
		return "", fmt.Errorf("x402: %s of %d to %s is being sent by another attempt", kind, amount, to.Hex())
	case rail.ClaimedNew:
		if kind == rail.IntentRefund {
			r.fault(rail.FaultRefundAfterIntent)
		}
	}
	ref, err := r.settleOut(ctx, in, claimed == rail.ClaimedNew)
	var refused *rail.Refused
	if errors.As(err, &refused) {
		err := r.transition(ctx, in, &in, []string{rail.StatePending}, func(_ store.Tx, c *rail.Intent) error {
			c.State, c.Error = rail.StateReleased, refused.Err.Error()
			return nil
		})
		var other *rail.Resolved
		switch {
		case errors.As(err, &other) && other.Intent.State == rail.StateDone:
			return other.Intent.Ref, nil // another attempt sent it
		case err != nil:
			return "", fmt.Errorf("x402: %s of %d to %s was refused, and another attempt holds it: %w", kind, amount, to.Hex(), errors.Join(refused, err))
		}
		return "", refused
	}
	if err != nil {
		r.unlease(ctx, in, err)
		return "", err
	}
	if kind == rail.IntentRefund {
		r.fault(rail.FaultRefundAfterSettle)
	}
	err = r.transition(ctx, in, nil, []string{rail.StatePending}, func(_ store.Tx, c *rail.Intent) error {
		c.State, c.Ref, c.Error = rail.StateDone, ref, ""
		return nil
	})
	var done *rail.Resolved
	if errors.As(err, &done) && done.Intent.State == rail.StateDone {
		return done.Intent.Ref, nil
	}
	if err != nil {
		return "", err
	}
	return ref, nil
}

// settleOut settles an outgoing intent (refund or payout), or finds out
// whether it settled, as Settle does for a collection.
func (r *Rail) settleOut(ctx context.Context, in rail.Intent, fresh bool) (string, error) {
	var rm remote
	if err := json.Unmarshal(in.Remote, &rm); err != nil {
		return "", fmt.Errorf("x402: intent %s: %w", in.ID, err)
	}
	from := common.HexToAddress(rm.Payload.Payload.Authorization.From)
	checked := false
	if !fresh {
		st, err := r.onChain(ctx, in, from)
		switch {
		case errors.Is(err, errNoChain):
		case err != nil:
			return "", err
		case st.State == AuthorizationUsed:
			return RefPrefix + st.Transaction, nil
		case st.State == AuthorizationCanceled || r.expired(rm):
			return "", &rail.Refused{Err: fmt.Errorf("x402: the operator's %s to %s was never settled and can no longer be", in.Kind, in.Party)}
		default:
			checked = true
		}
	}
	s, err := r.cfg.Facilitator.Settle(ctx, FacilitatorRequest{PaymentPayload: rm.Payload, PaymentRequirements: rm.Requirements})
	if err != nil {
		return "", err
	}
	if s.Success && s.Transaction != "" {
		return RefPrefix + s.Transaction, nil
	}
	err = fmt.Errorf("x402: the facilitator did not settle the operator's %s of %d to %s: %s", in.Kind, in.Amount, in.Party, s.ErrorReason)
	if (fresh || checked) && Definitive(s.ErrorReason) {
		return "", &rail.Refused{Err: err}
	}
	return "", err
}

// transition runs rail.Transition on in's intent in a transaction of its
// own, counting what it resolves.
func (r *Rail) transition(ctx context.Context, in rail.Intent, held *rail.Intent, from []string, change func(store.Tx, *rail.Intent) error) error {
	var cur rail.Intent
	err := r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		var err error
		cur, err = rail.Transition(tx, Name, in.ID, from, held, r.cfg.Now().UTC(), change)
		return err
	})
	if err == nil {
		r.cfg.Counters.Count(cur.State)
	}
	return err
}

// unlease ends an attempt that could not tell what became of in.
func (r *Rail) unlease(ctx context.Context, in rail.Intent, cause error) {
	r.cfg.Counters.Fail()
	_ = r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		_, err := rail.Transition(tx, Name, in.ID, []string{rail.StatePending}, &in, r.cfg.Now().UTC(), func(_ store.Tx, c *rail.Intent) error {
			c.Lease, c.Error = rail.Lease{}, cause.Error()
			return nil
		})
		return err
	})
}

func (r *Rail) fault(point string) {
	if r.cfg.Fault != nil {
		r.cfg.Fault(point)
	}
}

// IsRef reports whether ref is a reference this rail answered.
func IsRef(ref string) bool {
	return strings.HasPrefix(ref, RefPrefix+"0x") && len(ref) > len(RefPrefix)+2
}

// ParseKey reads an operator key: 32 bytes of hex, with or without 0x.
func ParseKey(s string) (*ecdsa.PrivateKey, error) {
	k, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
	if err != nil {
		return nil, fmt.Errorf("x402: the operator key is 32 bytes of hex: %w", err)
	}
	return k, nil
}

// usd writes an amount of micro-units as a decimal number of whole units.
func usd(n int64) string {
	s := strconv.FormatInt(n/1_000_000, 10)
	if f := n % 1_000_000; f != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(1_000_000+f, 10)[1:], "0")
	}
	return s
}
