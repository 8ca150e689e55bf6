package x402

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
}

// Rail is the x402 rail. It is safe for concurrent use.
type Rail struct {
	cfg   Config
	payTo common.Address
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
	return r, nil
}

// Name implements rail.Rail.
func (*Rail) Name() string { return "x402" }

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

// claim is a nonce's record: which payment used it, and the payment's
// facts once it settled.
type claim struct {
	Payment     string    `json:"payment"`
	Agent       string    `json:"agent"`
	Payer       string    `json:"payer"`
	Amount      int64     `json:"amount"`
	Network     string    `json:"network"`
	Transaction string    `json:"transaction,omitempty"`
	At          time.Time `json:"at"`
}

func (r *Rail) nonceKey(payer common.Address, nonce string) string {
	return nonceKeyOf("rail/x402/nonce/", payer, nonce)
}

func paymentKey(ref string) string { return "rail/x402/payment/" + ref }
func payerKey(agent string) string {
	return "rail/x402/payer/" + hexutil.Encode(crypto.Keccak256([]byte(agent)))
}

// Collect implements rail.Rail: p.Proof is the PAYMENT-SIGNATURE header.
// The payment is checked here (Check), its nonce claimed in the store,
// and only then verified and settled by the facilitator.
//
// # Errors
//
//   - *rail.PaymentRequired with no cause when p.Proof is empty, and with
//     the refusal as cause when paying anew can cure it (payment_expired,
//     payment_underpaid, payment_wrong_recipient, …, payment_refused when
//     the facilitator would not settle);
//   - invalid_payment (400) for a header that does not decode;
//   - payment_replayed (409) for a nonce already used;
//   - any other error when the facilitator could not be reached: the
//     nonce stays claimed after an unknown settlement.
func (r *Rail) Collect(ctx context.Context, p rail.Payment) (string, error) {
	if p.Currency != r.cfg.Currency || p.Amount <= 0 {
		return "", fmt.Errorf("x402: collect a positive amount in %s, not %d %s", r.cfg.Currency, p.Amount, p.Currency)
	}
	if p.Proof == "" {
		return "", r.Ask(p)
	}
	payload, err := DecodePayload(p.Proof)
	if err != nil {
		return "", err
	}
	want := r.requirements(p.Amount, r.payTo)
	payer, err := Check(payload, want, r.cfg.Now())
	if err != nil {
		if Payable(fault.CodeOf(err)) {
			return "", r.ask(p, err)
		}
		return "", err
	}
	nonce := payload.Payload.Authorization.Nonce
	key := r.nonceKey(payer, nonce)
	c := claim{Payment: p.ID, Agent: p.Agent, Payer: payer.Hex(), Amount: p.Amount, Network: r.cfg.Network, At: r.cfg.Now().UTC()}
	if err := r.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(key); err == nil {
			return refuse(CodePaymentReplayed, "this payment's nonce %s was already used; sign a new payment", nonce)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return store.SetJSON(tx, key, c)
	}); err != nil {
		return "", err
	}
	release := func() {
		_ = r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.Delete(key) })
	}
	fr := FacilitatorRequest{PaymentPayload: payload, PaymentRequirements: want}
	v, err := r.cfg.Facilitator.Verify(ctx, fr)
	if err != nil {
		release()
		return "", err
	}
	if !v.IsValid {
		release()
		return "", r.ask(p, refuse(CodePaymentRefused, "the facilitator refused the payment: %s", v.InvalidReason))
	}
	s, err := r.cfg.Facilitator.Settle(ctx, fr)
	if err != nil {
		// Whether it settled is unknown: the nonce stays claimed.
		return "", fmt.Errorf("x402: settle payment %s (nonce %s from %s): %w", p.ID, nonce, payer.Hex(), err)
	}
	if !s.Success || s.Transaction == "" {
		release()
		return "", r.ask(p, refuse(CodePaymentRefused, "the facilitator did not settle the payment: %s", s.ErrorReason))
	}
	ref := RefPrefix + s.Transaction
	c.Transaction = s.Transaction
	err = r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		if err := store.SetJSON(tx, key, c); err != nil {
			return err
		}
		if err := store.SetJSON(tx, paymentKey(ref), c); err != nil {
			return err
		}
		return tx.Set(payerKey(p.Agent), []byte(payer.Hex()))
	})
	if err != nil {
		return "", fmt.Errorf("x402: payment %s settled as %s and not recorded: %w", p.ID, ref, err)
	}
	return ref, nil
}

// Settled implements rail.Asker.
func (r *Rail) Settled(ctx context.Context, ref string) (rail.Settled, error) {
	var c claim
	if err := r.cfg.Store.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, paymentKey(ref), &c) }); err != nil {
		return rail.Settled{}, fmt.Errorf("x402: payment %s: %w", ref, err)
	}
	return rail.Settled{Payer: c.Payer, Network: c.Network, Transaction: c.Transaction}, nil
}

// outgoing is a refund or payout: the authorization the operator signed,
// kept before it is sent so that a retry sends the same one, and its
// reference once settled.
type outgoing struct {
	Payload Payload `json:"payload"`
	Ref     string  `json:"ref,omitempty"`
}

// Refund implements rail.Rail: the operator's key signs a transfer of
// amount from the operator's address to the address that paid ref, and
// the facilitator settles it. A retry of the same refund sends the same
// authorization and answers the same reference.
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
	return r.send(ctx, "refund/"+ref+"/"+strconv.FormatInt(amount, 10), common.HexToAddress(c.Payer), amount)
}

// Payout implements rail.Rail: a transfer from the operator's address to
// the address the agent last paid from.
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
		return "", fmt.Errorf("x402: agent %s never paid over x402, so no address is known to pay it", p.Agent)
	} else if err != nil {
		return "", err
	}
	return r.send(ctx, "payout/"+p.ID, common.HexToAddress(string(addr)), p.Amount)
}

// send has the operator pay amount to to, once per purpose.
func (r *Rail) send(ctx context.Context, purpose string, to common.Address, amount int64) (string, error) {
	if r.cfg.Operator == nil {
		return "", errors.New("x402: no operator key: refunds and payouts cannot be signed")
	}
	from := crypto.PubkeyToAddress(r.cfg.Operator.PublicKey)
	var nonce [32]byte
	copy(nonce[:], crypto.Keccak256([]byte("assay/x402/"+purpose)))
	key := nonceKeyOf("rail/x402/out/", from, hexutil.Encode(nonce[:]))
	want := r.requirements(amount, to)
	var out outgoing
	err := r.cfg.Store.Update(ctx, func(tx store.Tx) error {
		err := store.GetJSON(tx, key, &out)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p, err := NewPayment(r.cfg.Operator, want, 0, r.cfg.Now().Add(24*time.Hour).Unix(), nonce)
		if err != nil {
			return err
		}
		out = outgoing{Payload: p}
		return store.SetJSON(tx, key, out)
	})
	if err != nil || out.Ref != "" {
		return out.Ref, err
	}
	s, err := r.cfg.Facilitator.Settle(ctx, FacilitatorRequest{PaymentPayload: out.Payload, PaymentRequirements: out.Payload.Accepted})
	if err != nil {
		return "", err
	}
	if !s.Success || s.Transaction == "" {
		return "", fmt.Errorf("x402: the facilitator did not settle the operator's transfer of %d to %s: %s", amount, to.Hex(), s.ErrorReason)
	}
	out.Ref = RefPrefix + s.Transaction
	err = r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return store.SetJSON(tx, key, out) })
	return out.Ref, err
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
