package market

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// Challenge is a challenge of record.
type Challenge struct {
	ID             string        `json:"challenge_id"`
	PurchaseID     string        `json:"purchase_id"`
	ListingID      string        `json:"listing_id"`
	Challenger     string        `json:"challenger"`
	Reason         string        `json:"reason,omitempty"`
	EvidenceSHA256 string        `json:"evidence_sha256"`
	Status         string        `json:"status"`
	Basis          string        `json:"basis"` // checker_replay, operator
	Replay         *wasm.Outcome `json:"replay,omitempty"`
	Resolution     string        `json:"resolution,omitempty"`
	BondPaidUSD    USD           `json:"bond_paid_usd"`
	RefundUSD      USD           `json:"refund_usd"`
	CreatedAt      time.Time     `json:"created_at"`
	ResolvedAt     time.Time     `json:"resolved_at,omitzero"`
	Receipts       []string      `json:"receipts"`
}

// ChallengeRequest is challenge_listing's input.
type ChallengeRequest struct {
	Agent    string          `json:"agent"`
	Evidence json.RawMessage `json:"evidence"`
	Reason   string          `json:"reason,omitempty"`
}

// ResolveRequest is resolve_challenge's input: the operator's decision.
type ResolveRequest struct {
	Verdict string `json:"verdict"` // uphold or reject
	Reason  string `json:"reason,omitempty"`
}

// Basis of a challenge's resolution.
const (
	BasisReplay   = "checker_replay"
	BasisOperator = "operator"
)

// ChallengeOf returns a challenge.
func (s *Service) ChallengeOf(ctx context.Context, id string) (*Challenge, error) {
	var c *Challenge
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		c, err = loadChallenge(tx, id)
		return err
	})
	return c, err
}

