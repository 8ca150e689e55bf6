// Package appealcourt takes the judgment exchange's appeals to the escrow
// court: it implements matters.Court over *escrow.Service, so that neither
// service imports the other.
//
// An appeal is one court case, driven through the court's own lifecycle:
// created with the appellant as buyer and the author of the agreed verdict
// as seller, the appeal fee as price (in matters.Currency, which a rail
// backs: the court takes it from the appellant's wallet) and as
// acceptance criteria the Matter's verdict schema
// (under "verdict") and one semantic criterion, that the verdict correctly
// answers the question; funded; delivered {"question", "verdict"}; and
// disputed. The court's tiers decide: the schema deterministically, the
// semantic criterion by its jury, and an escalated case by its operator.
// release means the verdict stands (upheld), refund that it is overturned.
//
// Every step is sent with an idempotency key derived from the Matter's id,
// so an appeal retried after a failure, or after the court's operator
// resolved an escalated case, resumes the same case. The exchange
// authenticated the appellant, and vouches for it and for the respondent
// (principal.Vouch): each party moves its own case, as the court asks of
// a case in a currency a rail backs.
package appealcourt

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
)

// Criterion is the semantic criterion of every appeal.
const Criterion = "The deliverable's verdict is a correct answer to the deliverable's question."

// Court is the escrow court as the judgment exchange's court of appeal.
type Court struct{ svc *escrow.Service }

// New returns the court of appeal over svc.
func New(svc *escrow.Service) *Court { return &Court{svc: svc} }

var _ matters.Court = (*Court)(nil)

func step(matter, name string, content any) idem.Request {
	return idem.Request{Scope: "matters-appeal", Key: "matters-appeal:" + matter + ":" + name, Fingerprint: idem.FingerprintJSON("matters appeal "+name, content)}
}

// vouchedBy names the exchange as the service that vouches for a party.
const vouchedBy = "matters"

// Criteria returns an appeal's acceptance criteria.
func Criteria(verdictSchema json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(map[string]any{
		"schema": map[string]any{"type": "object", "required": []string{"question", "verdict"},
			"properties": map[string]any{"question": map[string]string{"type": "string"}, "verdict": verdictSchema}},
		"assertions": []any{map[string]any{"path": "verdict", "semantic": true, "description": Criterion}},
	})
}

// Appeal drives the Matter's case as far as the court goes and answers its
// ruling.
func (c *Court) Appeal(ctx context.Context, ac matters.AppealCase) (matters.Ruling, error) {
	criteria, err := Criteria(ac.VerdictSchema)
	if err != nil {
		return matters.Ruling{}, err
	}
	req := escrow.CreateRequest{Buyer: ac.Appellant, Seller: ac.Respondent, Price: json.RawMessage(strconv.FormatInt(ac.FeeMicro, 10)),
		Currency: matters.Currency, Acceptance: criteria}
	r, err := c.svc.Create(ctx, req, step(ac.MatterID, "create", req))
	if err != nil {
		return matters.Ruling{}, err
	}
	var created escrow.Created
	if err := json.Unmarshal(r.Body, &created); err != nil {
		return matters.Ruling{}, fmt.Errorf("appealcourt: the court's answer to create: %w", err)
	}
	id := created.ContractID
	appellant, respondent := principal.Vouch(ac.Appellant, vouchedBy), principal.Vouch(ac.Respondent, vouchedBy)
	ct, err := c.svc.Get(ctx, id)
	if err != nil {
		return matters.Ruling{}, err
	}
	if ct.Status == escrow.StatusCreated {
		if _, err := c.svc.Fund(ctx, appellant, id, step(ac.MatterID, "fund", id)); err != nil {
			return matters.Ruling{}, err
		}
	}
	if ct, err = c.svc.Get(ctx, id); err != nil {
		return matters.Ruling{}, err
	}
	if ct.Status == escrow.StatusFunded {
		d, err := json.Marshal(map[string]any{"question": ac.Question, "verdict": ac.Verdict})
		if err != nil {
			return matters.Ruling{}, err
		}
		dr := escrow.DeliverRequest{Deliverable: d, Evidence: json.RawMessage(strconv.Quote(ac.MatterID))}
		if _, err := c.svc.Deliver(ctx, respondent, id, dr, step(ac.MatterID, "deliver", dr)); err != nil {
			return matters.Ruling{}, err
		}
	}
	if ct, err = c.svc.Get(ctx, id); err != nil {
		return matters.Ruling{}, err
	}
	if ct.Status == escrow.StatusDelivered {
		dr := escrow.DisputeRequest{Reason: ac.Reason}
		if _, err := c.svc.Dispute(ctx, appellant, id, dr, step(ac.MatterID, "dispute", dr)); err != nil {
			return matters.Ruling{}, err
		}
	}
	if ct, err = c.svc.Get(ctx, id); err != nil {
		return matters.Ruling{}, err
	}
	out := matters.Ruling{CaseID: id, Tier: ct.Tier}
	if ct.Status != escrow.StatusResolved {
		return out, nil
	}
	out.Final, out.Upheld = true, ct.Verdict == adjudicate.VerdictRelease
	if n := len(ct.Receipts); n > 0 {
		out.ReceiptID = ct.Receipts[n-1]
		rc, err := c.svc.Receipt(ctx, out.ReceiptID)
		if err != nil {
			return matters.Ruling{}, err
		}
		out.ReceiptHash = rc.Proof.SubjectHash
	}
	return out, nil
}
