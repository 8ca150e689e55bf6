package matters

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// RoutePrefix is where the judgment routes live; the exchange's are under
// RoutePrefix + "/exchange".
const RoutePrefix = "/api/v1/economic/matters"

// QuorumOpenRequest is the body of POST …/exchange/open: a v1 open and the
// quorum it asks for.
type QuorumOpenRequest struct {
	OpenRequest
	Quorum QuorumSpec `json:"quorum"`
}

// SeatRequest is the body of POST …/exchange/assign.
type SeatRequest struct {
	MatterID       string `json:"matter_id"`
	SolverID       string `json:"solver_id"`
	IdempotencyKey string `json:"idempotency_key"`
}

// CommitRequest is the body of POST …/exchange/commit: the commitment is
// Commitment(matter_id, solver_id, verdict, salt).
type CommitRequest struct {
	MatterID       string `json:"matter_id"`
	SolverID       string `json:"solver_id"`
	Commitment     string `json:"commitment"`
	IdempotencyKey string `json:"idempotency_key"`
}

// RevealRequest is the body of POST …/exchange/reveal.
type RevealRequest struct {
	MatterID       string          `json:"matter_id"`
	SolverID       string          `json:"solver_id"`
	ActionDigest   string          `json:"action_digest,omitempty"`
	Verdict        json.RawMessage `json:"verdict"`
	Salt           string          `json:"salt"`
	IdempotencyKey string          `json:"idempotency_key"`
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Commitment is the hash a solver commits to: the lowercase hex SHA-256
// of the RFC 8785 (JCS) form of the object
//
//	{"matter_id": …, "salt": …, "solver_id": …, "verdict": …}
//
// The matter and solver bind a commitment to one seat, so that no solver
// can copy another's commitment and later reveal its verdict; the salt (32
// to 256 bytes, random) keeps a verdict with few possible values from
// being guessed from its hash.
func Commitment(matterID, solverID string, verdict json.RawMessage, salt string) (string, error) {
	b, err := json.Marshal(struct {
		MatterID string          `json:"matter_id"`
		Salt     string          `json:"salt"`
		SolverID string          `json:"solver_id"`
		Verdict  json.RawMessage `json:"verdict"`
	}{matterID, salt, solverID, verdict})
	if err != nil {
		return "", invalid(ECodeInvalidVerdict, "verdict: %v", err)
	}
	c, err := receipt.CanonicalJSON(b)
	if err != nil {
		return "", invalid(ECodeInvalidVerdict, "verdict: %v", err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// quorumOpen is a checked QuorumSpec.
type quorumOpen struct {
	spec      QuorumSpec
	pay, bond int64
	reveal    time.Duration
}

func checkQuorum(q QuorumSpec) (*quorumOpen, error) {
	bad := func(format string, args ...any) error { return invalid(ECodeInvalidQuorum, format, args...) }
	switch {
	case q.Solvers < 1 || q.Solvers > MaxSeats:
		return nil, bad("quorum.solvers is N, the seats: 1 to %d", MaxSeats)
	case q.Agree*2 <= q.Solvers || q.Agree > q.Solvers:
		return nil, bad("quorum.agree is M, the agreeing verdicts that judge the matter: more than half of %d and at most %d", q.Solvers, q.Solvers)
	case q.Lineages < 0 || q.Lineages > q.Solvers:
		return nil, bad("quorum.lineages is K, the fewest distinct model lineages: 0 to %d", q.Solvers)
	case len(q.AgreeOn) > MaxListEntries:
		return nil, bad("quorum.agree_on names at most %d fields", MaxListEntries)
	case q.RevealWindowSeconds < 0 || time.Duration(q.RevealWindowSeconds)*time.Second > MaxRevealWait:
		return nil, bad("quorum.reveal_window_seconds is 0 (an hour) to %d", int(MaxRevealWait.Seconds()))
	}
	out := &quorumOpen{spec: q, reveal: DefaultRevealWait}
	if q.RevealWindowSeconds > 0 {
		out.reveal = time.Duration(q.RevealWindowSeconds) * time.Second
	}
	var err error
	if out.pay, err = parseMicro("quorum.pay_usdc", q.PayUSDC, ledger.MaxAmount/MaxSeats); err != nil {
		return nil, err
	}
	if out.bond, err = parseMicro("quorum.bond_usdc", q.BondUSDC, ledger.MaxAmount); err != nil {
		return nil, err
	}
	return out, nil
}

// check holds the quorum's agree_on to the verdict schema: every field
// named must be required, so that every valid verdict has it.
func (q *quorumOpen) check(schema json.RawMessage) error {
	req := requiredFields(schema)
	seen := map[string]bool{}
	for _, f := range q.spec.AgreeOn {
		if !slices.Contains(req, f) {
			return invalid(ECodeInvalidQuorum, "quorum.agree_on field %q is not in verdict_schema.required", f)
		}
		if seen[f] {
			return invalid(ECodeInvalidQuorum, "quorum.agree_on names %q twice", f)
		}
		seen[f] = true
	}
	return nil
}

func requiredFields(schema json.RawMessage) []string {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	return s.Required
}

// parseMicro reads a decimal dollar string ("2.5") as micro-USD, exactly:
// empty is 0, more than six fractional digits or more than max is refused.
func parseMicro(field, s string, max int64) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if !stakesRE.MatchString(s) {
		return 0, invalid(ECodeInvalidAmount, `%s must be a decimal string of dollars like "2.5", at most 6 fractional digits`, field)
	}
	whole, frac, _ := bytes.Cut([]byte(s), []byte("."))
	w, err := strconv.ParseInt(string(whole), 10, 64)
	if err != nil || w > max/1_000_000 {
		return 0, invalid(ECodeInvalidAmount, "%s is more than %d micro-USD", field, max)
	}
	f, _ := strconv.ParseInt((string(frac) + "000000")[:6], 10, 64)
	n := w*1_000_000 + f
	if n > max {
		return 0, invalid(ECodeInvalidAmount, "%s is more than %d micro-USD", field, max)
	}
	return n, nil
}

// OpenQuorum opens a quorum Matter: a v1 open whose verdict comes from a
// quorum of registered solvers. With pay, the requester's wallet funds
// N × pay into the Matter's hold on the ledger, in the same transaction.
//
// # Errors
//
// Open's, and invalid_quorum, invalid_amount (400); insufficient_funds
// (409).
func (s *Service) OpenQuorum(ctx context.Context, actor Actor, req QuorumOpenRequest) (Reply, error) {
	a, err := s.caller(actor)
	if err != nil {
		return Reply{}, err
	}
	q, err := checkQuorum(req.Quorum)
	if err != nil {
		return Reply{}, err
	}
	return s.open(ctx, a, req.OpenRequest, q)
}

// startQuorum sets up a new Matter's exchange state and funds its pay.
func (s *Service) startQuorum(tx store.Tx, m *Matter, q *quorumOpen, now time.Time) (func(*Subject), error) {
	spec := q.spec
	if len(spec.AgreeOn) == 0 {
		spec.AgreeOn = requiredFields(m.VerdictSchema)
	}
	if spec.RevealWindowSeconds == 0 {
		spec.RevealWindowSeconds = int(q.reveal.Seconds())
	}
	m.Exchange = &Exchange{Quorum: spec, PayMicro: q.pay, BondMicro: q.bond, Phase: PhaseCommit,
		Seats: []Seat{}, Postings: []Posting{}}
	x := m.Exchange
	if x.staked() {
		x.Hold = holdAccount(m.ID)
	}
	var moved []Posting
	if total := q.pay * int64(spec.Solvers); total > 0 {
		p, err := s.debit(tx, m, m.ID+".fund", ledger.AgentAccount(m.RequesterID), total, "fund the solvers' pay of "+m.ID, now)
		if err != nil {
			return nil, err
		}
		moved = append(moved, p)
	}
	return s.xfill(m, nil, moved, nil), nil
}

// xfill fills an exchange receipt's subject: the quorum, the seat it is
// about (nil for none), the postings it made, and more.
func (s *Service) xfill(m *Matter, seat *int, moved []Posting, more func(*ExchangeSubject)) func(*Subject) {
	return func(sub *Subject) {
		x := m.Exchange
		sub.SolverKind = "quorum"
		sub.SolverHash, sub.SolverStatus = "", ""
		xs := &ExchangeSubject{Solvers: x.Quorum.Solvers, Agree: x.Quorum.Agree, Lineages: x.Quorum.Lineages,
			Phase: x.Phase, Seat: seat, Postings: moved, PayMicro: x.PayMicro, BondMicro: x.BondMicro}
		if seat != nil {
			st := x.Seats[*seat]
			sub.SolverKind, sub.SolverHash, sub.SolverStatus = st.Kind, hashHex(st.SolverID), string(st.Status)
		}
		if more != nil {
			more(xs)
		}
		sub.Exchange = xs
	}
}

func exchangeOnly(m *Matter) error {
	return fault.New(fault.Conflict, ECodeQuorumMatter, "matter %s is a quorum matter: use the routes under %s/exchange", m.ID, RoutePrefix)
}

func notQuorum(m *Matter) error {
	return fault.New(fault.Conflict, ECodeNotQuorumMatter, "matter %s is a v1 single-solver matter: use the v1 routes", m.ID)
}

// pastPhase is the error of a call that came too late: quorum_not_met
// when the Matter expired without a quorum, matter_not_open otherwise.
func pastPhase(m *Matter, what string) error {
	x := m.Exchange
	if m.Status == StatusExpired {
		return fault.New(fault.Conflict, ECodeQuorumNotMet, "matter %s expired: %d of %d solvers committed by the deadline and %d must agree",
			m.ID, x.count(SolverCommitted), x.Quorum.Solvers, x.Quorum.Agree)
	}
	return fault.New(fault.Conflict, ECodeMatterNotOpen, "matter %s is %s (%s), not taking %s", m.ID, m.Status, x.Phase, what)
}

// loadQuorum loads a quorum Matter and advances it past any deadline.
func (s *Service) loadQuorum(tx store.Tx, a caller, id string, now time.Time) (*Matter, error) {
	m, err := load(tx, a, id)
	if err != nil {
		return nil, err
	}
	if m.Exchange == nil {
		return nil, notQuorum(m)
	}
	return m, s.advanceAll(tx, m, now)
}

// AssignSeat gives a registered solver a seat of a quorum Matter.
//
// # Errors
//
// missing_field (400); unknown_solver (400: not registered in the tenant,
// or not an active solver principal); solver_conflict (409: the solver
// declared a conflict with the requester, or is the requester);
// solver_already_assigned, quorum_full, lineage_diversity,
// matter_not_open, quorum_not_met, quorum_matter_required, idempotency_conflict (409);
// forbidden, insufficient_scope (403); matter_not_found (404).
func (s *Service) AssignSeat(ctx context.Context, actor Actor, req SeatRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		needRole(a, RoleRequester, RoleOperator),
		validID("matter_id", req.MatterID),
		validID("solver_id", req.SolverID),
	); err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "seat", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		if err := ownerOrOperator(a, m); err != nil {
			return Reply{}, err
		}
		x := m.Exchange
		if m.Status != StatusOpen || x.Phase != PhaseCommit {
			return Reply{}, idem.CommitThenFail(pastPhase(m, "solvers"))
		}
		p, err := getProfile(tx, a.Tenant, req.SolverID)
		if err != nil {
			return Reply{}, err
		}
		if !a.Open {
			pr, err := principal.Get(tx, req.SolverID)
			if err != nil || pr.Tenant != a.Tenant || !pr.Active() || !pr.Has(RoleSolver) {
				return Reply{}, invalid(ECodeUnknownSolver, "solver_id must be the key id of an active solver principal of this tenant")
			}
		}
		if req.SolverID == m.RequesterID || slices.Contains(p.Conflicts, m.RequesterID) {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverConflict, "solver %q declared a conflict with this matter's requester", req.SolverID)
		}
		if _, st := x.seat(req.SolverID); st != nil {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverAlreadyAssigned, "solver %q already has a seat of matter %s", req.SolverID, m.ID)
		}
		if len(x.Seats) >= x.Quorum.Solvers {
			return Reply{}, fault.New(fault.Conflict, ECodeQuorumFull, "matter %s has its %d seats", m.ID, x.Quorum.Solvers)
		}
		if err := diversityLeft(x, p); err != nil {
			return Reply{}, err
		}
		x.Seats = append(x.Seats, Seat{SolverID: p.ID, Kind: p.Kind, Lineage: p.Lineage, Status: SolverInvited, AssignedAt: now})
		if err := addSeat(tx, m, p.ID); err != nil {
			return Reply{}, err
		}
		i := len(x.Seats) - 1
		return s.recorded(tx, m, KindAssigned, now, s.xfill(m, &i, nil, nil), false)
	})
}

