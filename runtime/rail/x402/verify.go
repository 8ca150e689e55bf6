package x402

import (
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/assayhq/assay/runtime/fault"
)

// Codes of a refused payment. A payment refused with a code that Payable
// reports is answered 402 with the requirements again: the client may pay
// anew. invalid_payment is a malformed header (400), payment_replayed a
// nonce already used (409).
const (
	CodePaymentRequired    = "payment_required"
	CodeInvalidPayment     = "invalid_payment"
	CodeSignatureInvalid   = "payment_signature_invalid"
	CodePaymentExpired     = "payment_expired"
	CodePaymentNotYetValid = "payment_not_yet_valid"
	CodePaymentUnderpaid   = "payment_underpaid"
	CodePaymentOverpaid    = "payment_overpaid"
	CodeWrongRecipient     = "payment_wrong_recipient"
	CodeWrongAsset         = "payment_wrong_asset"
	CodePaymentReplayed    = "payment_replayed"
	CodePaymentRefused     = "payment_refused" // the facilitator would not settle it (e.g. insufficient funds)
)

// Payable reports whether a payment refused with code may be paid anew:
// the answer is 402 with the requirements again.
func Payable(code string) bool {
	switch code {
	case CodeInvalidPayment, CodePaymentReplayed:
		return false
	}
	return strings.HasPrefix(code, "payment_")
}

func refuse(code, format string, args ...any) *fault.Error {
	kind := fault.Invalid
	if code == CodePaymentReplayed {
		kind = fault.Conflict
	}
	return fault.New(kind, code, format, args...)
}

