package market

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// agentRecord is what the market remembers of an agent for its profile.
type agentRecord struct {
	FirstSeen      time.Time `json:"first_seen"`
	TradesSold     int       `json:"trades_sold"`
	ChallengesLost int       `json:"challenges_lost"`
	StakeForfeited USD       `json:"stake_forfeited_usd"`
}

func loadAgent(tx store.Tx, did string) (agentRecord, bool, error) {
	var a agentRecord
	err := store.GetJSON(tx, agentKey(did), &a)
	if errors.Is(err, store.ErrNotFound) {
		return a, false, nil
	}
	return a, err == nil, err
}

func touchAgent(tx store.Tx, did string, now time.Time) error {
	_, ok, err := loadAgent(tx, did)
	if err != nil || ok {
		return err
	}
	return store.SetJSON(tx, agentKey(did), agentRecord{FirstSeen: now})
}

func updateAgent(tx store.Tx, did string, now time.Time, fn func(*agentRecord) error) error {
	a, ok, err := loadAgent(tx, did)
	if err != nil {
		return err
	}
	if !ok {
		a.FirstSeen = now
	}
	if err := fn(&a); err != nil {
		return err
	}
	return store.SetJSON(tx, agentKey(did), a)
}

// debit locks an agent's wallet and refuses when it holds less than amount.
func debit(tx store.Tx, did string, amount USD, what string) error {
	if err := lockWallet(tx, did); err != nil {
		return err
	}
	bal, err := ledger.Balance(tx, ledger.AgentAccount(did), Currency)
	if err != nil {
		return err
	}
	if USD(bal) < amount {
		return fault.New(fault.Conflict, ECodeInsufficientFunds, "%s needs $%s and wallet %s holds $%s; deposit first", what, amount, did, USD(bal))
	}
	return nil
}

// keyTotal holds the money in the market, in micro-USD: deposits less
// withdrawals, which is what every wallet, hold and the platform's account
// hold together. Deposits and withdrawals read and rewrite it, so the store
// serialises them and MaxTotal holds exactly.
const keyTotal = "market/total"

// total returns the money in the market. A store written before keyTotal
// existed has it from the rail account's balance.
func (s *Service) total(tx store.Tx) (USD, error) {
	var n int64
	err := store.GetJSON(tx, keyTotal, &n)
	if errors.Is(err, store.ErrNotFound) {
		b, err := ledger.Balance(tx, s.rail.Account(), Currency)
		return USD(-b), err
	}
	return USD(n), err
}

// addTotal adds delta (negative for a withdrawal) to the money in the
// market, refusing to pass MaxTotal.
func (s *Service) addTotal(tx store.Tx, delta USD) error {
	t, err := s.total(tx)
	if err != nil {
		return err
	}
	n, err := Add(t, delta)
	if err != nil {
		if delta > 0 {
			return fault.New(fault.Conflict, ECodeMarketLimitExceeded, "the market holds $%s and takes at most $%s in all; a deposit of $%s would pass it", t, MaxTotal, delta)
		}
		return err
	}
	return store.SetJSON(tx, keyTotal, int64(n))
}

// depositBounds returns the wallet's balance after depositing amount, or
// refuses the deposit when it would pass MaxWallet or MaxTotal.
func (s *Service) depositBounds(tx store.Tx, did string, amount USD) (USD, error) {
	bal, err := ledger.Balance(tx, ledger.AgentAccount(did), Currency)
	if err != nil {
		return 0, err
	}
	after, err := Add(USD(bal), amount)
	if err != nil || after > MaxWallet {
		return 0, fault.New(fault.Conflict, ECodeWalletLimitExceeded, "wallet %s holds $%s; deposits bring a wallet to at most $%s", did, USD(bal), MaxWallet)
	}
	t, err := s.total(tx)
	if err != nil {
		return 0, err
	}
	if n, err := Add(t, amount); err != nil || n > MaxTotal {
		return 0, fault.New(fault.Conflict, ECodeMarketLimitExceeded, "the market holds $%s and takes at most $%s in all; a deposit of $%s would pass it", t, MaxTotal, amount)
	}
	return after, nil
}