// diversityLeft refuses a seat after which the quorum could no longer
// reach K distinct model lineages with the seats left.
func diversityLeft(x *Exchange, p SolverProfile) error {
	k := x.Quorum.Lineages
	if k == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, st := range x.Seats {
		if st.Lineage != nil {
			seen[st.Lineage.key()] = true
		}
	}
	if p.Lineage != nil {
		seen[p.Lineage.key()] = true
	}
	left := x.Quorum.Solvers - len(x.Seats) - 1
	if len(seen)+left < k {
		return fault.New(fault.Conflict, ECodeLineageDiversity,
			"seating %q would leave %d distinct model lineages and %d seats: the quorum needs %d", p.ID, len(seen), left, k)
	}
	return nil
}

// AcceptSeat is a seated solver's acceptance; with a bond, the solver's
// wallet posts it into the Matter's hold in the same transaction.
//
// # Errors
//
// missing_field (400); solver_mismatch, forbidden, insufficient_scope
// (403); matter_not_found (404); matter_not_open, quorum_not_met, solver_not_assigned,
// solver_not_accepting, insufficient_funds, quorum_matter_required,
// idempotency_conflict (409).
func (s *Service) AcceptSeat(ctx context.Context, actor Actor, req AcceptRequest) (Reply, error) {
	a, sid, err := s.solverCaller(actor, req.MatterID, req.SolverID)
	if err != nil {
		return Reply{}, err
	}
	req.SolverID = sid
	return s.keyed(ctx, "accept-seat", a, sid, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		x := m.Exchange
		if m.Status != StatusOpen || x.Phase != PhaseCommit {
			return Reply{}, idem.CommitThenFail(pastPhase(m, "solvers"))
		}
		i, st := x.seat(sid)
		if st == nil {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "solver %q has no seat of matter %s", sid, m.ID)
		}
		if st.Status != SolverInvited {
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAccepting, "solver %q of matter %s is %s, not invited", sid, m.ID, st.Status)
		}
		var moved []Posting
		if x.BondMicro > 0 {
			p, err := s.debit(tx, m, fmt.Sprintf("%s.bond.%d", m.ID, i), ledger.AgentAccount(sid), x.BondMicro, "bond of seat "+strconv.Itoa(i)+" of "+m.ID, now)
			if err != nil {
				return Reply{}, err
			}
			moved = append(moved, p)
			st.BondHeld = true
		}
		st.Status, st.AcceptedAt = SolverAccepted, now
		return s.recorded(tx, m, KindAccepted, now, s.xfill(m, &i, moved, nil), false)
	})
}

