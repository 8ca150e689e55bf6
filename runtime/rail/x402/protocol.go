// Package x402 is the x402 payment rail (protocol version 2, the "exact"
// scheme on an EVM network): a request that must be paid for is answered
// 402 with PAYMENT-REQUIRED (what to pay: asset, amount in the asset's
// units, pay-to address, network), the client retries with
// PAYMENT-SIGNATURE (an EIP-3009 transferWithAuthorization signed over
// EIP-712), and the server answers PAYMENT-RESPONSE (the settlement).
//
// The rail verifies a payment itself before any facilitator sees it: the
// typed data is hashed and the signer recovered (go-ethereum's crypto and
// signer/core/apitypes), the amount, recipient, asset, network and
// validity window are checked against what was asked, and the
// authorization's nonce is claimed in the shared store, so that a replayed
// payment header is refused on every node and after a restart. Only then
// does it settle through a facilitator's POST /verify and POST /settle.
//
// Refunds reverse on the rail: the operator's key signs a
// transferWithAuthorization from the operator's address back to the payer,
// settled through the same facilitator.
//
// Facilitator (facilitator.go) is a facilitator of its own for tests and
// local use: it speaks /verify, /settle and /supported, keeps a simulated
// USDC balance per address on a ledger in a store, and settles by moving
// those balances. It stands in for a hosted facilitator and the chain,
// which are outside Assay's control.
//
// # Store keys
//
//	rail/x402/nonce/<payer>/<nonce>     -> claim: a payment's nonce, accepted once
//	rail/x402/payment/<ref>             -> collected: what a reference paid, and by whom
//	rail/x402/payer/<agent>             -> the address an agent last paid from (payouts)
//	rail/x402/out/<nonce>               -> outgoing: a signed refund or payout, and its reference once settled
//	facilitator/nonce/<payer>/<nonce>   -> the local facilitator's used nonces
package x402

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Version is the protocol version this rail speaks.
const Version = 2

// SchemeExact is the one scheme this rail speaks.
const SchemeExact = "exact"

// Networks Assay knows by name, as CAIP-2 identifiers.
const (
	BaseSepolia = "eip155:84532"
	Base        = "eip155:8453"
)

// USDC's contracts on Base and Base Sepolia, and its EIP-712 domain name
// and version there.
const (
	USDCBaseSepolia = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	USDCBase        = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	USDCName        = "USDC"
	USDCVersion     = "2"
)

// DefaultAsset returns USDC's contract on a network Assay knows, or "".
func DefaultAsset(network string) string {
	switch network {
	case BaseSepolia:
		return USDCBaseSepolia
	case Base:
		return USDCBase
	}
	return ""
}

// Resource describes what is paid for.
type Resource struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Requirements is one way to pay (PaymentRequirements).
type Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int64          `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// Required is a 402's PAYMENT-REQUIRED (PaymentRequired).
type Required struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Resource    Resource       `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
}

// Authorization is EIP-3009's transferWithAuthorization, as x402 carries
// it: integers as decimal (or 0x hex) strings.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactPayload is the exact scheme's payload on EVM.
type ExactPayload struct {
	Signature     string        `json:"signature"`
	Authorization Authorization `json:"authorization"`
}

// Payload is a PAYMENT-SIGNATURE (PaymentPayload).
type Payload struct {
	X402Version int            `json:"x402Version"`
	Resource    *Resource      `json:"resource,omitempty"`
	Accepted    Requirements   `json:"accepted"`
	Payload     ExactPayload   `json:"payload"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// Settlement is a PAYMENT-RESPONSE and a facilitator's /settle answer
// (SettlementResponse).
type Settlement struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
}

// Verification is a facilitator's /verify answer (VerifyResponse).
type Verification struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// FacilitatorRequest is the body of /verify and /settle.
type FacilitatorRequest struct {
	X402Version         int          `json:"x402Version,omitempty"`
	PaymentPayload      Payload      `json:"paymentPayload"`
	PaymentRequirements Requirements `json:"paymentRequirements"`
}

// Kind is one entry of /supported.
type Kind struct {
	X402Version int    `json:"x402Version"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
}

// Supported is a facilitator's /supported answer.
type Supported struct {
	Kinds      []Kind              `json:"kinds"`
	Extensions []string            `json:"extensions"`
	Signers    map[string][]string `json:"signers"`
}

// Encode is a header's value: base64 of the JSON of v.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// MaxHeaderBytes bounds a PAYMENT-SIGNATURE header.
const MaxHeaderBytes = 16 << 10

// DecodePayload reads a PAYMENT-SIGNATURE header: base64 (standard or
// URL alphabet, padded or not) of a PaymentPayload's JSON.
//
// # Errors
//
// invalid_payment (400) naming what is wrong.
func DecodePayload(header string) (Payload, error) {
	var p Payload
	if len(header) > MaxHeaderBytes {
		return p, refuse(CodeInvalidPayment, "the %s header is at most %d bytes", "PAYMENT-SIGNATURE", MaxHeaderBytes)
	}
	raw, err := decodeBase64(strings.TrimSpace(header))
	if err != nil {
		return p, refuse(CodeInvalidPayment, "the PAYMENT-SIGNATURE header is not base64")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&p); err != nil {
		return p, refuse(CodeInvalidPayment, "the PAYMENT-SIGNATURE header is not a PaymentPayload's JSON: %v", err)
	}
	if p.X402Version != Version {
		return p, refuse(CodeInvalidPayment, "x402Version is %d; this server speaks x402 version %d", p.X402Version, Version)
	}
	return p, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64")
}

var (
	addressRE = regexp.MustCompile(`^0[xX][0-9a-fA-F]{40}$`)
	nonceRE   = regexp.MustCompile(`^0[xX][0-9a-fA-F]{64}$`)
	networkRE = regexp.MustCompile(`^eip155:([1-9][0-9]{0,17})$`)
)

// ChainID returns the chain id of a CAIP-2 eip155 network.
func ChainID(network string) (int64, error) {
	m := networkRE.FindStringSubmatch(network)
	if m == nil {
		return 0, fmt.Errorf("network %q is not eip155:<chain id>", network)
	}
	return strconv.ParseInt(m[1], 10, 64)
}

// ValidAddress reports whether s is a 0x-prefixed 20-byte hex address.
func ValidAddress(s string) bool { return addressRE.MatchString(s) }

// uint256 reads an x402 integer: decimal, or hex with 0x.
func uint256(s string) (*big.Int, bool) {
	if s == "" || len(s) > 80 {
		return nil, false
	}
	n := new(big.Int)
	var ok bool
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		_, ok = n.SetString(s[2:], 16)
	} else {
		_, ok = n.SetString(s, 10)
	}
	if !ok || n.Sign() < 0 || n.BitLen() > 256 {
		return nil, false
	}
	return n, true
}