// Wallet is an agent's wallet.
type Wallet struct {
	Agent   string `json:"agent"`
	Balance USD    `json:"balance_usd"`
	Rail    string `json:"rail"`
}

// AmountRequest is the body of a deposit or a withdrawal.
type AmountRequest struct {
	AmountUSD json.RawMessage `json:"amount_usd"`
	// Pay is a deposit's payment on a rail paid per request (x402).
	Pay Pay `json:"-"`
}

// WalletOf returns an agent's wallet, settling first what is due.
func (s *Service) WalletOf(ctx context.Context, did string) (Wallet, error) {
	if err := validAgent("agent", did); err != nil {
		return Wallet{}, err
	}
	if err := s.SettleDue(ctx); err != nil {
		return Wallet{}, err
	}
	w := Wallet{Agent: did, Rail: s.rail.Name()}
	err := s.st.View(ctx, func(tx store.Tx) error {
		b, err := ledger.Balance(tx, ledger.AgentAccount(did), Currency)
		w.Balance = USD(b)
		return err
	})
	return w, err
}

func parseAmount(req AmountRequest) (USD, error) {
	a, err := ParseAmount(req.AmountUSD, "amount_usd")
	if err == nil && a <= 0 {
		err = fault.New(fault.Invalid, ECodeInvalidAmount, "amount_usd must be more than 0")
	}
	return a, err
}

// Deposit collects money on the rail into an agent's wallet. The dev rail
// takes it at once; a rail paid per request (x402) takes it from the
// payment the request carries (req.Pay), and without one answers
// *rail.PaymentRequired saying what to pay.
//
// # Errors
//
// invalid_agent, invalid_amount, missing_field (400); deposit_unavailable
// (403) on a rail that is neither dev nor paid per request;
// *rail.PaymentRequired, and the rail's payment codes; rail_failed (503);
// idempotency_conflict.
func (s *Service) Deposit(ctx context.Context, a principal.Actor, did string, req AmountRequest, i idem.Request) (Reply, error) {
	if err := validAgent("agent", did); err != nil {
		return Reply{}, err
	}
	if err := s.depositsFor(a, did); err != nil {
		return Reply{}, err
	}
	amount, err := parseAmount(req)
	if err != nil {
		return Reply{}, err
	}
	asker, perRequest := s.asker()
	if s.rail.Name() != (rail.Dev{}).Name() && !perRequest {
		return Reply{}, fault.New(fault.Forbidden, ECodeDepositUnavailable, "deposits are for the dev rail; this server settles on %s", s.rail.Name())
	}
	// Refuse what the bounds refuse before the rail collects anything;
	// the transaction below checks again.
	if err := s.st.View(ctx, func(tx store.Tx) error { _, err := s.depositBounds(tx, did, amount); return err }); err != nil {
		return Reply{}, err
	}
	id := "dep-" + s.newID()
	var settled *rail.Settled
	collect := func() (string, error) {
		if perRequest {
			ref, st, err := s.collect(ctx, asker, id, did, amount, req.Pay, "deposit to the wallet of "+did)
			settled = &st
			return ref, err
		}
		ref, err := s.rail.Collect(ctx, rail.Payment{ID: id, Agent: did, Amount: int64(amount), Currency: Currency})
		if err != nil {
			return "", railFailed("the deposit could not be collected", err)
		}
		return ref, nil
	}
	now := s.now().UTC()
	return rail.Charge(ctx, s.rail, int64(amount), collect, func(ref string) (Reply, error) { return s.deposit(ctx, did, amount, id, ref, settled, now, i) })
}