// Commit records a seated solver's commitment. The quorum closes when the
// N-th commitment arrives; quorum_closed is signed in the same
// transaction, and reveals open.
//
// # Errors
//
// missing_field, invalid_commitment (400); solver_mismatch, forbidden,
// insufficient_scope (403); matter_not_found (404); matter_not_open, quorum_not_met,
// solver_not_assigned, solver_not_accepted, already_committed,
// quorum_matter_required, idempotency_conflict (409).
func (s *Service) Commit(ctx context.Context, actor Actor, req CommitRequest) (Reply, error) {
	a, sid, err := s.solverCaller(actor, req.MatterID, req.SolverID)
	if err != nil {
		return Reply{}, err
	}
	req.SolverID = sid
	if !hex64.MatchString(req.Commitment) {
		return Reply{}, invalid(ECodeInvalidCommitment, "commitment must be 64 lowercase hex digits: the SHA-256 of the JCS form of {matter_id, salt, solver_id, verdict}")
	}
	return s.keyed(ctx, "commit", a, sid, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		x := m.Exchange
		if m.Status != StatusOpen || x.Phase != PhaseCommit {
			return Reply{}, idem.CommitThenFail(pastPhase(m, "commitments"))
		}
		i, st := x.seat(sid)
		switch {
		case st == nil:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "solver %q has no seat of matter %s", sid, m.ID)
		case st.Status == SolverInvited:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAccepted, "solver %q has not accepted its seat of matter %s", sid, m.ID)
		case st.Status != SolverAccepted:
			return Reply{}, fault.New(fault.Conflict, ECodeAlreadyCommitted, "solver %q already committed to matter %s", sid, m.ID)
		}
		st.Status, st.Commitment, st.CommittedAt = SolverCommitted, req.Commitment, now
		r, err := s.record(tx, m, KindCommitted, now, s.xfill(m, &i, nil, func(xs *ExchangeSubject) { xs.Commitment = req.Commitment }))
		if err != nil {
			return Reply{}, err
		}
		if x.count(SolverCommitted) == x.Quorum.Solvers {
			if _, err := s.closeQuorum(tx, m, now); err != nil {
				return Reply{}, err
			}
		}
		return changed(m, r, false)
	})
}

