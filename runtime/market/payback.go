package market

import (
	"context"
	"errors"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// KindRailRefund is the receipt of a refund paid back on the rail the
// purchase was paid on: it carries the rail's reference of the refund.
const KindRailRefund = "AssayRailRefund"

// Pay is how a request pays on a rail that is paid per request (x402):
// the transport sets it from its payment header, never from a body.
type Pay struct {
	// Proof is the payment presented (x402's PAYMENT-SIGNATURE); "" when
	// none was.
	Proof string
	// Resource is what is paid for, as the client named it (a URL).
	Resource string
}

// keyPayback holds refunds owed on the rail: <purchase> -> payback. The
// refund's transaction writes one; PayBack pays it on the rail, signs its
// receipt and deletes it.
const keyPayback = "market/payback/"

type payback struct {
	PurchaseID string `json:"purchase_id"`
	PaymentRef string `json:"payment_ref"`
	Payer      string `json:"payer"`
	Amount     USD    `json:"amount_usd"`
}

// payBackOnRail, in the refund's transaction, sends a refund that
// reached the buyer's wallet on to the rail the purchase was paid on:
// the wallet is debited again, the money leaves the market, and a payback
// is owed that PayBack settles.
func (s *Service) payBackOnRail(tx store.Tx, p *Purchase, back USD, now time.Time) error {
	if p.Rail == "" {
		return nil
	}
	if p.Rail != s.rail.Name() {
		return fault.New(fault.Internal, ECodeRailFailed, "purchase %s was paid on %s and this server settles on %s", p.ID, p.Rail, s.rail.Name())
	}
	if err := ledger.Post(tx, ledger.Transfer{ID: p.ID + ".payback", From: ledger.AgentAccount(p.Buyer), To: s.rail.Account(),
		Amount: int64(back), Currency: Currency, Memo: p.Rail + " refund of " + p.PaymentRef + " to " + p.Payer, At: now}); err != nil {
		return err
	}
	if err := s.addTotal(tx, -back); err != nil {
		return err
	}
	return store.SetJSON(tx, keyPayback+p.ID, payback{PurchaseID: p.ID, PaymentRef: p.PaymentRef, Payer: p.Payer, Amount: back})
}

// PayBack pays on the rail every refund owed there, signs an
// AssayRailRefund receipt with each one's reference, and answers how many
// it paid. Mutations that refund call it after they commit; Tick calls it
// for what a failure or a crash left owed.
//
// # Errors
//
// The first refund the rail refused; the others are still tried, and what
// is not paid stays owed.
func (s *Service) PayBack(ctx context.Context) (int, error) {
	var owed []payback
	err := s.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(keyPayback, false, func(k string, _ []byte) error {
			var pb payback
			if err := store.GetJSON(tx, k, &pb); err != nil {
				return err
			}
			owed = append(owed, pb)
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	var first error
	for _, pb := range owed {
		ref, err := s.rail.Refund(ctx, pb.PaymentRef, int64(pb.Amount))
		if err != nil {
			first = firstOf(first, railFailed("the refund of purchase "+pb.PurchaseID+" could not be paid back", err))
			continue
		}
		now := s.now().UTC()
		err = s.st.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.Get(keyPayback + pb.PurchaseID); errors.Is(err, store.ErrNotFound) {
				return nil // another node recorded it
			} else if err != nil {
				return err
			}
			p, err := loadPurchase(tx, pb.PurchaseID)
			if err != nil {
				return err
			}
			p.RefundRef = ref
			rid := receiptID(p.ID, "rail-refund")
			if _, err := s.sign(tx, KindRailRefund, rid, now, map[string]any{
				"purchase_id": p.ID, "listing_id": p.ListingID, "buyer": p.Buyer, "payer": pb.Payer, "rail": p.Rail,
				"payment_ref": pb.PaymentRef, "refund_ref": ref, "refund_usd": pb.Amount, "paid_back_at": now.Format(time.RFC3339Nano),
			}, p.Buyer, p.Seller); err != nil {
				return err
			}
			p.Receipts = append(p.Receipts, rid)
			if err := store.SetJSON(tx, purchaseKey(p.ID), p); err != nil {
				return err
			}
			return tx.Delete(keyPayback + p.ID)
		})
		if err != nil {
			first = firstOf(first, err)
			continue
		}
		n++
	}
	return n, first
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// payBackOwed pays back, after a mutation that may have refunded, what is
// owed on a rail paid per request. What the rail refuses now stays owed
// for Tick, and the mutation's answer stands: it committed.
func (s *Service) payBackOwed(ctx context.Context) {
	if s.pay != nil {
		_, _ = s.PayBack(context.WithoutCancel(ctx))
	}
}