// deposit records in the ledger a deposit collected on the rail as ref
// (settled, on a rail paid per request).
func (s *Service) deposit(ctx context.Context, did string, amount USD, id, ref string, settled *rail.Settled, now time.Time, i idem.Request) (Reply, error) {
	return idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		if err := lockWallet(tx, did); err != nil {
			return Reply{}, err
		}
		bal, err := s.depositBounds(tx, did, amount)
		if err != nil {
			return Reply{}, err
		}
		if err := s.addTotal(tx, amount); err != nil {
			return Reply{}, err
		}
		if err := touchAgent(tx, did, now); err != nil {
			return Reply{}, err
		}
		if err := ledger.Post(tx, ledger.Transfer{ID: id, From: s.rail.Account(), To: ledger.AgentAccount(did),
			Amount: int64(amount), Currency: Currency, Memo: "deposit " + ref, At: now}); err != nil {
			return Reply{}, err
		}
		out := map[string]any{"agent": did, "amount_usd": amount, "balance_usd": bal, "payment_ref": ref, "rail": s.rail.Name()}
		if settled != nil {
			out["payment"] = settled
		}
		body, err := json.Marshal(out)
		return Reply{Body: body, Created: true}, err
	})
}

// railFailed is rail.Failed: the error a client gets when the rail refused.
func railFailed(what string, cause error) error { return rail.Failed(what, cause) }

// Withdraw pays money out of an agent's wallet on the rail.
//
// # Errors
//
// invalid_agent, invalid_amount (400); insufficient_funds (409);
// rail_failed (503); idempotency_conflict.
func (s *Service) Withdraw(ctx context.Context, a principal.Actor, did string, req AmountRequest, i idem.Request) (Reply, error) {
	if err := validAgent("agent", did); err != nil {
		return Reply{}, err
	}
	if err := s.actsFor(a, did); err != nil {
		return Reply{}, err
	}
	amount, err := parseAmount(req)
	if err != nil {
		return Reply{}, err
	}
	if err := s.SettleDue(ctx); err != nil {
		return Reply{}, err
	}
	id := "wd-" + s.newID()
	now := s.now().UTC()
	// On a rail paid per request the money waits in a hold of its own
	// until the rail has paid it out, so that the posting to the rail's
	// account can carry the payout's reference.
	out := s.rail.Account()
	if _, ok := s.asker(); ok {
		out = "hold:withdraw:" + id
	}
	r, err := idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		if err := debit(tx, did, amount, "a withdrawal"); err != nil {
			return Reply{}, err
		}
		if err := s.addTotal(tx, -amount); err != nil {
			return Reply{}, err
		}
		if err := ledger.Post(tx, ledger.Transfer{ID: id, From: ledger.AgentAccount(did), To: out,
			Amount: int64(amount), Currency: Currency, Memo: "withdrawal", At: now}); err != nil {
			return Reply{}, err
		}
		bal, err := ledger.Balance(tx, ledger.AgentAccount(did), Currency)
		if err != nil {
			return Reply{}, err
		}
		body, err := json.Marshal(map[string]any{"agent": did, "amount_usd": amount, "balance_usd": USD(bal), "payment_ref": id, "rail": s.rail.Name()})
		return Reply{Body: body}, err
	})
	if err != nil || r.Replayed {
		return r, err
	}
	ref, perr := s.rail.Payout(ctx, rail.Payment{ID: id, Agent: did, Amount: int64(amount), Currency: Currency})
	if perr != nil {
		// The payout did not happen: put the money back in the wallet,
		// and forget the stored success so that a retry with the same key
		// runs again.
		rerr := s.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
			if err := idem.Forget(tx, i); err != nil {
				return err
			}
			if err := s.addTotal(tx, amount); err != nil {
				return err
			}
			return ledger.Post(tx, ledger.Transfer{ID: id + ".reversed", From: out, To: ledger.AgentAccount(did),
				Amount: int64(amount), Currency: Currency, Memo: "withdrawal reversed: payout failed", At: now})
		})
		if rerr != nil {
			return Reply{}, fault.Wrap(fault.Internal, ECodeRailFailed,
				fmt.Errorf("market: withdrawal %s debited, not paid out, and not reversed: %w", id, errors.Join(perr, rerr)))
		}
		return Reply{}, railFailed("the withdrawal could not be paid out", perr)
	}
	if out != s.rail.Account() {
		// Paid out: the money leaves through the rail's account, with the
		// payout's reference. Should this fail, the agent was still paid,
		// and the hold shows the money that left.
		_ = s.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
			return ledger.Post(tx, ledger.Transfer{ID: id + ".out", From: out, To: s.rail.Account(),
				Amount: int64(amount), Currency: Currency, Memo: s.rail.Name() + " payout " + ref, At: now})
		})
	}
	return r, nil
}