// Reveal opens a solver's commitment: the verdict and salt must hash to
// it, and the verdict must match the schema. When the last committed
// solver reveals, the verdicts are aggregated in the same transaction.
//
// # Errors
//
// missing_field, invalid_verdict, invalid_salt, invalid_action_digest
// (400); reveal_mismatch, verdict_schema_mismatch (422); solver_mismatch,
// forbidden, insufficient_scope (403); matter_not_found (404);
// matter_not_open, quorum_not_met, quorum_not_closed, solver_not_committed,
// already_revealed, quorum_matter_required, idempotency_conflict (409).
func (s *Service) Reveal(ctx context.Context, actor Actor, req RevealRequest) (Reply, error) {
	a, sid, err := s.solverCaller(actor, req.MatterID, req.SolverID)
	if err != nil {
		return Reply{}, err
	}
	req.SolverID = sid
	if err := validDigest("action_digest", req.ActionDigest, false); err != nil {
		return Reply{}, err
	}
	if isNull(req.Verdict) || !isObject(req.Verdict) || len(req.Verdict) > MaxVerdictBytes {
		return Reply{}, invalid(ECodeInvalidVerdict, "verdict is required: a JSON object of at most %d bytes", MaxVerdictBytes)
	}
	canonVerdict, err := receipt.CanonicalJSON(req.Verdict)
	if err != nil {
		return Reply{}, invalid(ECodeInvalidVerdict, "verdict: %v", err)
	}
	if len(req.Salt) < MinSaltBytes || len(req.Salt) > MaxSaltBytes {
		return Reply{}, invalid(ECodeInvalidSalt, "salt is %d to %d bytes, e.g. 64 hex digits of 32 random bytes", MinSaltBytes, MaxSaltBytes)
	}
	sum, err := Commitment(req.MatterID, sid, canonVerdict, req.Salt)
	if err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "reveal", a, sid, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		x := m.Exchange
		if m.Status != StatusOpen {
			return Reply{}, idem.CommitThenFail(pastPhase(m, "reveals"))
		}
		if x.Phase == PhaseCommit {
			return Reply{}, fault.New(fault.Conflict, ECodeQuorumNotClosed, "matter %s is sealed: reveals open when the quorum closes (%d of %d committed) or at its deadline", m.ID, x.count(SolverCommitted), x.Quorum.Solvers)
		}
		i, st := x.seat(sid)
		switch {
		case st == nil:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotAssigned, "solver %q has no seat of matter %s", sid, m.ID)
		case st.Status == SolverRevealed:
			return Reply{}, fault.New(fault.Conflict, ECodeAlreadyRevealed, "solver %q already revealed its verdict of matter %s", sid, m.ID)
		case st.Status != SolverCommitted:
			return Reply{}, fault.New(fault.Conflict, ECodeSolverNotCommitted, "solver %q made no commitment to matter %s", sid, m.ID)
		}
		if sum != st.Commitment {
			return Reply{}, fault.New(fault.Unprocessable, ECodeRevealMismatch, "the verdict and salt hash to %s, not to the commitment %s", sum, st.Commitment)
		}
		if err := verdictFits(m, req.ActionDigest, canonVerdict, "reveal"); err != nil {
			return Reply{}, err
		}
		st.Status, st.Verdict, st.VerdictHash, st.RevealedAt = SolverRevealed, canonVerdict, hashHex(string(canonVerdict)), now
		r, err := s.record(tx, m, KindRevealed, now, s.xfill(m, &i, nil, func(xs *ExchangeSubject) {
			xs.Commitment, xs.SeatVerdict = st.Commitment, st.VerdictHash
		}))
		if err != nil {
			return Reply{}, err
		}
		if x.count(SolverRevealed) == x.count(SolverCommitted, SolverRevealed) {
			if _, err := s.aggregate(tx, m, now); err != nil {
				return Reply{}, err
			}
		}
		return changed(m, r, false)
	})
}

