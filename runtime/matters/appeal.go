package matters

import (
	"context"
	"encoding/json"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Court is the port through which a judged quorum Matter is appealed: a
// case whose criteria are the Matter's verdict schema and question,
// decided by the court's tiers. The escrow court implements it
// (runtime/matters/appealcourt); the judgment service does not import
// the court.
type Court interface {
	// Appeal opens the case of c, or finds the one opened before for the
	// same Matter, and answers its ruling so far.
	//
	// # Notes
	//
	// It is idempotent per Matter: a retry after a failure, or after the
	// court's operator decided an escalated case, resumes the same case.
	// A ruling that is not Final (escalated) is not an error.
	//
	// # Errors
	//
	// The court's coded errors. One of invalid, forbidden or unprocessable
	// kind, or idempotency_conflict (the case's key taken), means the
	// court will not hear the case, and the Matter is judged again; any
	// other (a race on the case, the court's store, its rail) leaves the
	// Matter appealed for a retry.
	Appeal(ctx context.Context, c AppealCase) (Ruling, error)
}

// AppealCase is what the court is asked.
type AppealCase struct {
	MatterID string
	// Appellant contests the verdict (the requester); Respondent answers
	// for it: Respondent(MatterID), one party per Matter, so that the
	// court's standing of a party never bars an appeal.
	Appellant, Respondent string
	Question              string
	VerdictSchema         json.RawMessage
	Verdict               json.RawMessage
	Reason                string
	// FeeMicro is the appeal fee in Currency, the court case's price:
	// the court takes it from the appellant's wallet when it funds the
	// case (Currency is backed by the rail, so nothing is minted);
	// overturned, the court pays it back to the appellant; upheld, it
	// pays it to the respondent, whose wallet the Matter then pays on to
	// the author of the verdict.
	FeeMicro int64
}

// Ruling is the court's answer.
type Ruling struct {
	CaseID string
	// Final is false while the case is escalated to an operator.
	Final bool
	// Upheld: the court found the verdict meets the criteria (the case
	// released to the respondent); otherwise it was overturned.
	Upheld      bool
	Tier        string
	ReceiptID   string
	ReceiptHash string
}

// Respondent is the party that answers for a Matter's verdict in court.
func Respondent(matter string) string { return "matters-respondent:" + matter }

// AppealRequest is the body of POST …/exchange/appeal.
type AppealRequest struct {
	MatterID       string `json:"matter_id"`
	Reason         string `json:"reason"`
	FeeUSDC        string `json:"fee_usdc"`
	ActionDigest   string `json:"action_digest,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
}

// Appeal moves a judged quorum Matter to appealed (matter_appealed), asks
// the court, and, once the court's ruling is final, resolves the Matter
// upheld or overturned (appeal_resolved, carrying the court's receipt id
// and hash) and moves its money: upheld settles as settle does; overturned
// forfeits the majority's bonds to the requester and returns all pay. An
// escalated case leaves the Matter appealed; the same request sent again
// after the court's operator decided resolves it.
//
// # Errors
//
// missing_field, invalid_reason, invalid_amount, invalid_action_digest
// (400); forbidden, insufficient_scope (403); matter_not_found (404);
// matter_not_appealable, quorum_matter_required, idempotency_conflict
// (409); appeal_unavailable (503) when no court is wired, and the court's
// errors.
func (s *Service) Appeal(ctx context.Context, actor Actor, req AppealRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		validID("matter_id", req.MatterID),
		validReason(req.Reason),
	); err != nil {
		return Reply{}, err
	}
	fee, err := parseMicro("fee_usdc", req.FeeUSDC, ledger.MaxAmount)
	if err != nil {
		return Reply{}, err
	}
	if fee == 0 {
		return Reply{}, invalid(ECodeInvalidAmount, `fee_usdc is required: the court case's price, a positive decimal string like "1"`)
	}
	if err := validDigest("action_digest", req.ActionDigest, false); err != nil {
		return Reply{}, err
	}
	if s.court == nil {
		return Reply{}, fault.New(fault.Unavailable, ECodeAppealUnavailable, "this server has no court wired for appeals")
	}
	ir, err := idemOf("appeal", a.Tenant, a.KeyID, req.IdempotencyKey, req)
	if err != nil {
		return Reply{}, err
	}
	if _, err := s.mutate(ctx, ir, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		if err := ownerOrOperator(a, m); err != nil {
			return Reply{}, err
		}
		if m.Status != StatusJudged {
			return Reply{}, idem.CommitThenFail(fault.New(fault.Conflict, ECodeMatterNotAppealable, "matter %s is %s; only a judged quorum matter is appealed", m.ID, m.Status))
		}
		if !a.Open && m.ActionDigest != "" && req.ActionDigest != m.ActionDigest {
			return Reply{}, invalid(ECodeInvalidActionDigest, "an appeal must carry the matter's action_digest")
		}
		x := m.Exchange
		m.Status = StatusAppealed
		x.Appeal = &Appeal{Appellant: a.KeyID, Respondent: Respondent(m.ID), ReasonHash: hashHex(req.Reason),
			FeeMicro: fee, OpenedAt: now, Reason: req.Reason}
		if a.Open {
			x.Appeal.Appellant = m.RequesterID
		}
		return s.recorded(tx, m, KindAppealed, now, s.xfill(m, nil, nil, nil), false)
	}); err != nil {
		return Reply{}, err
	}
	return s.resolveAppeal(ctx, a, req.MatterID)
}