// Purchase is a purchase of record.
type Purchase struct {
	ID             string `json:"purchase_id"`
	ListingID      string `json:"listing_id"`
	Buyer          string `json:"buyer"`
	Seller         string `json:"seller"`
	Price          USD    `json:"price_usd"`
	Fee            USD    `json:"fee_usd"`
	Level          int    `json:"verification_level"`
	ArtifactSHA256 string `json:"artifact_sha256"`
	PaymentRef     string `json:"payment_ref"`
	// Rail names the rail the purchase was paid on when it was paid by
	// a payment of its own (x402), not from the wallet; Payer is the
	// address that payment came from, which refunds go back to.
	Rail    string `json:"rail,omitempty"`
	Payer   string `json:"payer,omitempty"`
	Purpose string `json:"purpose,omitempty"`
	// RefundRef is the rail's reference of the refund paid back to
	// Payer, once it is paid.
	RefundRef      string    `json:"refund_ref,omitempty"`
	Status         string    `json:"status"`
	ChallengeID    string    `json:"challenge_id,omitempty"`
	PurchasedAt    time.Time `json:"purchased_at"`
	WindowClosesAt time.Time `json:"window_closes_at"`
	ClosedAt       time.Time `json:"closed_at,omitzero"`
	Receipts       []string  `json:"receipts"`
}

// PurchaseRequest is purchase's input.
type PurchaseRequest struct {
	Agent   string `json:"agent"`
	Purpose string `json:"purpose,omitempty"`
	// Pay is the purchase's payment on a rail paid per request (x402),
	// used when the agent's wallet cannot cover the purchase.
	Pay Pay `json:"-"`
}

// Recourse is what a buyer can do about a purchase.
type Recourse struct {
	ChallengeWindowHours float64   `json:"challenge_window_hours"`
	WindowClosesAt       time.Time `json:"window_closes_at"`
	BondUSD              USD       `json:"bond_usd"`
	RefundUSD            USD       `json:"refund_usd"`
	How                  string    `json:"how"`
}

// Bought is purchase's answer: the artifact at once, the receipt, the
// recourse.
type Bought struct {
	Purchase Purchase        `json:"purchase"`
	Artifact json.RawMessage `json:"artifact"`
	// Encoding names the form of Artifact, as it was published: json, or
	// base64 (a string of standard base64 holding the bytes).
	Encoding string          `json:"encoding"`
	TotalUSD USD             `json:"total_usd"`
	Recourse Recourse        `json:"recourse"`
	Receipt  json.RawMessage `json:"receipt"`
	// Payment is the settlement of the purchase's own payment on a rail
	// paid per request; absent when the wallet paid.
	Payment *rail.Settled `json:"payment,omitempty"`
}

func loadPurchase(tx store.Tx, id string) (*Purchase, error) {
	var p Purchase
	err := store.GetJSON(tx, purchaseKey(id), &p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, ECodePurchaseNotFound, "no purchase %s", id)
	}
	return &p, err
}

