package matters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// OpenRequest is the body of POST /api/v1/economic/matters/open.
type OpenRequest struct {
	RequesterID    string          `json:"requester_id"`
	ActionDigest   string          `json:"action_digest,omitempty"`
	Question       string          `json:"question"`
	StakesUSDC     string          `json:"stakes_usdc"`
	Deadline       string          `json:"deadline"`
	RiskClass      string          `json:"risk_class"`
	VerdictSchema  json.RawMessage `json:"verdict_schema"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// AssignRequest is the body of POST …/assign.
type AssignRequest struct {
	MatterID       string `json:"matter_id"`
	SolverID       string `json:"solver_id"`
	SolverKind     string `json:"solver_kind"`
	Qualification  string `json:"qualification,omitempty"`
	ConflictFree   *bool  `json:"conflict_free"`
	IdempotencyKey string `json:"idempotency_key"`
}

// AcceptRequest is the body of POST …/accept.
type AcceptRequest struct {
	MatterID       string `json:"matter_id"`
	SolverID       string `json:"solver_id"`
	IdempotencyKey string `json:"idempotency_key"`
}

// VerdictRequest is the body of POST …/verdict.
type VerdictRequest struct {
	MatterID       string          `json:"matter_id"`
	SolverID       string          `json:"solver_id"`
	SolverKind     string          `json:"solver_kind"`
	ActionDigest   string          `json:"action_digest,omitempty"`
	Verdict        json.RawMessage `json:"verdict"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// SettleRequest is the body of POST …/settle.
type SettleRequest struct {
	MatterID       string `json:"matter_id"`
	IdempotencyKey string `json:"idempotency_key"`
}

// DisputeRequest is the body of POST …/dispute.
type DisputeRequest struct {
	MatterID       string `json:"matter_id"`
	Reason         string `json:"reason"`
	ActionDigest   string `json:"action_digest,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
}

// TickRequest is the body of POST …/tick.
type TickRequest struct {
	IdempotencyKey string `json:"idempotency_key"`
}

// Changed is the answer to every mutation but tick: the Matter's redacted
// projection and the receipt the transition signed.
type Changed struct {
	Matter  Public          `json:"matter"`
	Receipt receipt.Receipt `json:"receipt"`
}

// Ticked is the answer to tick: the Matters it expired and their receipts.
type Ticked struct {
	EvaluatedAt time.Time         `json:"evaluated_at"`
	Expired     []Public          `json:"expired"`
	Receipts    []receipt.Receipt `json:"receipts"`
}

// Subject is the credentialSubject of every Matter receipt.
type Subject struct {
	Schema              string `json:"schema"`
	Kind                string `json:"kind"`
	MatterID            string `json:"matter_id"`
	Sequence            int    `json:"sequence"`
	PreviousReceiptHash string `json:"previous_receipt_hash"` // "" for the first
	Status              Status `json:"status"`
	RiskClass           string `json:"risk_class"`
	SolverKind          string `json:"solver_kind"` // "unassigned" before an assignment
	TenantHash          string `json:"tenant_id_sha256"`
	RequesterHash       string `json:"requester_id_sha256"`
	ActionDigest        string `json:"action_digest,omitempty"`
	QuestionHash        string `json:"question_sha256"`
	SchemaHash          string `json:"verdict_schema_sha256"`
	StakesUSDC          string `json:"stakes_usdc"`
	Deadline            string `json:"deadline"`
	SolverHash          string `json:"solver_id_sha256,omitempty"`
	SolverStatus        string `json:"solver_status,omitempty"`
	VerdictHash         string `json:"verdict_sha256,omitempty"`
	VerdictSchemaOK     *bool  `json:"verdict_schema_ok,omitempty"`
	SolverPaid          *bool  `json:"solver_paid,omitempty"`
	Settlement          string `json:"settlement,omitempty"`
	ReasonHash          string `json:"reason_sha256,omitempty"`
	At                  string `json:"at"`
	// Exchange is set on a quorum Matter's receipts only.
	Exchange *ExchangeSubject `json:"exchange,omitempty"`
}

// Settlement is what matter_settled says about money: nothing moved.
const Settlement = "non_custodial_flag_only_no_usdc_moved"

// idemOf is a judgment mutation's idempotency (idem.New): the key every
// judgment mutation takes, as the seed says, in the scope of the
// operation op and of who acts (the tenant and the id the request acts
// as: bound to the signing principal in signed mode), and the request as
// its content.
//
// # Errors
//
// invalid_idempotency_key (400): no key, or one outside the grammar.
func idemOf(op, tenant, who, key string, req any) (idem.Request, error) {
	if key == "" {
		return idem.Request{}, invalid(ECodeInvalidIdemKey, "idempotency_key is required: every mutation takes one (1 to %d bytes)", idem.MaxKey)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return idem.Request{}, err
	}
	return idem.New("matters "+op, tenant+"/"+who, key, b)
}

// keyed is mutate under the idempotency of a judgment mutation's key: in
// the scope of op and of who acts in the caller's tenant (idemOf).
func (s *Service) keyed(ctx context.Context, op string, a caller, who, key string, req any, fn func(tx store.Tx, now time.Time) (Reply, error)) (Reply, error) {
	ir, err := idemOf(op, a.Tenant, who, key, req)
	if err != nil {
		return Reply{}, err
	}
	return s.mutate(ctx, ir, fn)
}

// mutate is idem.Mutate with the service clock read inside the
// transaction, once per attempt.
func (s *Service) mutate(ctx context.Context, r idem.Request, fn func(tx store.Tx, now time.Time) (Reply, error)) (Reply, error) {
	return idem.Mutate(ctx, s.st, r, func(tx store.Tx) (Reply, error) { return fn(tx, s.now().UTC()) })
}

func need(a caller, scope string) error {
	if !a.Can(scope) {
		return fault.New(fault.Forbidden, ECodeInsufficientScope, "this call needs the %s scope", scope)
	}
	return nil
}

func needRole(a caller, roles ...string) error {
	for _, r := range roles {
		if a.Has(r) {
			return nil
		}
	}
	return fault.New(fault.Forbidden, ECodeForbidden, "this call needs the role %s", strings.Join(roles, " or "))
}

func notFound(id string) error {
	return fault.New(fault.NotFound, ECodeMatterNotFound, "no matter %q", id)
}

// load reads a Matter the actor's tenant owns; any other is not found.
func load(tx store.Tx, a caller, id string) (*Matter, error) {
	if id == "" {
		return nil, invalid(ECodeMissingField, "matter_id is required")
	}
	m, err := getMatter(tx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && m.Tenant != a.Tenant) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// owned loads a Matter the caller's tenant owns and that the caller may
// change: its requester or an operator of the tenant.
func owned(tx store.Tx, a caller, id string) (*Matter, error) {
	m, err := load(tx, a, id)
	if err != nil {
		return nil, err
	}
	return m, ownerOrOperator(a, m)
}

// ownerOrOperator allows the Matter's requester and the tenant's operators.
func ownerOrOperator(a caller, m *Matter) error {
	if a.Open || a.Has(RoleOperator) || (a.Has(RoleRequester) && a.KeyID == m.RequesterID) {
		return nil
	}
	return fault.New(fault.Forbidden, ECodeForbidden, "only the matter's requester or an operator may do this")
}

// due reports whether a v1 Matter is open at or past its deadline; a
// quorum Matter's deadlines are exchangeDue's.
func due(m *Matter, now time.Time) bool {
	return m.Status == StatusOpen && m.Exchange == nil && !now.Before(m.Deadline)
}

// record signs the Matter's next receipt of kind, chained to the last one,
// and writes the Matter.
func (s *Service) record(tx store.Tx, m *Matter, kind string, now time.Time, fill func(*Subject)) (receipt.Receipt, error) {
	seq := len(m.Receipts)
	sub := Subject{
		Schema: ReceiptSchema, Kind: kind, MatterID: m.ID, Sequence: seq,
		PreviousReceiptHash: m.LastReceiptHash, Status: m.Status, RiskClass: m.RiskClass,
		SolverKind: "unassigned", TenantHash: hashHex(m.Tenant), RequesterHash: hashHex(m.RequesterID),
		ActionDigest: m.ActionDigest, QuestionHash: m.QuestionHash, SchemaHash: m.SchemaHash,
		StakesUSDC: m.StakesUSDC, Deadline: m.Deadline.Format(time.RFC3339Nano),
		VerdictHash: m.VerdictHash, At: now.Format(time.RFC3339Nano),
	}
	if k := m.solverKind(); k != "" {
		sub.SolverKind = k
	}
	if m.Solver != nil {
		sub.SolverHash = hashHex(m.Solver.ID)
		sub.SolverStatus = string(m.Solver.Status)
	}
	if fill != nil {
		fill(&sub)
	}
	rid := receiptID(m.ID, seq)
	r, err := s.signer.Sign(receiptTypes[kind], rid, sub)
	if err != nil {
		return receipt.Receipt{}, fmt.Errorf("matters: sign %s: %w", kind, err)
	}
	if kind == KindAppealResolved && m.Status == StatusOverturned { // in the transparency log, the verdict overturned on appeal is superseded
		if r, err = receipt.SupersedeLast(tx, r, m.Receipts, receiptTypes[KindAggregated]); err != nil {
			return receipt.Receipt{}, err
		}
	}
	if _, err := receipt.Put(tx, r, now); err != nil {
		return receipt.Receipt{}, err
	}
	m.Receipts = append(m.Receipts, rid)
	m.LastReceiptHash = r.Proof.SubjectHash
	if seq == 0 {
		err = addMatter(tx, m)
	} else {
		err = putMatter(tx, m)
	}
	if err != nil {
		return receipt.Receipt{}, err
	}
	return r, nil
}

// recorded signs the Matter's next receipt of kind (record) and answers
// the Matter and that receipt.
func (s *Service) recorded(tx store.Tx, m *Matter, kind string, now time.Time, fill func(*Subject), created bool) (Reply, error) {
	r, err := s.record(tx, m, kind, now, fill)
	if err != nil {
		return Reply{}, err
	}
	return changed(m, r, created)
}

func changed(m *Matter, r receipt.Receipt, created bool) (Reply, error) {
	b, err := receipt.Marshal(Changed{Matter: m.Public(), Receipt: r})
	if err != nil {
		return Reply{}, err
	}
	return Reply{Body: b, Created: created}, nil
}

// verdictFits checks a verdict given for m (what: the verdict, or the
// reveal): it carries m's action digest and matches its verdict schema.
func verdictFits(m *Matter, digest string, verdict json.RawMessage, what string) error {
	if m.ActionDigest != "" && digest != m.ActionDigest {
		return invalid(ECodeInvalidActionDigest, "the %s must carry the matter's action_digest", what)
	}
	sc, err := compileVerdictSchema(m.VerdictSchema)
	if err != nil {
		return err
	}
	if err := sc.Validate(verdict); err != nil {
		return fault.New(fault.Unprocessable, ECodeVerdictSchemaMismatch, "the verdict does not match verdict_schema: %v", err)
	}
	return nil
}

// firstErr is the first of errs that is not nil: the checks of a
// request, all cheap and pure, made together and answered in order (the
// caller's own error first, where a method passes it).
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lapse is idem.Lapse for a v1 Matter: when it is past its deadline,
// expire it in tx and fail the request with refuse's error once the
// expiry commits.
func (s *Service) lapse(tx store.Tx, m *Matter, now time.Time, refuse func() error) error {
	return idem.Lapse(due(m, now), func() error { _, err := s.expire(tx, m, now); return err }, refuse)
}

// expire moves a due Matter to expired and signs matter_expired.
func (s *Service) expire(tx store.Tx, m *Matter, now time.Time) (receipt.Receipt, error) {
	m.Status = StatusExpired
	m.ExpiredAt = now
	return s.record(tx, m, KindExpired, now, nil)
}

// loadLive loads a Matter for a mutation and expires it when due; an
// expired-now Matter fails the request with err after the expiry commits.
func (s *Service) loadLive(tx store.Tx, a caller, id string, now time.Time, whenDue error) (*Matter, error) {
	m, err := load(tx, a, id)
	if err != nil {
		return nil, err
	}
	if due(m, now) {
		if _, err := s.expire(tx, m, now); err != nil {
			return nil, err
		}
		return nil, idem.CommitThenFail(whenDue)
	}
	return m, nil
}

func notOpen(m *Matter) error {
	return fault.New(fault.Conflict, ECodeMatterNotOpen, "matter %s is %s, not open", m.ID, m.Status)
}

// Open records a new Matter in state open and signs matter_opened.
//
// # Errors
//
// missing_field, field_too_long, invalid_action_digest, invalid_stakes,
// invalid_deadline, invalid_risk_class, invalid_schema,
// invalid_idempotency_key (400); forbidden, insufficient_scope,
// requester_mismatch (403); idempotency_conflict (409).
func (s *Service) Open(ctx context.Context, actor Actor, req OpenRequest) (Reply, error) {
	a, err := s.caller(actor)
	if err != nil {
		return Reply{}, err
	}
	return s.open(ctx, a, req, nil)
}

// open is Open, and OpenQuorum when q is set: q's content is part of the
// request, and its start runs in the transaction before matter_opened is
// signed.
func (s *Service) open(ctx context.Context, a caller, req OpenRequest, q *quorumOpen) (Reply, error) {
	if err := firstErr(
		need(a, ScopeWrite),
		needRole(a, RoleRequester),
	); err != nil {
		return Reply{}, err
	}
	if !a.Open {
		if req.RequesterID == "" {
			req.RequesterID = a.KeyID
		}
		if req.RequesterID != a.KeyID {
			return Reply{}, fault.New(fault.Forbidden, ECodeRequesterMismatch, "requester_id must be the signing principal's key id %q", a.KeyID)
		}
	}
	if err := firstErr(
		validID("requester_id", req.RequesterID),
		validDigest("action_digest", req.ActionDigest, !a.Open),
		text("question", req.Question, MaxQuestionBytes),
		validStakes(req.StakesUSDC),
	); err != nil {
		return Reply{}, err
	}
	deadline, err := parseDeadline(req.Deadline, s.now())
	if err != nil {
		return Reply{}, err
	}
	if err := validRiskClass(req.RiskClass); err != nil {
		return Reply{}, err
	}
	if _, err := compileVerdictSchema(req.VerdictSchema); err != nil {
		return Reply{}, err
	}
	canonSchema, err := receipt.CanonicalJSON(req.VerdictSchema)
	if err != nil {
		return Reply{}, invalid(ECodeInvalidSchema, "verdict_schema: %v", err)
	}
	ir, err := idemOf("open", a.Tenant, req.RequesterID, req.IdempotencyKey, req)
	if err != nil {
		return Reply{}, err
	}
	if q != nil {
		if err := q.check(canonSchema); err != nil {
			return Reply{}, err
		}
		ir.Fingerprint = idem.FingerprintJSON(ir.Scope, QuorumOpenRequest{OpenRequest: req, Quorum: q.spec})
	}
	id := "mat-" + s.newID()
	return s.mutate(ctx, ir, func(tx store.Tx, now time.Time) (Reply, error) {
		if !deadline.After(now) {
			return Reply{}, invalid(ECodeInvalidDeadline, "deadline %s is not in the future", req.Deadline)
		}
		m := &Matter{
			ID: id, Schema: ServiceSchema, Tenant: a.Tenant, RequesterID: req.RequesterID,
			ActionDigest: req.ActionDigest, Question: req.Question, StakesUSDC: req.StakesUSDC,
			Deadline: deadline, RiskClass: req.RiskClass, VerdictSchema: canonSchema, Status: StatusOpen,
			QuestionHash: hashHex(req.Question), SchemaHash: hashHex(string(canonSchema)),
			Receipts: []string{}, CreatedAt: now,
		}
		var fill func(*Subject)
		if q != nil {
			var err error
			if fill, err = s.startQuorum(tx, m, q, now); err != nil {
				return Reply{}, err
			}
		}
		return s.recorded(tx, m, KindOpened, now, fill, true)
	})
}

// Assign records the Matter's one solver (invited) and signs
// solver_assigned.
//
// # Errors
//
// missing_field, field_too_long, invalid_solver_kind,
// invalid_qualification, unknown_solver (400); solver_conflict (409: no
// conflict_free=true assertion, or the solver is the requester);
// matter_not_found (404); matter_not_open, solver_already_assigned,
// idempotency_conflict (409); forbidden, insufficient_scope (403).
func (s *Service) Assign(ctx context.Context, actor Actor, req AssignRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		needRole(a, RoleRequester, RoleOperator),
		validID("matter_id", req.MatterID),
		validID("solver_id", req.SolverID),
		validSolverKind(req.SolverKind),
	); err != nil {
		return Reply{}, err
	}
	if msg := ident.TextMessage(req.Qualification, MaxQualificationBytes); msg != "" {
		return Reply{}, invalid(ECodeInvalidQualification, "qualification %s", msg)
	}
	if req.ConflictFree == nil || !*req.ConflictFree {
		return Reply{}, fault.New(fault.Conflict, ECodeSolverConflict, "assigning a solver requires the assertion conflict_free=true")
	}
	return s.keyed(ctx, "assign", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := owned(tx, a, req.MatterID)
		if err != nil {
			return Reply{}, err
		}
		if m.Exchange != nil {
			return Reply{}, exchangeOnly(m)
		}
		if err := s.lapse(tx, m, now, func() error { return notOpen(m) }); err != nil {
			return Reply{}, err
		}
		if m.Status != StatusOpen {
			return Reply{}, notOpen(m)
		}
		if m.Solver != nil {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverAlreadyAssigned, "matter %s already has a solver; v1 has no replacement", m.ID)
		}
		if req.SolverID == m.RequesterID {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverConflict, "the requester cannot be the matter's solver")
		}
		if !a.Open {
			p, err := principal.Get(tx, req.SolverID)
			if err != nil || p.Tenant != a.Tenant || !p.RevokedAt.IsZero() || !callerOf(p).Has(RoleSolver) {
				return Reply{}, invalid(ECodeUnknownSolver, "solver_id must be the key id of an active solver principal of this tenant")
			}
		}
		m.Solver = &Solver{ID: req.SolverID, Kind: req.SolverKind, Qualification: req.Qualification,
			ConflictFree: true, Status: SolverInvited, AssignedAt: now}
		return s.recorded(tx, m, KindAssigned, now, nil, false)
	})
}

// validReason checks a dispute's or an appeal's reason: 1 to
// MaxReasonBytes of text.
func validReason(reason string) error {
	if reason == "" {
		return invalid(ECodeInvalidReason, "reason is required: 1 to %d bytes", MaxReasonBytes)
	}
	return ident.Text("reason", reason, MaxReasonBytes)
}

// solverCall checks what every call of a solver on a Matter needs, in
// this order: the write scope, the solver role, the Matter's id, and the
// solver's own id (solverID); it returns that id.
func solverCall(a caller, matterID, solver string) (string, error) {
	if err := need(a, ScopeWrite); err != nil {
		return "", err
	}
	if err := needRole(a, RoleSolver); err != nil {
		return "", err
	}
	if err := validID("matter_id", matterID); err != nil {
		return "", err
	}
	return solverID(a, solver)
}

// solverCaller is the caller of a solver's call on a Matter and the
// solver's id (solverCall).
func (s *Service) solverCaller(actor Actor, matterID, solver string) (caller, string, error) {
	a, err := s.caller(actor)
	if err != nil {
		return caller{}, "", err
	}
	sid, err := solverCall(a, matterID, solver)
	return a, sid, err
}

// solverID binds the body's solver_id to the signing principal.
func solverID(a caller, id string) (string, error) {
	if a.Open {
		return id, validID("solver_id", id)
	}
	if id == "" {
		id = a.KeyID
	}
	if id != a.KeyID {
		return "", fault.New(fault.Forbidden, ECodeSolverMismatch, "solver_id must be the signing principal's key id %q", a.KeyID)
	}
	return id, nil
}

// Accept moves the assigned solver from invited to accepted and signs
// solver_accepted.
//
// # Errors
//
// missing_field (400); solver_mismatch, forbidden, insufficient_scope
// (403); matter_not_found (404); matter_not_open, solver_not_assigned,
// solver_not_accepting, idempotency_conflict (409).
func (s *Service) Accept(ctx context.Context, actor Actor, req AcceptRequest) (Reply, error) {
	a, sid, err := s.solverCaller(actor, req.MatterID, req.SolverID)
	if err != nil {
		return Reply{}, err
	}
	req.SolverID = sid
	return s.keyed(ctx, "accept", a, sid, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := load(tx, a, req.MatterID)
		if err != nil {
			return Reply{}, err
		}
		if m.Exchange != nil {
			return Reply{}, exchangeOnly(m)
		}
		if err := s.lapse(tx, m, now, func() error { return notOpen(m) }); err != nil {
			return Reply{}, err
		}
		if m.Status != StatusOpen {
			return Reply{}, notOpen(m)
		}
		if m.Solver == nil || m.Solver.ID != sid {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "solver %q is not assigned to matter %s", sid, m.ID)
		}
		if m.Solver.Status != SolverInvited {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAccepting, "the solver of matter %s is %s, not invited", m.ID, m.Solver.Status)
		}
		m.Solver.Status = SolverAccepted
		m.Solver.AcceptedAt = now
		return s.recorded(tx, m, KindAccepted, now, nil, false)
	})
}

// Verdict records the first valid verdict of the accepted assigned solver:
// the Matter becomes judged and verdict_submitted is signed with
// verdict_schema_ok=true. Every later verdict fails with matter_not_open.
//
// # Errors
//
// missing_field, invalid_solver_kind, invalid_verdict,
// invalid_action_digest (400); verdict_schema_mismatch (422);
// solver_mismatch, forbidden, insufficient_scope (403); matter_not_found
// (404); matter_not_open, solver_not_assigned, solver_not_accepted,
// solver_kind_mismatch, idempotency_conflict (409).
func (s *Service) Verdict(ctx context.Context, actor Actor, req VerdictRequest) (Reply, error) {
	a, sid, err := s.solverCaller(actor, req.MatterID, req.SolverID)
	if err != nil {
		return Reply{}, err
	}
	req.SolverID = sid
	if err := firstErr(
		validSolverKind(req.SolverKind),
		validDigest("action_digest", req.ActionDigest, false),
	); err != nil {
		return Reply{}, err
	}
	if isNull(req.Verdict) || !isObject(req.Verdict) {
		return Reply{}, invalid(ECodeInvalidVerdict, "verdict is required: a JSON object (not an array)")
	}
	if len(req.Verdict) > MaxVerdictBytes {
		return Reply{}, invalid(ECodeInvalidVerdict, "verdict is %d bytes; at most %d", len(req.Verdict), MaxVerdictBytes)
	}
	canonVerdict, err := receipt.CanonicalJSON(req.Verdict)
	if err != nil {
		return Reply{}, invalid(ECodeInvalidVerdict, "verdict: %v", err)
	}
	return s.keyed(ctx, "verdict", a, sid, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadLive(tx, a, req.MatterID, now,
			fault.New(fault.Conflict, ECodeMatterNotOpen, "matter %s passed its deadline and expired", req.MatterID))
		if err != nil {
			return Reply{}, err
		}
		if m.Exchange != nil {
			return Reply{}, exchangeOnly(m)
		}
		if m.Status != StatusOpen {
			return Reply{}, notOpen(m)
		}
		switch {
		case m.Solver == nil && !a.Open:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "matter %s has no assigned solver; signed mode takes verdicts only from one", m.ID)
		case m.Solver != nil && m.Solver.ID != sid:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "solver %q is not assigned to matter %s", sid, m.ID)
		case m.Solver != nil && m.Solver.Status != SolverAccepted:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAccepted, "the solver of matter %s has not accepted the assignment", m.ID)
		case m.Solver != nil && m.Solver.Kind != req.SolverKind:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverKindMismatch, "solver_kind %q does not match the assignment's %q", req.SolverKind, m.Solver.Kind)
		}
		if err := verdictFits(m, req.ActionDigest, canonVerdict, "verdict"); err != nil {
			return Reply{}, err
		}
		m.Status = StatusJudged
		m.Verdict = canonVerdict
		m.VerdictHash = hashHex(string(canonVerdict))
		m.VerdictSolverKind = req.SolverKind
		m.VerdictSolverHash = hashHex(sid)
		m.VerdictSchemaOK = true
		m.JudgedAt = now
		ok := true
		return s.recorded(tx, m, KindVerdict, now, func(sub *Subject) {
			sub.VerdictSchemaOK = &ok
			sub.SolverHash = m.VerdictSolverHash
		}, false)
	})
}

// Settle marks a judged Matter settled with solver_paid=true and signs
// matter_settled, which says no funds moved.
//
// # Errors
//
// missing_field (400); forbidden, insufficient_scope (403);
// matter_not_found (404); matter_not_settleable, idempotency_conflict (409).
func (s *Service) Settle(ctx context.Context, actor Actor, req SettleRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		validID("matter_id", req.MatterID),
	); err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "settle", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := owned(tx, a, req.MatterID)
		if err != nil {
			return Reply{}, err
		}
		notSettleable := func() error {
			return fault.New(fault.Conflict, ECodeMatterNotSettleable, "matter %s is %s; only a judged matter settles", m.ID, m.Status)
		}
		if err := s.lapse(tx, m, now, func() error { return notSettleable() }); err != nil {
			return Reply{}, err
		}
		if m.Exchange != nil {
			if err := s.advanceAll(tx, m, now); err != nil {
				return Reply{}, err
			}
		}
		if m.Status != StatusJudged {
			return Reply{}, notSettleable()
		}
		if m.Exchange != nil {
			return s.settleQuorum(tx, m, now)
		}
		m.Status = StatusSettled
		m.SolverPaid = true
		m.SettledAt = now
		paid := true
		return s.recorded(tx, m, KindSettled, now, func(sub *Subject) {
			sub.SolverPaid = &paid
			sub.Settlement = Settlement
		}, false)
	})
}

// Dispute moves an open or judged Matter to disputed with a reason and
// signs matter_disputed.
//
// # Errors
//
// missing_field, invalid_reason, invalid_action_digest (400); forbidden,
// insufficient_scope (403); matter_not_found (404);
// matter_not_disputable, idempotency_conflict (409).
func (s *Service) Dispute(ctx context.Context, actor Actor, req DisputeRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		validID("matter_id", req.MatterID),
		validReason(req.Reason),
		validDigest("action_digest", req.ActionDigest, false),
	); err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "dispute", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := owned(tx, a, req.MatterID)
		if err != nil {
			return Reply{}, err
		}
		notDisputable := func() error {
			return fault.New(fault.Conflict, ECodeMatterNotDisputable, "matter %s is %s; only an open or judged matter is disputed", m.ID, m.Status)
		}
		if err := s.lapse(tx, m, now, func() error { return notDisputable() }); err != nil {
			return Reply{}, err
		}
		if m.Status != StatusOpen && m.Status != StatusJudged {
			return Reply{}, notDisputable()
		}
		if m.Exchange != nil {
			return Reply{}, fault.New(fault.Conflict, ECodeMatterNotDisputable, "matter %s is a quorum matter: a judged one is appealed to the court (POST %s/exchange/appeal)", m.ID, RoutePrefix)
		}
		if !a.Open && m.ActionDigest != "" && req.ActionDigest != m.ActionDigest {
			return Reply{}, invalid(ECodeInvalidActionDigest, "a dispute must carry the matter's action_digest")
		}
		m.Status = StatusDisputed
		m.DisputeReason = req.Reason
		m.DisputedAt = now
		return s.recorded(tx, m, KindDisputed, now, func(sub *Subject) { sub.ReasonHash = hashHex(req.Reason) }, false)
	})
}

// Tick expires every open Matter of the actor's tenant at or past its
// deadline (at most MaxList per call) and answers what it expired. A
// replay of its key answers the original receipts again.
//
// # Errors
//
// invalid_idempotency_key (400); forbidden, insufficient_scope (403);
// idempotency_conflict (409).
func (s *Service) Tick(ctx context.Context, actor Actor, req TickRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		needRole(a, RoleOperator),
	); err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "tick", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		out := Ticked{EvaluatedAt: now, Expired: []Public{}, Receipts: []receipt.Receipt{}}
		ids, err := matterIDs(tx, a.Tenant, true, 0)
		if err != nil {
			return Reply{}, err
		}
		for _, id := range ids {
			m, err := load(tx, a, id)
			if err != nil {
				return Reply{}, err
			}
			if !due(m, now) {
				continue
			}
			r, err := s.expire(tx, m, now)
			if err != nil {
				return Reply{}, err
			}
			out.Expired = append(out.Expired, m.Public())
			out.Receipts = append(out.Receipts, r)
			if len(out.Expired) == MaxList {
				break
			}
		}
		b, err := receipt.Marshal(out)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Body: b}, nil
	})
}
