package x402

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// FacilitatorConfig configures a Facilitator.
type FacilitatorConfig struct {
	// Store holds the simulated balances (a ledger) and the used nonces.
	Store store.Store
	// Network and Asset are what it settles: one asset on one network;
	// BaseSepolia and its USDC when empty.
	Network, Asset string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Facilitator is a local x402 facilitator: it verifies and settles exact
// payments on one network and asset the way a hosted facilitator does, but
// instead of calling transferWithAuthorization on a chain it moves
// simulated balances on a ledger in its store. Each address's balance is
// the ledger account "evm:<address>"; money enters through POST /fund (a
// faucet, from the account "chain:mint") and moves only by settled
// authorizations, so the ledger sums to zero.
//
// Routes: GET /supported, POST /verify, POST /settle (the protocol's),
// POST /fund {"address","amount"}, GET /balances/<address> (its own), and
// POST /rpc: the chain's side, as Ethereum JSON-RPC (chain.go), which the
// rail asks whether an authorization's nonce was used.
type Facilitator struct {
	st             store.Store
	network, asset string
	now            func() time.Time
	rpc            http.Handler
}

// Ledger accounts and currency of the local facilitator.
const (
	MintAccount = "chain:mint"
	// Currency is the ledger currency of balances: the asset's units.
	Currency = "asset-units"
)

// AddressAccount is the ledger account holding an address's balance.
func AddressAccount(address string) string {
	return "evm:" + strings.ToLower(common.HexToAddress(address).Hex())
}

// NewFacilitator returns a Facilitator.
func NewFacilitator(cfg FacilitatorConfig) (*Facilitator, error) {
	if cfg.Store == nil {
		return nil, errors.New("x402: FacilitatorConfig.Store is required")
	}
	f := &Facilitator{st: cfg.Store, network: cfg.Network, asset: cfg.Asset, now: cfg.Now}
	if f.network == "" {
		f.network = BaseSepolia
	}
	if _, err := ChainID(f.network); err != nil {
		return nil, fmt.Errorf("x402: %w", err)
	}
	if f.asset == "" {
		f.asset = DefaultAsset(f.network)
	}
	if !ValidAddress(f.asset) {
		return nil, fmt.Errorf("x402: asset %q is not an address", f.asset)
	}
	if f.now == nil {
		f.now = time.Now
	}
	rpc, err := newChainRPC(f)
	if err != nil {
		return nil, err
	}
	f.rpc = rpc
	return f, nil
}

// ServeHTTP implements http.Handler.
func (f *Facilitator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/supported":
		writeJSON(w, http.StatusOK, Supported{Kinds: []Kind{{X402Version: Version, Scheme: SchemeExact, Network: f.network}},
			Extensions: []string{}, Signers: map[string][]string{"eip155:*": {}}})
	case r.Method == http.MethodPost && (r.URL.Path == "/verify" || r.URL.Path == "/settle"):
		var req FacilitatorRequest
		if err := readJSON(r, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, Verification{InvalidReason: "invalid_payload"})
			return
		}
		if r.URL.Path == "/verify" {
			v := f.Verify(r.Context(), req)
			writeJSON(w, statusOf(v.IsValid), v)
			return
		}
		s := f.Settle(r.Context(), req)
		writeJSON(w, statusOf(s.Success), s)
	case r.Method == http.MethodPost && r.URL.Path == "/fund":
		var req struct {
			Address string `json:"address"`
			Amount  string `json:"amount"`
		}
		if err := readJSON(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
			return
		}
		b, err := f.Fund(r.Context(), req.Address, req.Amount)
		if err != nil {
			writeError(w, http.StatusBadRequest, fault.CodeOf(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, b)
	case r.URL.Path == "/rpc":
		f.rpc.ServeHTTP(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/balances/"):
		b, err := f.BalanceOf(r.Context(), strings.TrimPrefix(r.URL.Path, "/balances/"))
		if err != nil {
			writeError(w, http.StatusBadRequest, fault.CodeOf(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, b)
	default:
		writeError(w, http.StatusNotFound, "route_not_found", "routes: GET /supported, POST /verify, POST /settle, POST /fund, GET /balances/<address>, POST /rpc")
	}
}

func statusOf(ok bool) int {
	if ok {
		return http.StatusOK
	}
	return http.StatusBadRequest
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16+1))
	if err != nil {
		return err
	}
	if len(b) > 1<<16 {
		return errors.New("body is over 64 KiB")
	}
	return json.Unmarshal(b, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// reasons maps Check's codes to the protocol's invalid reasons.
var reasons = map[string]string{
	CodeInvalidPayment:     "invalid_payload",
	CodeSignatureInvalid:   "invalid_exact_evm_payload_signature",
	CodePaymentExpired:     "invalid_exact_evm_payload_authorization_valid_before",
	CodePaymentNotYetValid: "invalid_exact_evm_payload_authorization_valid_after",
	CodePaymentUnderpaid:   "invalid_exact_evm_payload_authorization_value",
	CodePaymentOverpaid:    "invalid_exact_evm_payload_authorization_value",
	CodeWrongRecipient:     "invalid_exact_evm_payload_recipient_mismatch",
	CodeWrongAsset:         "invalid_network",
}

// Reasons a facilitator gives that Check has no code for.
const (
	ReasonInsufficientFunds = "insufficient_funds"
	ReasonNonceUsed         = "invalid_exact_evm_payload_authorization_nonce_used"
	ReasonUnexpected        = "unexpected_settle_error"
)

type usedNonce struct {
	Digest      string `json:"digest"` // of the authorization and signature settled
	Transaction string `json:"transaction"`
	Payer       string `json:"payer"`
	Block       uint64 `json:"block,omitempty"`
}

func nonceKeyOf(prefix string, payer common.Address, nonce string) string {
	return prefix + strings.ToLower(payer.Hex()) + "/" + strings.ToLower(nonce)
}

// check is /verify's work, in tx: it answers the payer, the amount and the
// invalid reason ("" when valid).
func (f *Facilitator) check(tx store.Tx, req FacilitatorRequest) (common.Address, *big.Int, string, error) {
	want := req.PaymentRequirements
	if want.Scheme != SchemeExact || want.Network != f.network || !strings.EqualFold(want.Asset, f.asset) {
		return common.Address{}, nil, "invalid_payment_requirements", nil
	}
	if _, ok := uint256(want.Amount); !ok || !ValidAddress(want.PayTo) {
		return common.Address{}, nil, "invalid_payment_requirements", nil
	}
	if req.PaymentPayload.X402Version != Version {
		return common.Address{}, nil, "invalid_x402_version", nil
	}
	payer, err := Check(req.PaymentPayload, want, f.now())
	if err != nil {
		if r, ok := reasons[fault.CodeOf(err)]; ok {
			return payer, nil, r, nil
		}
		return payer, nil, "invalid_payload", nil
	}
	var used usedNonce
	switch err := store.GetJSON(tx, nonceKeyOf("facilitator/nonce/", payer, req.PaymentPayload.Payload.Authorization.Nonce), &used); {
	case err == nil:
		return payer, nil, ReasonNonceUsed, nil
	case !errors.Is(err, store.ErrNotFound):
		return payer, nil, "", err
	}
	value, _ := uint256(req.PaymentPayload.Payload.Authorization.Value)
	bal, err := ledger.Balance(tx, AddressAccount(payer.Hex()), Currency)
	if err != nil {
		return payer, nil, "", err
	}
	if big.NewInt(bal).Cmp(value) < 0 {
		return payer, value, ReasonInsufficientFunds, nil
	}
	return payer, value, "", nil
}

// Verify is POST /verify.
func (f *Facilitator) Verify(ctx context.Context, req FacilitatorRequest) Verification {
	var v Verification
	err := f.st.View(ctx, func(tx store.Tx) error {
		payer, _, reason, err := f.check(tx, req)
		v = Verification{IsValid: reason == "", InvalidReason: reason}
		if payer != (common.Address{}) {
			v.Payer = payer.Hex()
		}
		return err
	})
	if err != nil {
		return Verification{InvalidReason: "unexpected_verify_error"}
	}
	return v
}

// digest names one signed authorization: keccak256 of its EIP-712 hash
// and its signature. It is the simulated transaction's hash, so that
// settling the same authorization twice answers the same transaction.
func digest(req FacilitatorRequest) (string, error) {
	d, err := DomainOf(req.PaymentRequirements)
	if err != nil {
		return "", err
	}
	h, err := Hash(d, req.PaymentPayload.Payload.Authorization)
	if err != nil {
		return "", err
	}
	return "0x" + hex.EncodeToString(crypto.Keccak256(h, []byte(strings.ToLower(req.PaymentPayload.Payload.Signature)))), nil
}

// Settle is POST /settle: it verifies the payment again and, in one
// transaction, moves the amount from the payer's balance to the
// recipient's, marks the nonce used and writes the next block. Settling
// an authorization already settled answers its transaction again and
// moves nothing, even once the authorization has expired: it is the
// answer the first call may have lost.
func (f *Facilitator) Settle(ctx context.Context, req FacilitatorRequest) Settlement {
	s := Settlement{Network: f.network}
	txHash, err := digest(req)
	if err != nil {
		s.ErrorReason = "invalid_payload"
		return s
	}
	err = f.st.Update(ctx, func(tx store.Tx) error {
		s = Settlement{Network: f.network}
		if a, err := parseAuth(req.PaymentPayload.Payload.Authorization); err == nil {
			var used usedNonce
			switch err := store.GetJSON(tx, nonceKeyOf("facilitator/nonce/", a.from, req.PaymentPayload.Payload.Authorization.Nonce), &used); {
			case err == nil && used.Digest == txHash:
				s.Success, s.Transaction, s.Payer = true, used.Transaction, used.Payer
				return nil
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		payer, value, reason, err := f.check(tx, req)
		if err != nil {
			return err
		}
		if payer != (common.Address{}) {
			s.Payer = payer.Hex()
		}
		if reason != "" {
			s.ErrorReason = reason
			return nil
		}
		to := req.PaymentRequirements.PayTo
		if err := ledger.Post(tx, ledger.Transfer{ID: txHash, From: AddressAccount(payer.Hex()), To: AddressAccount(to),
			Amount: value.Int64(), Currency: Currency, Memo: "transferWithAuthorization " + req.PaymentPayload.Payload.Authorization.Nonce, At: f.now().UTC()}); err != nil {
			return err
		}
		block, err := f.nextBlock(tx)
		if err != nil {
			return err
		}
		s.Success, s.Transaction = true, txHash
		return store.SetJSON(tx, nonceKeyOf("facilitator/nonce/", payer, req.PaymentPayload.Payload.Authorization.Nonce),
			usedNonce{Digest: txHash, Transaction: txHash, Payer: payer.Hex(), Block: block})
	})
	if err != nil {
		return Settlement{Network: f.network, Payer: s.Payer, ErrorReason: ReasonUnexpected}
	}
	return s
}

// keyBlock holds the local chain's latest block number: each settlement
// is a block of its own.
const keyBlock = "facilitator/block"

func (f *Facilitator) nextBlock(tx store.Tx) (uint64, error) {
	var n uint64
	if err := store.GetJSON(tx, keyBlock, &n); err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	n++
	return n, store.SetJSON(tx, keyBlock, n)
}

// Fund mints amount (decimal units) to address: the local faucet.
func (f *Facilitator) Fund(ctx context.Context, address, amount string) (Balance, error) {
	if !ValidAddress(address) {
		return Balance{}, fault.New(fault.Invalid, "invalid_address", "address is a 0x-prefixed 20-byte hex address")
	}
	n, ok := uint256(amount)
	if !ok || n.Sign() <= 0 || !n.IsInt64() || ledger.CheckAmount(n.Int64()) != nil {
		return Balance{}, fault.New(fault.Invalid, "invalid_amount", "amount is a decimal number of units from 1 to %d", int64(ledger.MaxAmount))
	}
	var b Balance
	err := f.st.Update(ctx, func(tx store.Tx) error {
		var r [16]byte
		if _, err := rand.Read(r[:]); err != nil {
			return err
		}
		id := "fund-" + hex.EncodeToString(r[:])
		if err := ledger.Post(tx, ledger.Transfer{ID: id, From: MintAccount, To: AddressAccount(address), Amount: n.Int64(),
			Currency: Currency, Memo: "faucet", At: f.now().UTC()}); err != nil {
			return err
		}
		bal, err := ledger.Balance(tx, AddressAccount(address), Currency)
		b = Balance{Address: common.HexToAddress(address).Hex(), Balance: fmt.Sprint(bal)}
		return err
	})
	return b, err
}

// BalanceOf returns an address's balance.
func (f *Facilitator) BalanceOf(ctx context.Context, address string) (Balance, error) {
	if !ValidAddress(address) {
		return Balance{}, fault.New(fault.Invalid, "invalid_address", "address is a 0x-prefixed 20-byte hex address")
	}
	var b Balance
	err := f.st.View(ctx, func(tx store.Tx) error {
		bal, err := ledger.Balance(tx, AddressAccount(address), Currency)
		b = Balance{Address: common.HexToAddress(address).Hex(), Balance: fmt.Sprint(bal)}
		return err
	})
	return b, err
}