// Buy debits the buyer price + 3%, delivers the artifact, and holds the
// proceeds until the challenge window closes.
//
// # Errors
//
// invalid_agent, invalid_purpose (400); listing_not_found (404);
// listing_not_active, own_listing, already_purchased, insufficient_funds
// (409); idempotency_conflict.
func (s *Service) Buy(ctx context.Context, a principal.Actor, listingID string, req PurchaseRequest, i idem.Request) (Reply, error) {
	if err := validAgent("agent", req.Agent); err != nil {
		return Reply{}, err
	}
	if err := s.actsFor(a, req.Agent); err != nil {
		return Reply{}, err
	}
	if err := validText("purpose", req.Purpose, MaxTextBytes); err != nil {
		return Reply{}, err
	}
	now := s.now().UTC()
	pid := "pur_" + s.newID()
	// On a rail paid per request, a wallet that cannot cover the purchase
	// is paid by the request's own payment: collected before the
	// transaction, once what the transaction would refuse is refused.
	if asker, perRequest := s.asker(); perRequest {
		var collected USD
		covered := false
		err := s.st.View(ctx, func(tx store.Tx) error {
			l, err := buyable(tx, listingID, req.Agent)
			if err != nil {
				return err
			}
			if collected, err = Add(l.Price, Fee(l.Price)); err != nil {
				return err
			}
			bal, err := ledger.Balance(tx, ledger.AgentAccount(req.Agent), Currency)
			covered = USD(bal) >= collected
			return err
		})
		if err != nil {
			return Reply{}, err
		}
		if !covered {
			pay := &paid{amount: collected}
			collect := func() (string, error) {
				ref, st, err := s.collect(ctx, asker, pid+".in", req.Agent, collected, req.Pay, "purchase of listing "+listingID)
				pay.ref, pay.settled = ref, &st
				return ref, err
			}
			return rail.Charge(ctx, s.rail, int64(collected), collect, func(string) (Reply, error) {
				return s.buy(ctx, a, listingID, req, i, pid, now, pay)
			})
		}
	}
	return s.buy(ctx, a, listingID, req, i, pid, now, nil)
}

// paid is a purchase's own payment on a rail paid per request: its
// reference, its settlement and the amount collected.
type paid struct {
	ref     string
	settled *rail.Settled
	amount  USD
}