// Challenge challenges the agent's purchase of a listing inside its
// window, with evidence. For a listing with a checker the checker is
// replayed on the artifact with the evidence at /in/evidence: a failing
// replay upholds the challenge at once (refund, bond to the challenger,
// listing pulled); a passing one leaves it to the operator, never an
// automatic denial. A level-2 challenge goes to the operator. While a
// challenge is open the purchase does not settle.
//
// # Errors
//
// missing_field, invalid_agent, invalid_reason (400); evidence_too_large
// (413); listing_not_found, purchase_not_found (404);
// challenge_window_closed, already_challenged, purchase_closed (409);
// idempotency_conflict.
func (s *Service) Challenge(ctx context.Context, a principal.Actor, listingID string, req ChallengeRequest, i idem.Request) (Reply, error) {
	if err := validAgent("agent", req.Agent); err != nil {
		return Reply{}, err
	}
	if err := s.actsFor(a, req.Agent); err != nil {
		return Reply{}, err
	}
	ev := bytes.TrimSpace(req.Evidence)
	switch {
	case len(ev) == 0 || string(ev) == "null" || string(ev) == `""`:
		return Reply{}, fault.New(fault.Invalid, ECodeMissingField, "evidence is required: a failing input, a counterexample or checker output")
	case len(ev) > MaxEvidenceBytes:
		return Reply{}, fault.New(fault.TooLarge, ECodeEvidenceTooLarge, "evidence is at most %d bytes", MaxEvidenceBytes)
	}
	if err := validEvidence(ev); err != nil {
		return Reply{}, err
	}
	if err := validText("reason", req.Reason, MaxTextBytes); err != nil {
		return Reply{}, err
	}
	now := s.now().UTC()
	// Read what the replay needs on a snapshot, and refuse early.
	var (
		l   *Listing
		p   *Purchase
		art []byte
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		if l, err = loadListing(tx, listingID); err != nil {
			return err
		}
		pid, err := boughtBy(tx, listingID, req.Agent)
		if errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, ECodePurchaseNotFound, "%s has not bought %s", req.Agent, listingID)
		} else if err != nil {
			return err
		}
		if p, err = loadPurchase(tx, pid); err != nil {
			return err
		}
		if err := challengeable(p, now); err != nil {
			return err
		}
		art, err = artifact(tx, listingID)
		return err
	})
	if err != nil {
		// A request with the same key may have opened the challenge since
		// the transport looked for a replay: its answer, not a refusal, is
		// this one's.
		if r, rerr := idem.Replay(ctx, s.st, i); rerr != nil || r != nil {
			return deref(r), rerr
		}
		return Reply{}, err
	}
	var out *wasm.Outcome
	if l.Checker != nil {
		o, err := s.runChecker(ctx, *l.Checker, l.checkerInput(art), artifactInput(ev))
		if err != nil {
			return Reply{}, err
		}
		o = signedOutcome(o)
		out = &o
	}
	cid := "chl_" + s.newID()
	defer s.payBackOwed(ctx)
	return idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		p, err := loadPurchase(tx, p.ID)
		if err != nil {
			return Reply{}, err
		}
		if err := challengeable(p, now); err != nil {
			return Reply{}, err
		}
		l, err := loadListing(tx, listingID)
		if err != nil {
			return Reply{}, err
		}
		c := &Challenge{ID: cid, PurchaseID: p.ID, ListingID: l.ID, Challenger: req.Agent, Reason: req.Reason,
			EvidenceSHA256: checkers.SHA256(artifactInput(ev)), Status: ChallengeOpen, Basis: BasisOperator, Replay: out, CreatedAt: now}
		if err := putEvidence(tx, cid, ev); err != nil {
			return Reply{}, err
		}
		p.ChallengeID = cid
		if out != nil && !out.Pass && out.Kind.Decides() {
			c.Basis = BasisReplay
			err = s.uphold(a, tx, c, p, l, "the seller's checker failed on replay with the challenger's evidence: "+string(out.Kind), now)
		} else {
			// Held for the operator: out of the due index, so that it
			// cannot settle while the challenge is open.
			p.Status = PurchaseChallenged
			if err = dropDue(tx, p); err == nil {
				err = putPurchase(tx, p)
			}
			if err == nil {
				err = s.signChallenge(a, tx, c, now)
			}
		}
		if err != nil {
			return Reply{}, err
		}
		if err := putChallenge(tx, c); err != nil {
			return Reply{}, err
		}
		rc, err := receipt.Get(tx, c.Receipts[len(c.Receipts)-1])
		if err != nil {
			return Reply{}, err
		}
		body, err := receipt.Marshal(map[string]any{"challenge": c, "purchase": p, "receipt": rc})
		return Reply{Body: body, Created: true}, err
	})
}

func challengeable(p *Purchase, now time.Time) error {
	switch {
	case p.Status == PurchaseChallenged || p.ChallengeID != "":
		return fault.New(fault.Conflict, ECodeAlreadyChallenged, "purchase %s was already challenged (%s)", p.ID, p.ChallengeID)
	case p.Status != PurchaseHeld:
		return fault.New(fault.Conflict, ECodePurchaseClosed, "purchase %s is %s", p.ID, p.Status)
	case !now.Before(p.WindowClosesAt):
		return fault.New(fault.Conflict, ECodeChallengeWindowClosed, "the challenge window of purchase %s closed at %s", p.ID, p.WindowClosesAt.Format(time.RFC3339))
	}
	return nil
}