// transferWithAuthorization is EIP-3009's typed data type.
var transferTypes = apitypes.Types{
	"EIP712Domain": {
		{Name: "name", Type: "string"},
		{Name: "version", Type: "string"},
		{Name: "chainId", Type: "uint256"},
		{Name: "verifyingContract", Type: "address"},
	},
	"TransferWithAuthorization": {
		{Name: "from", Type: "address"},
		{Name: "to", Type: "address"},
		{Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"},
		{Name: "validBefore", Type: "uint256"},
		{Name: "nonce", Type: "bytes32"},
	},
}

// auth is an Authorization parsed.
type auth struct {
	from, to                  common.Address
	value, validAfter, before *big.Int
	nonce                     [32]byte
}

func parseAuth(a Authorization) (auth, error) {
	var p auth
	if !ValidAddress(a.From) || !ValidAddress(a.To) {
		return p, refuse(CodeInvalidPayment, "authorization.from and authorization.to are 0x-prefixed 20-byte hex addresses")
	}
	p.from, p.to = common.HexToAddress(a.From), common.HexToAddress(a.To)
	var ok [3]bool
	p.value, ok[0] = uint256(a.Value)
	p.validAfter, ok[1] = uint256(a.ValidAfter)
	p.before, ok[2] = uint256(a.ValidBefore)
	if !ok[0] || !ok[1] || !ok[2] {
		return p, refuse(CodeInvalidPayment, "authorization.value, validAfter and validBefore are unsigned 256-bit integers, decimal or 0x hex")
	}
	if !nonceRE.MatchString(a.Nonce) {
		return p, refuse(CodeInvalidPayment, "authorization.nonce is 32 bytes of 0x-prefixed hex")
	}
	copy(p.nonce[:], common.FromHex(a.Nonce))
	return p, nil
}

// Domain is the EIP-712 domain of an asset: its name and version (the
// requirements' extra), its chain and its contract.
type Domain struct {
	Name, Version string
	ChainID       int64
	Contract      common.Address
}

// DomainOf returns the EIP-712 domain that requirements r name.
func DomainOf(r Requirements) (Domain, error) {
	id, err := ChainID(r.Network)
	if err != nil {
		return Domain{}, err
	}
	if !ValidAddress(r.Asset) {
		return Domain{}, fmt.Errorf("asset %q is not an address", r.Asset)
	}
	name, _ := r.Extra["name"].(string)
	version, _ := r.Extra["version"].(string)
	if name == "" || version == "" {
		return Domain{}, fmt.Errorf("extra.name and extra.version (the asset's EIP-712 domain) are required")
	}
	return Domain{Name: name, Version: version, ChainID: id, Contract: common.HexToAddress(r.Asset)}, nil
}

// Hash is the EIP-712 digest of a transferWithAuthorization in domain d.
func Hash(d Domain, a Authorization) ([]byte, error) {
	p, err := parseAuth(a)
	if err != nil {
		return nil, err
	}
	td := apitypes.TypedData{
		Types:       transferTypes,
		PrimaryType: "TransferWithAuthorization",
		Domain: apitypes.TypedDataDomain{Name: d.Name, Version: d.Version,
			ChainId: math.NewHexOrDecimal256(d.ChainID), VerifyingContract: d.Contract.Hex()},
		Message: apitypes.TypedDataMessage{
			"from": p.from.Hex(), "to": p.to.Hex(), "value": p.value,
			"validAfter": p.validAfter, "validBefore": p.before, "nonce": p.nonce,
		},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	return h, err
}

// Recover returns the address that signed a in domain d.
//
// # Errors
//
// invalid_payment for a malformed authorization or signature,
// payment_signature_invalid when no key signed it.
func Recover(d Domain, a Authorization, signature string) (common.Address, error) {
	h, err := Hash(d, a)
	if err != nil {
		return common.Address{}, err
	}
	sig, err := hexutil.Decode(signature)
	if err != nil || len(sig) != crypto.SignatureLength {
		return common.Address{}, refuse(CodeInvalidPayment, "signature is 65 bytes of 0x-prefixed hex")
	}
	if sig[64] >= 27 {
		sig[64] -= 27
	}
	pub, err := crypto.SigToPub(h, sig)
	if err != nil {
		return common.Address{}, refuse(CodeSignatureInvalid, "the signature recovers no key: %v", err)
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// Sign signs a in domain d with key, as a wallet's signTypedData does: 65
// bytes, v of 27 or 28, hex.
func Sign(key *ecdsa.PrivateKey, d Domain, a Authorization) (string, error) {
	h, err := Hash(d, a)
	if err != nil {
		return "", err
	}
	sig, err := crypto.Sign(h, key)
	if err != nil {
		return "", err
	}
	sig[64] += 27
	return hexutil.Encode(sig), nil
}

// Check verifies a payment against the requirements it must meet at now:
// the scheme, network and asset; the recipient; the exact amount; the
// validity window; and the signature, whose signer must be the
// authorization's from. It answers the payer. It does not look at the
// nonce: claiming it is the rail's (and the facilitator's) part.
//
// # Errors
//
// invalid_payment, payment_wrong_asset, payment_wrong_recipient,
// payment_underpaid, payment_overpaid, payment_not_yet_valid,
// payment_expired, payment_signature_invalid.
func Check(p Payload, want Requirements, now time.Time) (common.Address, error) {
	acc := p.Accepted
	if acc.Scheme != SchemeExact || acc.Network != want.Network || !strings.EqualFold(acc.Asset, want.Asset) {
		return common.Address{}, refuse(CodeWrongAsset, "this server takes scheme %s on %s in asset %s, not %s on %s in %s",
			want.Scheme, want.Network, want.Asset, clip(acc.Scheme), clip(acc.Network), clip(acc.Asset))
	}
	a, err := parseAuth(p.Payload.Authorization)
	if err != nil {
		return common.Address{}, err
	}
	if a.to != common.HexToAddress(want.PayTo) {
		return common.Address{}, refuse(CodeWrongRecipient, "the authorization pays %s; pay %s", a.to.Hex(), common.HexToAddress(want.PayTo).Hex())
	}
	amount, _ := uint256(want.Amount)
	switch a.value.Cmp(amount) {
	case -1:
		return common.Address{}, refuse(CodePaymentUnderpaid, "the authorization pays %s units; this costs exactly %s", a.value, amount)
	case 1:
		return common.Address{}, refuse(CodePaymentOverpaid, "the authorization pays %s units; this costs exactly %s", a.value, amount)
	}
	t := big.NewInt(now.Unix())
	if a.validAfter.Cmp(t) > 0 {
		return common.Address{}, refuse(CodePaymentNotYetValid, "the authorization is valid after %s, and it is %d", a.validAfter, now.Unix())
	}
	if a.before.Cmp(t) <= 0 {
		return common.Address{}, refuse(CodePaymentExpired, "the authorization expired at %s, and it is %d", a.before, now.Unix())
	}
	d, err := DomainOf(want)
	if err != nil {
		return common.Address{}, refuse(CodeInvalidPayment, "%v", err)
	}
	signer, err := Recover(d, p.Payload.Authorization, p.Payload.Signature)
	if err != nil {
		return common.Address{}, err
	}
	if signer != a.from {
		return common.Address{}, refuse(CodeSignatureInvalid, "the signature is %s's, not the payer's %s", signer.Hex(), a.from.Hex())
	}
	return a.from, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// NewPayment is a client's side of the exact scheme: key pays what req
// asks, with an authorization valid from validAfter until validBefore
// (Unix seconds) under nonce. Assay signs its refunds and payouts with it;
// Go clients and tests may pay with it.
func NewPayment(key *ecdsa.PrivateKey, req Requirements, validAfter, validBefore int64, nonce [32]byte) (Payload, error) {
	d, err := DomainOf(req)
	if err != nil {
		return Payload{}, err
	}
	a := Authorization{From: crypto.PubkeyToAddress(key.PublicKey).Hex(), To: common.HexToAddress(req.PayTo).Hex(), Value: req.Amount,
		ValidAfter: fmt.Sprint(validAfter), ValidBefore: fmt.Sprint(validBefore), Nonce: hexutil.Encode(nonce[:])}
	sig, err := Sign(key, d, a)
	if err != nil {
		return Payload{}, err
	}
	return Payload{X402Version: Version, Accepted: req, Payload: ExactPayload{Signature: sig, Authorization: a}}, nil
}