// buy records purchase pid of listingID by req.Agent in one transaction:
// paid from the wallet, or by pay (nil: the wallet alone), which is posted
// into the wallet first.
func (s *Service) buy(ctx context.Context, a principal.Actor, listingID string, req PurchaseRequest, i idem.Request, pid string, now time.Time, pay *paid) (Reply, error) {
	var (
		ref       string
		settled   *rail.Settled
		collected USD
	)
	if pay != nil {
		ref, settled, collected = pay.ref, pay.settled, pay.amount
	}
	reads := func() []string { return buyReads(listingID, req.Agent, pid) }
	return idem.MutateReading(ctx, s.st, i, reads, func(tx store.Tx) (Reply, error) {
		l, err := buyable(tx, listingID, req.Agent)
		if err != nil {
			return Reply{}, err
		}
		fee := Fee(l.Price)
		total, err := Add(l.Price, fee)
		if err != nil {
			return Reply{}, err
		}
		paymentRef, railName, payer := "ledger:"+pid+".pay", "", ""
		if settled != nil {
			if total != collected {
				return Reply{}, fault.New(fault.Conflict, ECodeListingNotActive, "listing %s changed price while it was paid for", l.ID)
			}
			if err := s.addTotal(tx, total); err != nil {
				return Reply{}, err
			}
			if err := ledger.Post(tx, ledger.Transfer{ID: pid + ".in", From: s.rail.Account(), To: ledger.AgentAccount(req.Agent),
				Amount: int64(total), Currency: Currency, Memo: s.rail.Name() + " payment " + ref + " from " + settled.Payer + " for " + pid, At: now}); err != nil {
				return Reply{}, err
			}
			paymentRef, railName, payer = ref, s.rail.Name(), settled.Payer
		}
		if err := debit(tx, req.Agent, total, "buying "+l.ID); err != nil {
			return Reply{}, err
		}
		p := Purchase{ID: pid, ListingID: l.ID, Buyer: req.Agent, Seller: l.Seller, Price: l.Price, Fee: fee, Level: l.Level,
			ArtifactSHA256: l.ArtifactSHA256, PaymentRef: paymentRef, Rail: railName, Payer: payer, Purpose: req.Purpose, Status: PurchaseHeld,
			PurchasedAt: now, WindowClosesAt: now.Add(Window(l.Level, l.Price))}
		if err := touchAgent(tx, req.Agent, now); err != nil {
			return Reply{}, err
		}
		if err := ledger.Post(tx, payTransfer(pid, req.Agent, total, "purchase of "+l.ID+", held until "+p.WindowClosesAt.Format(time.RFC3339), now)); err != nil {
			return Reply{}, err
		}
		bond := USD(0)
		if l.BondHeld {
			bond = l.Bond
		}
		rec := Recourse{ChallengeWindowHours: Window(l.Level, l.Price).Hours(), WindowClosesAt: p.WindowClosesAt, BondUSD: bond,
			RefundUSD: total, How: "challenge_listing with evidence before window_closes_at; an upheld challenge refunds price and fee" +
				map[bool]string{true: " and pays the bond to the challenger", false: ""}[bond > 0]}
		rid := receiptID(pid, "purchase")
		subject := withActor(a, map[string]any{
			"purchase_id": pid, "listing_id": l.ID, "buyer": p.Buyer, "seller": p.Seller, "artifact_sha256": p.ArtifactSHA256,
			"price_usd": p.Price, "fee_usd": fee, "total_usd": total, "currency": "USD", "payment_ref": p.PaymentRef, "rail": s.rail.Name(),
			"verification_level": l.Level, "verification_basis": basisOf(l), "purpose": p.Purpose,
			"window_closes_at": p.WindowClosesAt.Format(time.RFC3339Nano), "purchased_at": now.Format(time.RFC3339Nano),
		})
		if settled != nil {
			subject["payer"], subject["network"] = settled.Payer, settled.Network
		}
		rc, err := s.sign(tx, KindPurchase, rid, now, subject, p.Buyer, p.Seller)
		if err != nil {
			return Reply{}, err
		}
		p.Receipts = []string{rid}
		if err := store.SetJSON(tx, purchaseKey(pid), p); err != nil {
			return Reply{}, err
		}
		for _, k := range []string{openKey(l.ID, pid), dueKey(p.WindowClosesAt, pid)} {
			if err := tx.Set(k, nil); err != nil {
				return Reply{}, err
			}
		}
		if err := tx.Set(boughtKey(l.ID, req.Agent), []byte(pid)); err != nil {
			return Reply{}, err
		}
		art, err := tx.Get(keyArtifact + l.ID)
		if err != nil {
			return Reply{}, err
		}
		if !utf8.Valid(art) {
			// Published before the market refused such artifacts: it
			// cannot be delivered as JSON, so it is not sold.
			return Reply{}, fault.New(fault.Conflict, ECodeArtifactNotDeliverable, "listing %s holds an artifact that is not valid UTF-8 and cannot be delivered; nothing was charged", l.ID)
		}
		body, err := receipt.Marshal(Bought{Purchase: p, Artifact: art, Encoding: l.encoding(), TotalUSD: total, Recourse: rec, Receipt: rc, Payment: settled})
		return Reply{Body: body, Created: true}, err
	})
}

// payTransfer is purchase pid's payment of total from buyer's wallet into
// the purchase's hold.
func payTransfer(pid, buyer string, total USD, memo string, at time.Time) ledger.Transfer {
	return ledger.Transfer{ID: pid + ".pay", From: ledger.AgentAccount(buyer), To: holdAccount(pid),
		Amount: int64(total), Currency: Currency, Memo: memo, At: at}
}