// uphold decides a challenge for the challenger: the purchase refunded,
// the bond (if any) paid to the challenger, the listing pulled, the
// seller's record marked. It stores p and l; the caller stores c.
func (s *Service) uphold(a principal.Actor, tx store.Tx, c *Challenge, p *Purchase, l *Listing, why string, now time.Time) error {
	back, err := Add(p.Price, p.Fee)
	if err != nil {
		return err
	}
	c.Status, c.Resolution, c.ResolvedAt, c.RefundUSD = ChallengeUpheld, why, now, back
	// The bond goes first and the listing is pulled before the refund
	// closes the purchase, so that closing the last open window of a
	// retired listing cannot hand the bond back to the seller.
	forfeit := USD(0)
	if l.BondHeld {
		if err := ledger.Post(tx, ledger.Transfer{ID: l.ID + ".bond-forfeit", From: bondAccount(l.ID), To: ledger.AgentAccount(c.Challenger),
			Amount: int64(l.Bond), Currency: Currency, Memo: "bond forfeited to the challenger of " + c.ID, At: now}); err != nil {
			return err
		}
		forfeit, l.BondHeld = l.Bond, false
	}
	c.BondPaidUSD = forfeit
	l.Status = ListingPulled
	if err := putListing(tx, l); err != nil {
		return err
	}
	if err := unindexListing(tx, l.ID); err != nil {
		return err
	}
	if err := s.refund(tx, p, "challenge "+c.ID+" upheld", now); err != nil {
		return err
	}
	if err := updateAgent(tx, l.Seller, now, func(a *agentRecord) error {
		a.ChallengesLost++
		if a.StakeForfeited > math.MaxInt64-forfeit {
			return fault.New(fault.Internal, ECodeStatsOverflow, "the stake forfeited by %s passed the range of int64 micro-USD", l.Seller)
		}
		a.StakeForfeited += forfeit
		return nil
	}); err != nil {
		return err
	}
	return s.signChallenge(a, tx, c, now)
}

func (s *Service) signChallenge(a principal.Actor, tx store.Tx, c *Challenge, now time.Time) error {
	rid := receiptID(c.ID, c.Status)
	_, err := s.sign(tx, KindChallenge, rid, now, withActor(a, map[string]any{
		"challenge_id": c.ID, "purchase_id": c.PurchaseID, "listing_id": c.ListingID, "challenger": c.Challenger,
		"evidence_sha256": c.EvidenceSHA256, "status": c.Status, "basis": c.Basis, "replay": c.Replay, "resolution": c.Resolution,
		"refund_usd": c.RefundUSD, "bond_paid_usd": c.BondPaidUSD, "at": now.Format(time.RFC3339Nano),
	}), c.Challenger)
	c.Receipts = append(c.Receipts, rid)
	return err
}

// Resolve is the operator's decision on an open challenge: uphold refunds
// the buyer (and pays the bond), reject returns the purchase to its hold,
// settling at once when its window has closed.
//
// # Errors
//
// invalid_verdict, invalid_reason (400); challenge_not_found (404);
// challenge_not_open (409); idempotency_conflict.
func (s *Service) Resolve(ctx context.Context, a principal.Actor, id string, req ResolveRequest, i idem.Request) (Reply, error) {
	if err := operatorOnly(a, "resolves a challenge"); err != nil {
		return Reply{}, err
	}
	if req.Verdict != "uphold" && req.Verdict != "reject" {
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidVerdict, `verdict must be "uphold" or "reject"`)
	}
	if err := validText("reason", req.Reason, MaxTextBytes); err != nil {
		return Reply{}, err
	}
	now := s.now().UTC()
	defer s.payBackOwed(ctx)
	return idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		c, err := loadChallenge(tx, id)
		if err != nil {
			return Reply{}, err
		}
		if c.Status != ChallengeOpen {
			return Reply{}, fault.New(fault.Conflict, ECodeChallengeNotOpen, "challenge %s is %s", id, c.Status)
		}
		p, err := loadPurchase(tx, c.PurchaseID)
		if err != nil {
			return Reply{}, err
		}
		l, err := loadListing(tx, c.ListingID)
		if err != nil {
			return Reply{}, err
		}
		why := "operator: " + req.Reason
		if req.Verdict == "uphold" {
			err = s.uphold(a, tx, c, p, l, why, now)
		} else {
			c.Status, c.Resolution, c.ResolvedAt = ChallengeRejected, why, now
			p.Status = PurchaseHeld
			if err = holdDue(tx, p); err == nil {
				if err = putPurchase(tx, p); err == nil {
					err = s.settle(tx, p, now)
				}
			}
			if err == nil {
				err = s.signChallenge(a, tx, c, now)
			}
		}
		if err != nil {
			return Reply{}, err
		}
		if err := putChallenge(tx, c); err != nil {
			return Reply{}, err
		}
		body, err := json.Marshal(map[string]any{"challenge": c, "purchase": p})
		return Reply{Body: body}, err
	})
}