// exchangeDue reports whether an open quorum Matter passed the deadline of
// its phase.
func exchangeDue(m *Matter, now time.Time) bool {
	x := m.Exchange
	if x == nil || m.Status != StatusOpen {
		return false
	}
	switch x.Phase {
	case PhaseCommit:
		return !now.Before(m.Deadline)
	case PhaseReveal:
		return !now.Before(x.RevealBy)
	}
	return false
}

// advanceAll moves a quorum Matter past every deadline that passed: at
// the deadline the quorum closes with at least M commitments or the Matter
// expires (quorum not met, money returned); at the reveal deadline the
// reveals in are aggregated.
func (s *Service) advanceAll(tx store.Tx, m *Matter, now time.Time) error {
	for exchangeDue(m, now) {
		x := m.Exchange
		var err error
		switch {
		case x.Phase == PhaseReveal:
			_, err = s.aggregate(tx, m, now)
		case x.count(SolverCommitted) >= x.Quorum.Agree:
			_, err = s.closeQuorum(tx, m, now)
		default:
			m.Status, m.ExpiredAt, x.Phase = StatusExpired, now, PhaseClosed
			var moved []Posting
			if moved, err = s.release(tx, m, false, now); err == nil {
				_, err = s.record(tx, m, KindExpired, now, s.xfill(m, nil, moved, func(xs *ExchangeSubject) {
					xs.Reason = fmt.Sprintf("%s: %d of %d solvers committed by the deadline and %d must agree", ECodeQuorumNotMet, x.count(SolverCommitted), x.Quorum.Solvers, x.Quorum.Agree)
				}))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// closeQuorum ends the commit phase and opens reveals.
func (s *Service) closeQuorum(tx store.Tx, m *Matter, now time.Time) (receipt.Receipt, error) {
	x := m.Exchange
	x.Phase, x.ClosedAt = PhaseReveal, now
	x.RevealBy = now.Add(time.Duration(x.Quorum.RevealWindowSeconds) * time.Second)
	return s.record(tx, m, KindQuorumClosed, now, s.xfill(m, nil, nil, nil))
}

// agreement is the hash of what a verdict must share with another to
// agree: the RFC 8785 form of its agree_on fields.
func agreement(verdict json.RawMessage, fields []string) (string, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(verdict, &v); err != nil {
		return "", err
	}
	pick := map[string]json.RawMessage{}
	for _, f := range fields {
		if raw, ok := v[f]; ok {
			pick[f] = raw
		}
	}
	b, err := json.Marshal(pick)
	if err != nil {
		return "", err
	}
	c, err := receipt.CanonicalJSON(b)
	if err != nil {
		return "", err
	}
	return hashHex(string(c)), nil
}

// aggregate tallies the reveals: when M of them agree the Matter is
// judged with the verdict of the first seat of the agreeing group;
// otherwise it ends no_consensus and its money is returned.
func (s *Service) aggregate(tx store.Tx, m *Matter, now time.Time) (receipt.Receipt, error) {
	x := m.Exchange
	counts := map[string]int{}
	keys := make([]string, len(x.Seats))
	ag := &Aggregate{Groups: []Group{}, At: now}
	for i, st := range x.Seats {
		if st.Status != SolverRevealed {
			continue
		}
		k, err := agreement(st.Verdict, x.Quorum.AgreeOn)
		if err != nil {
			return receipt.Receipt{}, err
		}
		keys[i] = k
		counts[k]++
		ag.Revealed++
	}
	best := ""
	for k, n := range counts {
		ag.Groups = append(ag.Groups, Group{KeyHash: k, Count: n})
		if n > ag.Agreeing {
			best, ag.Agreeing = k, n
		}
	}
	sort.Slice(ag.Groups, func(i, j int) bool {
		gi, gj := ag.Groups[i], ag.Groups[j]
		return gi.Count > gj.Count || gi.Count == gj.Count && gi.KeyHash < gj.KeyHash
	})
	x.Phase, x.Aggregate = PhaseClosed, ag
	var moved []Posting
	if ag.Agreeing >= x.Quorum.Agree {
		ag.Result = StatusJudged
		author := -1
		for i := range x.Seats {
			if keys[i] == "" {
				continue
			}
			in := keys[i] == best
			x.Seats[i].Majority = &in
			if in && author < 0 {
				author = i
			}
		}
		st := x.Seats[author]
		m.Status, m.Verdict, m.VerdictHash = StatusJudged, st.Verdict, st.VerdictHash
		m.VerdictSolverKind, m.VerdictSolverHash, m.VerdictSchemaOK, m.JudgedAt = st.Kind, hashHex(st.SolverID), true, now
	} else {
		ag.Result, ag.Agreeing = StatusNoConsensus, 0
		m.Status = StatusNoConsensus
		var err error
		if moved, err = s.release(tx, m, false, now); err != nil {
			return receipt.Receipt{}, err
		}
	}
	ok := m.Status == StatusJudged
	return s.record(tx, m, KindAggregated, now, func(sub *Subject) {
		s.xfill(m, nil, moved, func(xs *ExchangeSubject) { xs.Aggregate = ag })(sub)
		if ok {
			sub.VerdictSchemaOK = &ok
		}
	})
}

// author is the seat whose verdict is the Matter's.
func (x *Exchange) author() *Seat {
	for i := range x.Seats {
		if st := &x.Seats[i]; st.Majority != nil && *st.Majority {
			return st
		}
	}
	return nil
}

// settleQuorum settles a judged quorum Matter: the majority is paid, the
// rest of the pay goes back to the requester, bonds go back to the
// solvers who revealed and a no-show's to the requester.
func (s *Service) settleQuorum(tx store.Tx, m *Matter, now time.Time) (Reply, error) {
	moved, err := s.release(tx, m, false, now)
	if err != nil {
		return Reply{}, err
	}
	m.Status, m.SolverPaid, m.SettledAt = StatusSettled, true, now
	paid := true
	return s.recorded(tx, m, KindSettled, now, func(sub *Subject) {
		s.xfill(m, nil, moved, nil)(sub)
		sub.SolverPaid = &paid
		sub.Settlement = Settlement
		if m.Exchange.staked() {
			sub.Settlement = SettlementLedger
		}
	}, false)
}

// SettlementLedger is what a staked quorum Matter's matter_settled says
// about money: it moved, in the postings the receipt lists.
const SettlementLedger = "held_funds_released_by_ledger_postings"