// buyReads names what purchase pid of listing by agent reads, for
// store.Prefetch: the listing, whether agent bought it before, the lock
// of agent's wallet, its record, the payment's ledger keys and the
// artifact. (The wallet's balance is a scan, read after its lock.)
func buyReads(listing, agent, pid string) []string {
	keys := []string{listingKey(listing), boughtKey(listing, agent), ledger.LockKey(ledger.AgentAccount(agent)), agentKey(agent), keyArtifact + listing}
	return append(keys, ledger.ReadKeys(payTransfer(pid, agent, 0, "", time.Time{}))...)
}

// buyable loads a listing that agent may buy: active, not its own, not
// bought by it before.
func buyable(tx store.Tx, listingID, agent string) (*Listing, error) {
	l, err := loadListing(tx, listingID)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Status != ListingActive:
		return nil, fault.New(fault.Conflict, ECodeListingNotActive, "listing %s is %s and sells nothing", l.ID, l.Status)
	case l.Seller == agent:
		return nil, fault.New(fault.Conflict, ECodeOwnListing, "a seller cannot buy its own listing")
	}
	if prev, err := tx.Get(boughtKey(l.ID, agent)); err == nil {
		return nil, fault.New(fault.Conflict, ECodeAlreadyPurchased, "%s already bought %s (purchase %s)", agent, l.ID, prev)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return l, nil
}

// PurchaseOf returns a purchase, settling it first when its window has
// closed.
func (s *Service) PurchaseOf(ctx context.Context, id string) (*Purchase, error) {
	now := s.now().UTC()
	var p *Purchase
	err := s.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if p, err = loadPurchase(tx, id); err != nil {
			return err
		}
		return s.settle(tx, p, now)
	})
	return p, err
}

// settle pays out a held purchase whose window has closed: the price to
// the seller, the fee to the platform. Anything else is left alone.
func (s *Service) settle(tx store.Tx, p *Purchase, now time.Time) error {
	if p.Status != PurchaseHeld || now.Before(p.WindowClosesAt) {
		return nil
	}
	for _, t := range []ledger.Transfer{
		{ID: p.ID + ".seller", From: holdAccount(p.ID), To: ledger.AgentAccount(p.Seller), Amount: int64(p.Price), Memo: "sale of " + p.ListingID + " settled"},
		{ID: p.ID + ".fee", From: holdAccount(p.ID), To: s.platform, Amount: int64(p.Fee), Memo: "3% fee on " + p.ID},
	} {
		if t.Amount == 0 {
			continue
		}
		t.Currency, t.At = Currency, now
		if err := ledger.Post(tx, t); err != nil {
			return err
		}
	}
	p.Status, p.ClosedAt = PurchaseSettled, now
	rid := receiptID(p.ID, "settlement")
	if _, err := s.sign(tx, KindSettlement, rid, now, map[string]any{
		"purchase_id": p.ID, "listing_id": p.ListingID, "buyer": p.Buyer, "seller": p.Seller, "artifact_sha256": p.ArtifactSHA256,
		"payment_ref": p.PaymentRef, "seller_paid_usd": p.Price, "platform_fee_usd": p.Fee,
		"window_closed_at": p.WindowClosesAt.Format(time.RFC3339Nano), "settled_at": now.Format(time.RFC3339Nano),
	}, p.Buyer, p.Seller); err != nil {
		return err
	}
	p.Receipts = append(p.Receipts, rid)
	if err := updateAgent(tx, p.Seller, now, func(a *agentRecord) error { a.TradesSold++; return nil }); err != nil {
		return err
	}
	return s.close(tx, p, now)
}

