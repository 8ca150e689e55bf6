package escrow

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Receipt returns a stored receipt by its id, with or without
// receipt.IDPrefix.
func (s *Service) Receipt(ctx context.Context, id string) (receipt.Receipt, error) {
	var r receipt.Receipt
	err := s.st.View(ctx, func(tx store.Tx) error {
		b, err := receipt.Get(tx, id)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &r)
	})
	return r, err
}

// AgentReceipts is an agent's receipts, newest first.
type AgentReceipts = receipt.AgentReceipts

// MaxAgentReceipts bounds one page of an agent's receipts.
const MaxAgentReceipts = receipt.MaxAgentReceipts

// AgentReceipts returns the newest limit receipts an agent was party to
// (at most MaxAgentReceipts), and how many there are.
func (s *Service) AgentReceipts(ctx context.Context, did string, limit int) (AgentReceipts, error) {
	if err := validDID("agent", did); err != nil {
		return AgentReceipts{}, err
	}
	var out AgentReceipts
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = receipt.ByAgent(tx, did, limit)
		return err
	})
	return out, err
}

// Account returns a ledger account: "rail:dev", "hold:escrow:<contract>",
// "agent:<did>".
func (s *Service) Account(ctx context.Context, id string) (ledger.Account, error) {
	if err := ident.ID("account", ECodeInvalidAccount, strings.TrimPrefix(id, ledger.AgentPrefix)); err != nil {
		return ledger.Account{}, err
	}
	var a ledger.Account
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		a, err = ledger.Get(tx, id)
		return err
	})
	return a, err
}

// Audit checks the whole ledger with exact arithmetic: its sums per
// currency and whether every balance is within its bounds.
func (s *Service) Audit(ctx context.Context) (ledger.Audit, error) {
	var a ledger.Audit
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		a, err = ledger.Check(tx)
		return err
	})
	return a, err
}

// SignedReceipt returns a stored receipt of any service, by its id, in
// the bytes that were signed.
//
// # Errors
//
// receipt_not_found (404).
func (s *Service) SignedReceipt(ctx context.Context, id string) (json.RawMessage, error) {
	var b json.RawMessage
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		b, err = receipt.Get(tx, id)
		return err
	})
	return b, err
}
