// Package rail is the payment rail behind Assay's wallets: where money comes
// from when an agent deposits and goes to when it withdraws. A rail settles
// outside Assay; inside, its money is one ledger account (Account), so that
// every deposit and withdrawal is a double-entry posting against it and the
// ledger still sums to zero.
//
// Every rail must be able to reverse a payment (Refund): the market sells
// recourse, and a rail that cannot give money back cannot honour it. The
// interface makes Refund a requirement, not an option.
//
// The dev rail (Dev) settles instantly and simulates refunds. The x402 rail
// (runtime/rail/x402: HTTP 402 with the PAYMENT-REQUIRED, PAYMENT-SIGNATURE
// and PAYMENT-RESPONSE headers of x402 v2, USDC on Base) is an Asker: it is
// paid per request, so a purchase or deposit without a payment is answered
// with a PaymentRequired error saying what to pay.
package rail

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// x402 v2: a server answers 402 with PAYMENT-REQUIRED (what to pay), the
// client retries with PAYMENT-SIGNATURE (the signed payment), and the
// server answers PAYMENT-RESPONSE (the settlement).
const (
	StatusPaymentRequired  = http.StatusPaymentRequired
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// Payment is money moving between an agent and a rail, in the rail's
// currency's minor units.
type Payment struct {
	// ID is unique per payment and stable across retries: a rail uses it
	// to make Collect, Payout and Refund idempotent.
	ID       string
	Agent    string
	Amount   int64
	Currency string
	// Proof is what the agent presented to pay, e.g. an x402
	// PAYMENT-SIGNATURE header; the dev rail needs none.
	Proof string
	// Resource and Description say what is paid for (a URL and a line of
	// text), for a rail that asks for payment (Asker).
	Resource, Description string
}

// Asker is a rail that is paid per request, the way x402 is: the request
// carries the payment (Payment.Proof), and a request without one is told
// what to pay.
type Asker interface {
	Rail
	// Ask returns the *PaymentRequired error that tells a client how to
	// pay p.
	Ask(p Payment) error
	// Settled returns what the rail says of a payment it collected: the
	// payer's address, the network and the transaction.
	Settled(ctx context.Context, ref string) (Settled, error)
}

// Settled is a collected payment as a rail that asks for payment reports
// it.
type Settled struct {
	// Payer is the address the money came from: a fact of the payment,
	// independent of the agent id the request named.
	Payer string `json:"payer"`
	// Network names where it settled, e.g. eip155:84532.
	Network string `json:"network"`
	// Transaction is the settlement's reference on the network.
	Transaction string `json:"transaction"`
}

// PaymentRequired is the error of a request that must be paid first, or
// whose payment was refused in a way that paying again can cure (expired,
// underpaid, wrongly addressed): HTTP answers it 402 with Header as
// PAYMENT-REQUIRED. Err is the coded fault it unwraps to:
// payment_required when no payment was presented, else why the one
// presented was refused; a transport that cannot answer 402 answers that.
type PaymentRequired struct {
	// Header is the PAYMENT-REQUIRED value: base64 of Required's JSON.
	Header string
	// Required is the payment requirements (x402's PaymentRequired).
	Required any
	Err      error
}

// Error implements error.
func (e *PaymentRequired) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return "payment required"
}

// Unwrap returns why the payment presented was refused.
func (e *PaymentRequired) Unwrap() error { return e.Err }

// Rail moves money between agents and Assay.
type Rail interface {
	// Name names the rail, e.g. "dev".
	Name() string
	// Account is the ledger account that stands for money on the rail.
	Account() string
	// Collect takes p.Amount from the agent and answers the rail's
	// reference for the payment.
	//
	// # Errors
	//
	// An error when the payment was not made; nothing was taken.
	Collect(ctx context.Context, p Payment) (ref string, err error)
	// Payout sends p.Amount to the agent and answers a reference.
	Payout(ctx context.Context, p Payment) (ref string, err error)
	// Refund reverses amount of the collected payment ref and answers the
	// refund's reference.
	//
	// # Notes
	//
	// Required of every rail: a rail that cannot reverse a payment cannot
	// honour the market's recourse.
	Refund(ctx context.Context, ref string, amount int64) (refundRef string, err error)
}