// close stores a purchase that left the held state, drops it from the
// open and due indexes, and returns a retired listing's bond when this was
// its last open window.
func (s *Service) close(tx store.Tx, p *Purchase, now time.Time) error {
	if err := store.SetJSON(tx, purchaseKey(p.ID), p); err != nil {
		return err
	}
	for _, k := range []string{openKey(p.ListingID, p.ID), dueKey(p.WindowClosesAt, p.ID)} {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	l, err := loadListing(tx, p.ListingID)
	if err != nil {
		return err
	}
	if l.Status == ListingRetired && l.BondHeld {
		if _, err := s.returnBondIfClear(tx, l, now); err != nil {
			return err
		}
		return store.SetJSON(tx, listingKey(l.ID), l)
	}
	return nil
}

// refund returns a purchase's price and fee to its buyer.
func (s *Service) refund(tx store.Tx, p *Purchase, why string, now time.Time) error {
	if p.Status != PurchaseHeld && p.Status != PurchaseChallenged {
		return nil
	}
	back, err := Add(p.Price, p.Fee)
	if err != nil {
		return err
	}
	if err := ledger.Post(tx, ledger.Transfer{ID: p.ID + ".refund", From: holdAccount(p.ID), To: ledger.AgentAccount(p.Buyer),
		Amount: int64(back), Currency: Currency, Memo: "refund: " + why, At: now}); err != nil {
		return err
	}
	// Paid on the rail: paid back there, to the address that paid.
	if err := s.payBackOnRail(tx, p, back, now); err != nil {
		return err
	}
	p.Status, p.ClosedAt = PurchaseRefunded, now
	rid := receiptID(p.ID, "refund")
	subject := map[string]any{
		"purchase_id": p.ID, "listing_id": p.ListingID, "buyer": p.Buyer, "seller": p.Seller, "artifact_sha256": p.ArtifactSHA256,
		"payment_ref": p.PaymentRef, "refund_usd": back, "reason": why, "refunded_at": now.Format(time.RFC3339Nano),
	}
	if p.Rail != "" {
		// The rail's reference of the refund is in the AssayRailRefund
		// receipt that PayBack signs once the rail has paid it.
		subject["paid_back_on"], subject["payer"] = p.Rail, p.Payer
	}
	if _, err := s.sign(tx, KindRefund, rid, now, subject, p.Buyer, p.Seller); err != nil {
		return err
	}
	p.Receipts = append(p.Receipts, rid)
	return s.close(tx, p, now)
}

// settleListing settles a listing's purchases whose windows have closed.
func (s *Service) settleListing(tx store.Tx, listing string, now time.Time) error {
	var ids []string
	err := tx.Scan(keyOpen+listing+"/", false, func(k string, _ []byte) error {
		ids = append(ids, k[strings.LastIndexByte(k, '/')+1:])
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		p, err := loadPurchase(tx, id)
		if err != nil {
			return err
		}
		if err := s.settle(tx, p, now); err != nil {
			return err
		}
	}
	return nil
}

// SettleDue settles every purchase whose window has closed by now. Reads
// and mutations call it (settlement is lazy); so does Tick.
func (s *Service) SettleDue(ctx context.Context) error {
	_, err := s.settleDue(ctx)
	return err
}

func (s *Service) settleDue(ctx context.Context) (int, error) {
	now := s.now().UTC()
	limit := dueKey(now, "~")
	total := 0
	for {
		var ids []string
		scan := func(tx store.Tx) error {
			ids = ids[:0]
			err := tx.Scan(keyDue, false, func(k string, _ []byte) error {
				if k > limit || len(ids) == settleBatch {
					return store.ErrStop
				}
				ids = append(ids, k[strings.LastIndexByte(k, '/')+1:])
				return nil
			})
			if errors.Is(err, store.ErrStop) {
				err = nil
			}
			return err
		}
		if err := s.st.View(ctx, scan); err != nil || len(ids) == 0 {
			return total, err
		}
		n := 0
		err := s.st.Update(ctx, func(tx store.Tx) error {
			n = 0
			for _, id := range ids {
				p, err := loadPurchase(tx, id)
				if err != nil {
					return err
				}
				if p.Status == PurchaseHeld && !now.Before(p.WindowClosesAt) {
					if err := s.settle(tx, p, now); err != nil {
						return err
					}
					n++
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if len(ids) < settleBatch || n == 0 {
			return total, nil
		}
	}
}
