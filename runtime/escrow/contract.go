package escrow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Contract is a contract of record, as GET /contracts/{id} shows it.
type Contract struct {
	ID           string          `json:"contract_id"`
	Buyer        string          `json:"buyer"`
	Seller       string          `json:"seller"`
	Price        int64           `json:"price"`
	Currency     string          `json:"currency"`
	DeadlineTick int64           `json:"deadline_tick"`
	DeliverBy    time.Time       `json:"deliver_by,omitzero"`
	ReviewWindow string          `json:"review_window,omitempty"` // a Go duration, e.g. "72h0m0s"
	Acceptance   json.RawMessage `json:"acceptance"`
	Status       Status          `json:"status"`
	ContractHash string          `json:"contract_hash"`
	EvidenceHash string          `json:"evidence_hash,omitempty"`
	Verdict      string          `json:"verdict,omitempty"`
	Tier         string          `json:"tier,omitempty"`
	Receipts     []string        `json:"receipts,omitempty"` // receipt ids, oldest first
	CreatedAt    time.Time       `json:"created_at"`
	FundedAt     time.Time       `json:"funded_at,omitzero"`
	DeliveredAt  time.Time       `json:"delivered_at,omitzero"`
	ResolvedAt   time.Time       `json:"resolved_at,omitzero"`
}

func (c *Contract) reviewWindow() time.Duration {
	d, _ := time.ParseDuration(c.ReviewWindow)
	return d
}

// CreateRequest is the body of POST /contracts. Price, DeadlineTick and
// ReviewWindow are raw JSON so that their types are checked exactly.
type CreateRequest struct {
	Buyer        string          `json:"buyer"`
	Seller       string          `json:"seller"`
	Price        json.RawMessage `json:"price"`
	Currency     string          `json:"currency,omitempty"`
	Acceptance   json.RawMessage `json:"acceptance,omitempty"`
	DeadlineTick json.RawMessage `json:"deadline_tick,omitempty"`
	// DeliverBy (RFC 3339): after it, a funded contract with nothing
	// delivered returns the escrow to the buyer.
	DeliverBy string `json:"deliver_by,omitempty"`
	// ReviewWindow (a duration: "72h", or whole seconds): after it, a
	// delivered contract neither accepted nor disputed releases to the seller.
	ReviewWindow json.RawMessage `json:"review_window,omitempty"`
}

// DeliverRequest is the body of POST /contracts/{id}/deliver.
type DeliverRequest struct {
	Deliverable json.RawMessage `json:"deliverable"`
	Evidence    json.RawMessage `json:"evidence,omitempty"`
}

// DisputeRequest is the body of POST /contracts/{id}/dispute.
type DisputeRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ResolveRequest is the body of POST /contracts/{id}/resolve: an
// operator's decision on an escalated dispute.
type ResolveRequest struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// Created is the answer to POST /contracts.
type Created struct {
	ContractID   string `json:"contract_id"`
	ContractHash string `json:"contract_hash"`
	Status       Status `json:"status"`
}

// VerdictSubject is the credentialSubject of a verdict receipt, in the
// seed's field names.
type VerdictSubject struct {
	ContractID     string             `json:"contract_id"`
	ContractHash   string             `json:"contract_hash"`
	EvidenceHash   string             `json:"evidence_hash,omitempty"`
	Buyer          string             `json:"buyer"`
	Seller         string             `json:"seller"`
	Price          int64              `json:"price"`
	Currency       string             `json:"currency"`
	Verdict        string             `json:"verdict"`
	Tier           string             `json:"tier"`
	Checks         []adjudicate.Check `json:"checks"`
	Payout         map[string]int64   `json:"payout"`
	Reason         string             `json:"reason,omitempty"`
	CriteriaSHA256 string             `json:"criteria_sha256,omitempty"`
	DecidedAt      string             `json:"decided_at"`
	// Actor is the principal that authenticated the accept or dispute
	// (principal.Actor.Name); absent when none did.
	Actor string `json:"actor,omitempty"`
}

type delivery struct {
	Deliverable json.RawMessage `json:"deliverable"`
	Evidence    json.RawMessage `json:"evidence,omitempty"`
}

// adjudication is what a dispute decided from, kept for replay and for the
// operator of an escalated case.
type adjudication struct {
	Result *adjudicate.Result `json:"result"`
	Record adjudicate.Record  `json:"record"`
}