// Dev is the development rail: it settles every payment at once and
// simulates refunds. Its references are derived from the payment id, so a
// retried call answers the same reference.
type Dev struct{}

// Interface guard.
var _ Rail = Dev{}

// DevAccount is the ledger account of the dev rail.
const DevAccount = "rail:dev"

// Name implements Rail.
func (Dev) Name() string { return "dev" }

// Account implements Rail.
func (Dev) Account() string { return DevAccount }

// Collect implements Rail.
func (Dev) Collect(_ context.Context, p Payment) (string, error) {
	if p.Amount <= 0 {
		return "", fmt.Errorf("rail: collect a positive amount, not %d", p.Amount)
	}
	return devRef("in", p.ID), nil
}

// Payout implements Rail.
func (Dev) Payout(_ context.Context, p Payment) (string, error) {
	if p.Amount <= 0 {
		return "", fmt.Errorf("rail: pay out a positive amount, not %d", p.Amount)
	}
	return devRef("out", p.ID), nil
}

// Refund implements Rail.
func (Dev) Refund(_ context.Context, ref string, amount int64) (string, error) {
	if amount <= 0 {
		return "", fmt.Errorf("rail: refund a positive amount, not %d", amount)
	}
	return devRef("refund", fmt.Sprintf("%s/%d", ref, amount)), nil
}

func devRef(kind, id string) string {
	sum := sha256.Sum256([]byte(kind + "/" + id))
	return "dev:" + kind + ":" + hex.EncodeToString(sum[:8])
}

// The money boundary. A currency is either backed by the payment rail the
// server settles on, which can pay it out (a withdrawal), or notional: a
// unit of account that no rail pays out, minted where it is needed and
// never withdrawn. The one backed currency is USDMicro, integer
// micro-US-dollars, whichever rail the server runs (dev or x402): it
// enters the ledger only by a deposit or a payment on that rail, and
// leaves it only by a withdrawal or a refund on it, so that no agent can
// withdraw more than was deposited. Every other currency, such as the
// seed court's "credits", is notional.
const USDMicro = "usd-micro"

// backed names each backed currency with what backs it.
var backed = map[string]string{USDMicro: "the payment rail the server settles on (dev or x402)"}

// Backed reports whether a rail pays currency out. A currency that is not
// backed is notional.
func Backed(currency string) bool { _, ok := backed[currency]; return ok }

// Lookalike reports whether currency is not backed but differs from a
// backed one only in case, so that a person could take one for the
// other.
func Lookalike(currency string) bool {
	for b := range backed {
		if currency != b && strings.EqualFold(currency, b) {
			return true
		}
	}
	return false
}

// Mint is the rail of notional currencies: it "collects" whatever it is
// asked, at once, and refunds by forgetting, as the dev rail does; what it
// collects is minted from the account MintAccount names. No withdrawal
// ever reaches it: a notional currency has no rail to leave by.
type Mint struct{}

// Interface guard.
var _ Rail = Mint{}

// MintPrefix starts the ledger accounts notional money is minted from.
const MintPrefix = "mint:"

// MintAccount is the ledger account that currency is minted from for
// agent: one per currency and agent, so that the bound of one account
// (ledger.MaxBalance) is only ever reached by the agent whose account it
// is, and no one can exhaust a mint that another agent's money depends on.
func MintAccount(currency, agent string) string { return MintPrefix + currency + ":" + agent }

// Name implements Rail.
func (Mint) Name() string { return "mint" }

// Account implements Rail: the prefix of the mint's accounts
// (MintAccount names each).
func (Mint) Account() string { return "mint" }

// Collect implements Rail.
func (Mint) Collect(ctx context.Context, p Payment) (string, error) {
	if Backed(p.Currency) {
		return "", fmt.Errorf("rail: %s is backed by a rail and is never minted", p.Currency)
	}
	return Dev{}.Collect(ctx, p)
}

// Payout implements Rail: notional money is never paid out.
func (Mint) Payout(_ context.Context, p Payment) (string, error) {
	return "", fmt.Errorf("rail: %s is notional and is never paid out", p.Currency)
}

// Refund implements Rail.
func (Mint) Refund(ctx context.Context, ref string, amount int64) (string, error) {
	return Dev{}.Refund(ctx, ref, amount)
}