// resolveAppeal asks the court about an appealed Matter and applies a
// final ruling; it answers the Matter and its last receipt.
func (s *Service) resolveAppeal(ctx context.Context, a caller, id string) (Reply, error) {
	var c *AppealCase
	err := s.st.View(ctx, func(tx store.Tx) error {
		m, err := load(tx, a, id)
		if err != nil || m.Status != StatusAppealed {
			return err
		}
		ap := m.Exchange.Appeal
		c = &AppealCase{MatterID: m.ID, Appellant: ap.Appellant, Respondent: ap.Respondent, Question: m.Question,
			VerdictSchema: m.VerdictSchema, Verdict: m.Verdict, Reason: ap.Reason, FeeMicro: ap.FeeMicro}
		return nil
	})
	if err != nil {
		return Reply{}, err
	}
	var ruling Ruling
	if c != nil {
		if ruling, err = s.court.Appeal(ctx, *c); err != nil {
			if courtRefused(err) {
				if rerr := s.refused(ctx, a, id, err); rerr != nil {
					return Reply{}, rerr
				}
			}
			return Reply{}, err
		}
	}
	var out Reply
	err = s.st.Update(ctx, func(tx store.Tx) error {
		now := s.now().UTC()
		m, err := load(tx, a, id)
		if err != nil {
			return err
		}
		if m.Status == StatusAppealed && c != nil {
			ap := m.Exchange.Appeal
			ap.CaseID = ruling.CaseID
			if ruling.Final {
				return s.applyRuling(tx, m, ruling, now, &out)
			}
			if err := putMatter(tx, m); err != nil {
				return err
			}
		}
		out, err = s.current(tx, m)
		return err
	})
	return out, err
}

// courtRefused reports whether the court will not hear a case: it found
// the request bad (invalid, forbidden, unprocessable), the case's key
// taken by another request, or the appellant's wallet short of the fee. Any other error, a conflict of two requests
// racing on the case included, leaves the appeal to be retried.
func courtRefused(err error) bool {
	switch fault.KindOf(err) {
	case fault.Invalid, fault.Forbidden, fault.Unprocessable:
		return true
	}
	switch fault.CodeOf(err) {
	case ECodeIdempotencyConflict, ECodeInsufficientFunds:
		return true // the key taken; the fee not in the appellant's wallet
	}
	return false
}

// refused records that the court refused an appealed Matter's case: the
// Matter is judged again, and may be settled or appealed anew.
func (s *Service) refused(ctx context.Context, a caller, id string, cause error) error {
	return s.st.Update(ctx, func(tx store.Tx) error {
		now := s.now().UTC()
		m, err := load(tx, a, id)
		if err != nil || m.Status != StatusAppealed {
			return err
		}
		m.Status, m.Exchange.Appeal = StatusJudged, nil
		_, err = s.record(tx, m, KindAppealResolved, now, s.xfill(m, nil, nil, func(xs *ExchangeSubject) {
			xs.AppealResult, xs.Reason = "refused", fault.CodeOf(cause)+": "+fault.MessageOf(cause)
		}))
		return err
	})
}

func (s *Service) applyRuling(tx store.Tx, m *Matter, ruling Ruling, now time.Time, out *Reply) error {
	ap := m.Exchange.Appeal
	ap.Result, ap.Tier, ap.CourtReceipt, ap.CourtHash, ap.ResolvedAt = "overturned", ruling.Tier, ruling.ReceiptID, ruling.ReceiptHash, now
	if ruling.Upheld {
		ap.Result = "upheld"
	}
	moved, err := s.release(tx, m, !ruling.Upheld, now)
	if err != nil {
		return err
	}
	if ruling.Upheld {
		p, err := s.move(tx, m, m.ID+".appeal-fee", ledger.AgentAccount(ap.Respondent), ledger.AgentAccount(m.Exchange.author().SolverID),
			ap.FeeMicro, "appeal fee of "+m.ID+" to the author of the upheld verdict", now)
		if err != nil {
			return err
		}
		moved = append(moved, p)
	}
	m.Status = StatusOverturned
	if ruling.Upheld {
		m.Status, m.SolverPaid, m.SettledAt = StatusUpheld, true, now
	}
	r, err := s.record(tx, m, KindAppealResolved, now, s.xfill(m, nil, moved, func(xs *ExchangeSubject) {
		xs.CaseID, xs.CourtReceipt, xs.CourtHash, xs.AppealResult = ruling.CaseID, ruling.ReceiptID, ruling.ReceiptHash, ap.Result
	}))
	if err != nil {
		return err
	}
	*out, err = changed(m, r, false)
	return err
}

// current answers a Matter and its last receipt.
func (s *Service) current(tx store.Tx, m *Matter) (Reply, error) {
	b, err := receipt.Get(tx, m.Receipts[len(m.Receipts)-1])
	if err != nil {
		return Reply{}, err
	}
	var r receipt.Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return Reply{}, err
	}
	return changed(m, r, false)
}