var (
	currencyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,16}$`)
	priceRE    = regexp.MustCompile(`^[0-9]+$`)
)

func validDID(field, did string) error {
	if did == "" {
		return fault.New(fault.Invalid, ECodeMissingField, "%s is required: the agent's DID, e.g. did:nanda:buyer", field)
	}
	return ident.ID(field, ECodeInvalidDID, did)
}

// parsePrice accepts a positive JSON integer literal up to MaxPrice.
func parsePrice(raw json.RawMessage) (int64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, fault.New(fault.Invalid, ECodeMissingField, "price is required: a positive integer amount in minor units")
	}
	if !priceRE.MatchString(s) {
		return 0, fault.New(fault.Invalid, ECodeInvalidPrice, "price must be a positive integer amount in minor units, not %s", truncate(s, 40))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > MaxPrice {
		return 0, fault.New(fault.Invalid, ECodeInvalidPrice, "price must be an integer from 1 to %d, not %s", int64(MaxPrice), truncate(s, 40))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func parseReviewWindow(raw json.RawMessage) (time.Duration, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	var d time.Duration
	if priceRE.MatchString(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 1<<31 {
			return 0, fault.New(fault.Invalid, ECodeInvalidReviewWindow, "review_window in seconds is too large")
		}
		d = time.Duration(n) * time.Second
	} else {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return 0, fault.New(fault.Invalid, ECodeInvalidReviewWindow, `review_window must be a duration like "72h" or whole seconds`)
		}
		var err error
		if d, err = time.ParseDuration(str); err != nil {
			return 0, fault.New(fault.Invalid, ECodeInvalidReviewWindow, `review_window must be a duration like "72h" or whole seconds: %v`, err)
		}
	}
	if d <= 0 {
		return 0, fault.New(fault.Invalid, ECodeInvalidReviewWindow, "review_window must be positive")
	}
	return d, nil
}

// Create records a new contract in state created.
//
// # Errors
//
// 400-kind errors for bad terms (missing_field, invalid_did, invalid_price,
// invalid_currency, the adjudicate codes for bad acceptance criteria,
// unknown_checker, seller_banned, same_party); idempotency_conflict.
func (s *Service) Create(ctx context.Context, req CreateRequest, ik idem.Request) (Reply, error) {
	c, plan, err := s.terms(req)
	if err != nil {
		return Reply{}, err
	}
	ck := s.tick()
	c.ID = s.prefix + s.newID()
	c.Status = StatusCreated
	c.CreatedAt = ck.now
	if c.ContractHash, err = contractHash(c); err != nil {
		return Reply{}, err
	}
	body, err := json.Marshal(Created{ContractID: c.ID, ContractHash: c.ContractHash, Status: c.Status})
	if err != nil {
		return Reply{}, err
	}
	// The checks that read run in the transaction, in one read (one round
	// trip on PostgreSQL): the checkers the criteria name, which are
	// immutable once stored, and the seller's mark, which a decision that
	// the seller loses writes.
	refs := plan.Checkers()
	reads := func() []string { return createReads(refs, c.Seller) }
	return s.mutate(ctx, ik, reads, func(tx store.Tx, w *saved) (Reply, error) {
		missing, marked, err := checkCreate(tx, refs, c.Seller)
		if err != nil {
			return Reply{}, err
		}
		if missing >= 0 {
			return Reply{}, fault.New(fault.Invalid, ECodeUnknownChecker, "acceptance.checkers[%d]: no checker with sha256 %s; upload it with POST /checkers first", missing, refs[missing].SHA256)
		}
		if marked {
			// Only an agent that has lost a decision can be BANNED (a
			// ban needs three negatives in a role), and one that has
			// carries a mark (addReputation): this one does, so its
			// reputation, a scan of its counters, decides.
			rep, err := reputationTx(tx, c.Seller)
			if err != nil {
				return Reply{}, err
			}
			if rep.Standing == StandingBanned {
				return Reply{}, fault.New(fault.Invalid, ECodeSellerBanned, "seller %s is BANNED (%d disputes lost as seller, %d as buyer) and is refused new contracts",
					c.Seller, rep.AsSeller.Negative, rep.AsBuyer.Negative)
			}
		}
		// Ids hold 80 random bits or more: no read for a collision.
		if err := s.contracts.save(tx, w, &record{Contract: *c}); err != nil {
			return Reply{}, err
		}
		return Reply{Body: body}, putEvent(tx, ck, Event{Event: "create", ContractID: c.ID, Status: c.Status,
			Buyer: c.Buyer, Seller: c.Seller, Price: c.Price, Currency: c.Currency})
	})
}

// terms validates a CreateRequest into a contract without id, state or hash.
func (s *Service) terms(req CreateRequest) (*Contract, *adjudicate.Plan, error) {
	if err := validDID("buyer", req.Buyer); err != nil {
		return nil, nil, err
	}
	if err := validDID("seller", req.Seller); err != nil {
		return nil, nil, err
	}
	if req.Buyer == req.Seller {
		return nil, nil, fault.New(fault.Invalid, ECodeSameParty, "buyer and seller must be different agents")
	}
	price, err := parsePrice(req.Price)
	if err != nil {
		return nil, nil, err
	}
	c := &Contract{Buyer: req.Buyer, Seller: req.Seller, Price: price, Currency: req.Currency, DeadlineTick: DefaultDeadlineTick}
	switch {
	case c.Currency == "":
		c.Currency = DefaultCurrency
	case !currencyRE.MatchString(c.Currency):
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidCurrency, "currency must be 1 to 16 of A-Z a-z 0-9 _ -")
	case rail.Lookalike(c.Currency):
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidCurrency, "currency %q differs from %s, which a payment rail backs, only in case: name one or the other exactly", c.Currency, rail.USDMicro)
	}
	if dt := bytes.TrimSpace(req.DeadlineTick); len(dt) > 0 && string(dt) != "null" {
		n, err := strconv.ParseInt(string(dt), 10, 64)
		if err != nil || n < 0 || n > MaxPrice {
			return nil, nil, fault.New(fault.Invalid, ECodeInvalidDeadlineTick, "deadline_tick must be a non-negative integer")
		}
		c.DeadlineTick = n
	}
	if req.DeliverBy != "" {
		t, err := time.Parse(time.RFC3339, req.DeliverBy)
		if err != nil {
			return nil, nil, fault.New(fault.Invalid, ECodeInvalidDeliverBy, "deliver_by must be an RFC 3339 time, e.g. 2026-05-01T12:00:00Z")
		}
		c.DeliverBy = t.UTC()
	}
	rw, err := parseReviewWindow(req.ReviewWindow)
	if err != nil {
		return nil, nil, err
	}
	if rw > 0 {
		c.ReviewWindow = rw.String()
	}
	acceptance := bytes.TrimSpace(req.Acceptance)
	if len(acceptance) == 0 || string(acceptance) == "null" {
		acceptance = []byte("{}")
	}
	plan, err := s.plans.Plan(acceptance)
	if err != nil {
		return nil, nil, fault.Within("acceptance", err)
	}
	c.Acceptance = plan.Canonical()
	return c, plan, nil
}

// contractHash is the SHA-256 of the RFC 8785 form of the terms, written
// from the contract's fields: the acceptance criteria are canonical
// already (adjudicate.Plan.Canonical).
func contractHash(c *Contract) (string, error) {
	if err := receipt.CheckIntegers(c.Acceptance); err != nil {
		return "", err
	}
	buf := make([]byte, 0, 256)
	member := func(name string, write func([]byte) []byte) receipt.Member {
		start := len(buf)
		buf = write(buf)
		return receipt.Member{Name: name, Value: buf[start:len(buf):len(buf)]}
	}
	str := func(name, s string) receipt.Member {
		return member(name, func(b []byte) []byte { return receipt.AppendString(b, s) })
	}
	var err error
	integer := func(name string, n int64) receipt.Member {
		return member(name, func(b []byte) []byte {
			var ierr error
			if b, ierr = receipt.AppendInt(b, n); ierr != nil && err == nil {
				err = ierr
			}
			return b
		})
	}
	terms := []receipt.Member{
		str("contract_id", c.ID),
		str("buyer", c.Buyer),
		str("seller", c.Seller),
		integer("price", c.Price),
		str("currency", c.Currency),
		{Name: "acceptance", Value: c.Acceptance},
		integer("deadline_tick", c.DeadlineTick),
	}
	if !c.DeliverBy.IsZero() {
		terms = append(terms, str("deliver_by", c.DeliverBy.Format(time.RFC3339)))
	}
	if c.ReviewWindow != "" {
		terms = append(terms, str("review_window", c.ReviewWindow))
	}
	if err != nil {
		return "", err
	}
	canon, err := receipt.CanonicalObject(terms)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

func notFound(id string) error {
	return fault.New(fault.NotFound, ECodeContractNotFound, "no contract %s", id)
}

func wrongState(c *Contract, action string, want Status) error {
	return fault.New(fault.Conflict, ECodeInvalidState, "cannot %s contract %s: it is %s, and %s needs it %s", action, c.ID, c.Status, action, want)
}

// Get returns a contract, settling first a deadline that has passed.
func (s *Service) Get(ctx context.Context, id string) (*Contract, error) {
	r, err := s.read(ctx, id)
	if err != nil {
		return nil, err
	}
	c, err := s.settle(ctx, r)
	if err != nil {
		return nil, err
	}
	return &c.Contract, nil
}

// read reads contract id's record on a snapshot.
func (s *Service) read(ctx context.Context, id string) (*record, error) {
	var r *record
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = s.contracts.load(tx, id)
		return err
	})
	return r, err
}

// settle settles r, read before, when a deadline of it has passed, and
// returns it as it then stands.
func (s *Service) settle(ctx context.Context, r *record) (*record, error) {
	if !s.isDue(&r.Contract, s.now()) {
		return r, nil
	}
	ck := s.tick()
	var w saved
	err := s.st.Update(ctx, func(tx store.Tx) error {
		var err error
		w = saved{}
		if r, err = s.contracts.load(tx, r.ID); err != nil {
			return err
		}
		_, err = s.settleDue(tx, &w, r, ck)
		return err
	})
	if err == nil {
		s.contracts.committed(&w)
	}
	return r, err
}

// Fund moves the price into the contract's hold. A contract in a
// notional currency is funded on the court's rail (rail.Charge): the price
// is collected first, outside the transaction, after a check of the state
// on a snapshot, and refunded on the rail when the transaction then does
// not commit (another request funded the contract first, a deadline
// passed), so that no money is taken without being held. A contract in a
// backed currency is funded from the buyer's own wallet, in the
// transaction, by a request the buyer makes (principal.ActsFor): nothing
// is minted in a currency a rail pays out.
//
// # Errors
//
// contract_not_found (404); signature_missing (401), agent_mismatch,
// insufficient_scope (403) for a caller who may not fund it;
// invalid_state, deadline_passed, insufficient_funds (409); rail_failed
// (503); idempotency_conflict.
func (s *Service) Fund(ctx context.Context, a principal.Actor, id string, ik idem.Request) (Reply, error) {
	ck := s.tick()
	// The record as this node committed it is enough to go on with when
	// it shows the contract created (the transaction checks again; a
	// collection it then refuses is refunded); anything else is read.
	r := s.contracts.peek(id)
	if r == nil || r.Status != StatusCreated || s.isDue(&r.Contract, ck.now) {
		var err error
		if r, err = s.read(ctx, id); err != nil {
			return Reply{}, err
		}
		if r, err = s.settle(ctx, r); err != nil {
			return Reply{}, err
		}
	}
	c := &r.Contract
	if err := s.mayAct(ctx, a, c, PartyBuyer); err != nil {
		return Reply{}, err
	}
	if c.Status != StatusCreated {
		// A request with the same key may have funded it since the
		// transport looked for a replay: its answer, not a wrong state,
		// is this one's.
		if r, err := s.replay(ctx, ik); err != nil || r != nil {
			return deref(r), err
		}
		return Reply{}, wrongState(c, "fund", StatusCreated)
	}
	if rail.Backed(c.Currency) {
		return s.fund(ctx, c, ik, ck, "")
	}
	// A payment id of its own per attempt: a losing attempt refunds only
	// what it collected.
	pay := rail.Payment{ID: c.ID + ".fund." + s.newID(), Agent: c.Buyer, Amount: c.Price, Currency: c.Currency}
	collect := func() (string, error) {
		ref, err := s.rail.Collect(ctx, pay)
		if err != nil {
			return "", rail.Failed("the price could not be collected", fmt.Errorf("collect %d %s from %s on the %s rail: %w", c.Price, c.Currency, c.Buyer, s.rail.Name(), err))
		}
		return ref, nil
	}
	return rail.Charge(ctx, s.rail, c.Price, collect, func(ref string) (Reply, error) { return s.fund(ctx, c, ik, ck, ref) })
}

// fund moves the price into the hold of the contract that seen, read before
// the transaction, is a copy of: the transaction reads the contract again.
func (s *Service) fund(ctx context.Context, seen *Contract, ik idem.Request, ck clock, ref string) (Reply, error) {
	id := seen.ID
	reads := func() []string {
		return fundReads(id, s.fundTransfer(seen, ck, ref))
	}
	return s.mutate(ctx, ik, reads, func(tx store.Tx, w *saved) (Reply, error) {
		r, err := s.contracts.load(tx, id)
		if err != nil {
			return Reply{}, err
		}
		c := &r.Contract
		if c.Status != StatusCreated {
			return Reply{}, wrongState(c, "fund", StatusCreated)
		}
		if c.Price != seen.Price || c.Currency != seen.Currency || c.Buyer != seen.Buyer {
			// Terms never change once made; a store restored or written
			// behind the court's back may hold others than were collected.
			return Reply{}, fault.New(fault.Conflict, ECodeInvalidState, "contract %s changed while it was being funded; send the funding again", id)
		}
		if !c.DeliverBy.IsZero() && !ck.now.Before(c.DeliverBy) {
			return Reply{}, fault.New(fault.Conflict, ECodeDeadlinePassed, "cannot fund contract %s: its deliver_by %s has passed", id, c.DeliverBy.Format(time.RFC3339))
		}
		if rail.Backed(c.Currency) {
			if err := debit(tx, c.Buyer, c.Price, c.Currency, "funding "+id); err != nil {
				return Reply{}, err
			}
		}
		if err := ledger.Post(tx, s.fundTransfer(c, ck, ref)); err != nil {
			return Reply{}, err
		}
		c.Status, c.FundedAt = StatusFunded, ck.now
		if err := s.contracts.save(tx, w, r); err != nil {
			return Reply{}, err
		}
		return Reply{Body: json.RawMessage(`{"status":"funded"}`)},
			putEvent(tx, ck, Event{Event: "fund", ContractID: id, Status: c.Status, Price: c.Price, Currency: c.Currency})
	})
}

// fundTransfer is the transfer that funds c into its hold: in a backed
// currency from the buyer's wallet; in a notional one from the buyer's
// mint account, with the reference ref of its collection on the rail.
func (s *Service) fundTransfer(c *Contract, ck clock, ref string) ledger.Transfer {
	if rail.Backed(c.Currency) {
		return ledger.Transfer{ID: c.ID + ".fund", From: ledger.AgentAccount(c.Buyer), To: holdAccount(c.ID),
			Amount: c.Price, Currency: c.Currency, Memo: "fund " + c.ID + " from the buyer's wallet", At: ck.now}
	}
	return ledger.Transfer{ID: c.ID + ".fund", From: rail.MintAccount(c.Currency, c.Buyer), To: holdAccount(c.ID),
		Amount: c.Price, Currency: c.Currency, Memo: "fund " + c.ID + " (" + s.rail.Name() + " " + ref + ")", At: ck.now}
}

// debit locks an agent's wallet in currency and refuses when it holds
// less than amount: the lock every service takes before a debit
// (ledger.Lock), so that two debits of one wallet never pass on one
// balance.
func debit(tx store.Tx, agent string, amount int64, currency, what string) error {
	acct := ledger.AgentAccount(agent)
	if err := ledger.Lock(tx, acct); err != nil {
		return err
	}
	bal, err := ledger.Balance(tx, acct, currency)
	if err != nil {
		return err
	}
	if bal < amount {
		return fault.New(fault.Conflict, ECodeInsufficientFunds, "%s needs %d %s and the wallet of %s holds %d; deposit first (the market's deposit route)", what, amount, currency, agent, bal)
	}
	return nil
}

// Deliver records the seller's deliverable and evidence and their hash.
func (s *Service) Deliver(ctx context.Context, a principal.Actor, id string, req DeliverRequest, ik idem.Request) (Reply, error) {
	if err := s.mayActOn(ctx, a, id, PartySeller); err != nil {
		return Reply{}, err
	}
	d := bytes.TrimSpace(req.Deliverable)
	if len(d) == 0 || string(d) == "null" {
		return Reply{}, fault.New(fault.Invalid, ECodeMissingField, "deliverable is required: the work product the acceptance criteria are checked against")
	}
	parsed, err := adjudicate.ParseDeliverable(d)
	if err != nil {
		return Reply{}, err // coded invalid_deliverable, its message starting "deliverable: "
	}
	ev := bytes.TrimSpace(req.Evidence)
	if len(ev) == 0 {
		ev = []byte("null")
	}
	canon, err := receipt.CanonicalJSON(fmt.Appendf(nil, `{"deliverable":%s,"evidence":%s}`, d, ev))
	if err != nil {
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidDeliverable, "deliverable and evidence must be canonicalisable JSON: %v", err)
	}
	// Stored compacted, and otherwise as sent (delivery.AppendJSON): a
	// deliverable that is not a string is its artifact, which
	// ParseDeliverable compacted into a buffer of its own; a string,
	// trimmed, is compact already.
	var evidence bytes.Buffer
	if err := json.Compact(&evidence, ev); err != nil {
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidDeliverable, "evidence: %v", err)
	}
	dl := delivery{Deliverable: parsed.Artifact(), Evidence: evidence.Bytes()}
	if d[0] == '"' {
		dl.Deliverable = bytes.Clone(d)
	}
	sum := sha256.Sum256(canon)
	evidenceHash := hex.EncodeToString(sum[:])
	body := json.RawMessage(`{"evidence_hash":"` + evidenceHash + `","status":"` + string(StatusDelivered) + `"}`) // hex needs no escape
	ck := s.tick()
	reads := func() []string { return deliverReads(id) }
	return s.mutate(ctx, ik, reads, func(tx store.Tx, w *saved) (Reply, error) {
		r, err := s.contracts.load(tx, id)
		if err != nil {
			return Reply{}, err
		}
		c := &r.Contract
		if err := s.lapse(tx, w, r, ck, func() error {
			return fault.New(fault.Conflict, ECodeDeadlinePassed,
				"cannot deliver contract %s: its deliver_by %s passed, and the escrow went back to the buyer", id, c.DeliverBy.Format(time.RFC3339))
		}); err != nil {
			return Reply{}, err
		}
		if c.Status != StatusFunded {
			return Reply{}, wrongState(c, "deliver", StatusFunded)
		}
		if err := s.contracts.putDelivery(tx, r, dl); err != nil {
			return Reply{}, err
		}
		c.Status, c.DeliveredAt, c.EvidenceHash = StatusDelivered, ck.now, evidenceHash
		if err := s.contracts.save(tx, w, r); err != nil {
			return Reply{}, err
		}
		return Reply{Body: body}, putEvent(tx, ck, Event{Event: "deliver", ContractID: id, Status: c.Status, EvidenceHash: evidenceHash})
	})
}

// Accept releases the escrow to the seller: the buyer's own decision.
func (s *Service) Accept(ctx context.Context, a principal.Actor, id string, ik idem.Request) (Reply, error) {
	if err := s.mayActOn(ctx, a, id, PartyBuyer); err != nil {
		return Reply{}, err
	}
	ck := s.tick()
	d := decision{event: "accept", verdict: adjudicate.VerdictRelease, tier: TierBuyerAccept, actor: a.Name()}
	// The contract as this node last saw it, if it did, names the keys.
	reads := func() []string { return decisionReads(id, s.contracts.peek(id), d) }
	return s.mutate(ctx, ik, reads, func(tx store.Tx, w *saved) (Reply, error) {
		r, err := s.decidable(tx, w, id, "accept", ck)
		if err != nil {
			return Reply{}, err
		}
		body, err := s.finalize(tx, w, r, ck, d)
		return Reply{Body: body}, err
	})
}

// decidable loads a contract that must be delivered, settling a lapsed
// review window first.
func (s *Service) decidable(tx store.Tx, w *saved, id, action string, ck clock) (*record, error) {
	r, err := s.contracts.load(tx, id)
	if err != nil {
		return nil, err
	}
	c := &r.Contract
	if err := s.lapse(tx, w, r, ck, func() error {
		return fault.New(fault.Conflict, ECodeReviewWindowClosed,
			"cannot %s contract %s: its review window closed and the escrow was released to the seller", action, id)
	}); err != nil {
		return nil, err
	}
	if c.Status != StatusDelivered {
		return nil, wrongState(c, action, StatusDelivered)
	}
	return r, nil
}

// Dispute adjudicates the delivered contract: the court replays the
// criteria against the deliverable and signs the verdict.
func (s *Service) Dispute(ctx context.Context, a principal.Actor, id string, req DisputeRequest, ik idem.Request) (Reply, error) {
	if err := ident.Text("reason", req.Reason, MaxReasonBytes); err != nil {
		return Reply{}, err
	}
	// Adjudicate outside the write transaction, on the delivery as this
	// node committed it or as a snapshot holds it: a delivery never
	// changes once made, and the transaction checks that it is the one
	// judged (its evidence hash).
	r, err := s.readDelivery(ctx, id)
	if err != nil {
		return Reply{}, err
	}
	c := &r.Contract
	if err := s.mayAct(ctx, a, c, PartyBuyer); err != nil {
		return Reply{}, err
	}
	var adj *adjudication
	if c.Status == StatusDelivered && !s.isDue(c, s.now()) {
		if adj, err = s.adjudicate(ctx, c, *r.delivery); err != nil {
			return Reply{}, err
		}
	}
	ck := s.tick()
	seen := r // the record the adjudication judged
	var d decision
	if adj != nil {
		d = decision{event: "dispute", verdict: adj.Result.Verdict, tier: adj.Result.Tier,
			checks: adj.Result.Checks, reason: req.Reason, criteria: adj.Result.CriteriaSHA256, counts: true, actor: a.Name()}
	}
	reads := func() []string { return decisionReads(id, seen, d) }
	return s.mutate(ctx, ik, reads, func(tx store.Tx, w *saved) (Reply, error) {
		r, err := s.decidable(tx, w, id, "dispute", ck)
		if err != nil {
			return Reply{}, err
		}
		if adj == nil || r.EvidenceHash != seen.EvidenceHash {
			// What was judged was read before its delivery landed.
			return Reply{}, fault.New(fault.Conflict, ECodeInvalidState, "contract %s was delivered while this dispute was read; send the dispute again", id)
		}
		r.adjudication = adj
		body, err := s.finalize(tx, w, r, ck, d)
		return Reply{Body: body}, err
	})
}

// readDelivery returns contract id's record and, when it is delivered,
// its delivery: as this node committed them when it did, read on a
// snapshot otherwise. A contract not delivered has none, and needs none.
func (s *Service) readDelivery(ctx context.Context, id string) (*record, error) {
	if r := s.contracts.peek(id); r != nil && r.Status == StatusDelivered && r.delivery != nil && !r.apart {
		return r, nil
	}
	var r *record
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		if r, err = s.contracts.load(tx, id); err != nil {
			return err
		}
		if r.Status != StatusDelivered {
			return nil
		}
		return s.contracts.loadDelivery(tx, r)
	})
	return r, err
}

func (s *Service) adjudicate(ctx context.Context, c *Contract, dl delivery) (*adjudication, error) {
	plan, err := s.plans.Plan(c.Acceptance)
	if err != nil {
		return nil, fmt.Errorf("escrow: stored acceptance of %s does not compile: %v", c.ID, err)
	}
	d, err := adjudicate.ParseDeliverable(dl.Deliverable)
	if err != nil {
		return nil, fmt.Errorf("escrow: stored deliverable of %s does not parse: %v", c.ID, err)
	}
	var runner adjudicate.Runner
	if s.runner != nil {
		runner = s.runner
	}
	res, rec, err := adjudicate.Judge(ctx, plan, d, runner, s.juror)
	if err != nil {
		return nil, err
	}
	return &adjudication{Result: res, Record: rec}, nil
}

// Resolve is an operator's decision on an escalated dispute.
func (s *Service) Resolve(ctx context.Context, a principal.Actor, id string, req ResolveRequest, ik idem.Request) (Reply, error) {
	if !a.IsOperator() {
		return Reply{}, fault.New(fault.Forbidden, ECodeOperatorOnly, "only the operator resolves an escalated dispute")
	}
	if req.Verdict != adjudicate.VerdictRelease && req.Verdict != adjudicate.VerdictRefund {
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidVerdict, `verdict must be "release" or "refund"`)
	}
	if err := ident.Text("reason", req.Reason, MaxReasonBytes); err != nil {
		return Reply{}, err
	}
	ck := s.tick()
	return s.mutate(ctx, ik, nil, func(tx store.Tx, w *saved) (Reply, error) {
		r, err := s.contracts.load(tx, id)
		if err != nil {
			return Reply{}, err
		}
		if r.Status != StatusEscalated {
			return Reply{}, wrongState(&r.Contract, "resolve", StatusEscalated)
		}
		if err := s.contracts.loadAdjudication(tx, r); err != nil {
			return Reply{}, err
		}
		adj := r.adjudication
		body, err := s.finalize(tx, w, r, ck, decision{event: "resolve", verdict: req.Verdict, tier: TierOperator,
			checks: adj.Result.Checks, reason: req.Reason, criteria: adj.Result.CriteriaSHA256, counts: true})
		return Reply{Body: body}, err
	})
}

// isDue reports whether a deadline of c has passed at now.
func (s *Service) isDue(c *Contract, now time.Time) bool {
	switch c.Status {
	case StatusFunded:
		return !c.DeliverBy.IsZero() && !now.Before(c.DeliverBy)
	case StatusDelivered:
		w := c.reviewWindow()
		return w > 0 && !now.Before(c.DeliveredAt.Add(w))
	}
	return false
}

// settleDue settles c in tx when a deadline has passed: a refund when
// nothing was delivered by deliver_by, a release when the review window
// lapsed. It reports whether it did.
func (s *Service) settleDue(tx store.Tx, w *saved, r *record, ck clock) (bool, error) {
	c := &r.Contract
	if !s.isDue(c, ck.now) {
		return false, nil
	}
	var d decision
	if c.Status == StatusFunded {
		d = decision{event: "expire", verdict: adjudicate.VerdictRefund, tier: TierDeliverBy,
			reason: "nothing was delivered by deliver_by " + c.DeliverBy.Format(time.RFC3339)}
	} else {
		d = decision{event: "expire", verdict: adjudicate.VerdictRelease, tier: TierReview,
			reason: fmt.Sprintf("the buyer neither accepted nor disputed within the review window of %s", c.ReviewWindow)}
	}
	_, err := s.finalize(tx, w, r, ck, d)
	return true, err
}

// lapse is idem.Lapse for c: when a deadline of c has passed, settle it in
// tx and fail the request with refuse's error once the settlement commits.
func (s *Service) lapse(tx store.Tx, w *saved, r *record, ck clock, refuse func() error) error {
	return idem.Lapse(s.isDue(&r.Contract, ck.now), func() error { _, err := s.settleDue(tx, w, r, ck); return err }, refuse)
}

// payoutTransfer is the transfer that pays amount of c's hold out to agent
// to on verdict.
func payoutTransfer(c *Contract, to string, amount int64, verdict string, ck clock) ledger.Transfer {
	return ledger.Transfer{ID: c.ID + ".payout", From: holdAccount(c.ID), To: ledger.AgentAccount(to),
		Amount: amount, Currency: c.Currency, Memo: verdict + " " + c.ID, At: ck.now}
}

// payee is whom a verdict on c pays its hold to: the seller on a release,
// the buyer on a refund; "" on any other.
func payee(c *Contract, verdict string) string {
	switch verdict {
	case adjudicate.VerdictRelease:
		return c.Seller
	case adjudicate.VerdictRefund:
		return c.Buyer
	}
	return ""
}

type decision struct {
	event    string
	verdict  string
	tier     string
	checks   []adjudicate.Check
	reason   string
	criteria string
	counts   bool   // a dispute verdict, which reputation counts
	actor    string // who authenticated the request, for the receipt
}

// finalize signs and stores the receipt of a decision on c, pays out, and
// records the contract's new state, its reputation inputs and the event.
// It returns the receipt's JSON.
func (s *Service) finalize(tx store.Tx, w *saved, r *record, ck clock, d decision) ([]byte, error) {
	c := &r.Contract
	payout := map[string]int64{}
	purpose, status := "final", StatusResolved
	switch d.verdict {
	case adjudicate.VerdictRelease, adjudicate.VerdictRefund:
		payout[payee(c, d.verdict)] = c.Price
	case adjudicate.VerdictEscalated:
		purpose, status = "escalation", StatusEscalated
	default:
		return nil, fmt.Errorf("escrow: unknown verdict %q", d.verdict)
	}
	for to, amount := range payout {
		if err := ledger.Post(tx, payoutTransfer(c, to, amount, d.verdict, ck)); err != nil {
			return nil, err
		}
	}
	checks := d.checks
	if checks == nil {
		checks = []adjudicate.Check{}
	}
	rid := receipt.ID(c.ID, purpose)
	rc, err := s.signer.Sign(receipt.KindVerdict, rid, VerdictSubject{
		ContractID: c.ID, ContractHash: c.ContractHash, EvidenceHash: c.EvidenceHash,
		Buyer: c.Buyer, Seller: c.Seller, Price: c.Price, Currency: c.Currency,
		Verdict: d.verdict, Tier: d.tier, Checks: checks, Payout: payout, Reason: d.reason,
		CriteriaSHA256: d.criteria, DecidedAt: ck.now.Format(time.RFC3339Nano), Actor: d.actor,
	}.signable())
	if err != nil {
		return nil, fmt.Errorf("escrow: sign receipt: %w", err)
	}
	if d.tier == TierOperator { // the operator's resolution overturns the escalation's receipt, in the transparency log
		rc = rc.Superseding(receipt.ID(c.ID, "escalation"))
	}
	body, err := receipt.Put(tx, rc, ck.now, c.Buyer, c.Seller)
	if err != nil {
		return nil, err
	}
	if status == StatusResolved {
		if err := recordReputation(tx, c, d); err != nil {
			return nil, err
		}
	}
	c.Status, c.Verdict, c.Tier = status, d.verdict, d.tier
	c.Receipts = append(c.Receipts, rid)
	if status == StatusResolved {
		c.ResolvedAt = ck.now
	}
	if err := s.contracts.save(tx, w, r); err != nil {
		return nil, err
	}
	return body, putEvent(tx, ck, Event{Event: d.event, ContractID: c.ID, Status: status,
		Verdict: d.verdict, Tier: d.tier, Payout: payout, ReceiptID: rid})
}
