package matters

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Status is a Matter's state.
type Status string

// The states; see the package documentation.
const (
	StatusOpen     Status = "open"
	StatusJudged   Status = "judged"
	StatusSettled  Status = "settled"
	StatusDisputed Status = "disputed"
	StatusExpired  Status = "expired"
)

// SolverStatus is where the assigned solver stands.
type SolverStatus string

// The solver states.
const (
	SolverInvited  SolverStatus = "invited"
	SolverAccepted SolverStatus = "accepted"
)

// Roles and scopes of principals.
const (
	RoleRequester = principal.RoleRequester
	RoleSolver    = principal.RoleSolver
	RoleOperator  = principal.RoleOperator

	ScopeRead    = principal.ScopeRead
	ScopePrivate = principal.ScopePrivate
	ScopeWrite   = principal.ScopeWrite
)

// Schemas of the seed.
const (
	ServiceSchema = "delx/judgment-exchange/v1"
	ReceiptSchema = "delx/judgment-receipt/v1"
)

// Limits of the seed's tables, in bytes.
const (
	MaxIDBytes            = 256 // requester_id, solver_id, idempotency_key
	MaxQuestionBytes      = 8192
	MaxReasonBytes        = 2048
	MaxQualificationBytes = 1024
	MaxStakesDecimals     = 6
	MaxSchemaBytes        = 64 << 10
	MaxVerdictBytes       = 64 << 10
	// MaxList bounds one list answer.
	MaxList = 1000
)

// Receipt kinds: the seed's names, and the receipt type each is signed as.
const (
	KindOpened   = "matter_opened"
	KindAssigned = "solver_assigned"
	KindAccepted = "solver_accepted"
	KindVerdict  = "verdict_submitted"
	KindSettled  = "matter_settled"
	KindDisputed = "matter_disputed"
	KindExpired  = "matter_expired"
)

var receiptTypes = map[string]string{
	KindOpened:   "AssayMatterOpened",
	KindAssigned: "AssayMatterSolverAssigned",
	KindAccepted: "AssayMatterSolverAccepted",
	KindVerdict:  "AssayMatterVerdictSubmitted",
	KindSettled:  "AssayMatterSettled",
	KindDisputed: "AssayMatterDisputed",
	KindExpired:  "AssayMatterExpired",
}

// Signer signs receipts; *receipt.Keyring implements it.
type Signer interface {
	Sign(kind, id string, subject any) (receipt.Receipt, error)
}

var _ Signer = (*receipt.Keyring)(nil)

// Actor is who makes a call, as the transport authenticated it: the one
// type of every service (principal.Actor). The judgment service reads a
// registered principal's tenant, roles and scopes (caller); in open mode
// every call is the open caller.
type Actor = principal.Actor

// caller is an Actor as the judgment service decides on it: the tenant it
// acts in, its key id, roles and scopes.
type caller struct {
	// Tenant owns the Matters the actor opens and is the only tenant
	// whose Matters it can see.
	Tenant string
	// KeyID is the principal's key id: the identity requester_id and
	// solver_id are bound to. Empty in open mode.
	KeyID  string
	Roles  []string
	Scopes []string
	// Open: open mode, for local use. Identities come from the body and
	// no role or scope is checked.
	Open bool
}

// openCaller is the caller of every call in open mode: one tenant, every
// role and scope.
func openCaller() caller {
	return caller{Tenant: "local", Open: true,
		Roles:  []string{RoleRequester, RoleSolver, RoleOperator},
		Scopes: []string{ScopeRead, ScopePrivate, ScopeWrite}}
}

// Has reports whether the caller holds role.
func (a caller) Has(role string) bool { return a.Open || slices.Contains(a.Roles, role) }

// Can reports whether the caller holds scope.
func (a caller) Can(scope string) bool { return a.Open || slices.Contains(a.Scopes, scope) }

// Solver is a Matter's assignment.
type Solver struct {
	ID            string       `json:"solver_id"`
	Kind          string       `json:"solver_kind"`
	Qualification string       `json:"qualification,omitempty"`
	ConflictFree  bool         `json:"conflict_free"`
	Status        SolverStatus `json:"solver_status"`
	AssignedAt    time.Time    `json:"assigned_at"`
	AcceptedAt    time.Time    `json:"accepted_at,omitzero"`
}

// Matter is a Matter of record: the private projection.
type Matter struct {
	ID            string          `json:"matter_id"`
	Schema        string          `json:"schema"`
	Tenant        string          `json:"tenant_id"`
	RequesterID   string          `json:"requester_id"`
	ActionDigest  string          `json:"action_digest,omitempty"`
	Question      string          `json:"question"`
	StakesUSDC    string          `json:"stakes_usdc"`
	Deadline      time.Time       `json:"deadline"`
	RiskClass     string          `json:"risk_class"`
	VerdictSchema json.RawMessage `json:"verdict_schema"`
	Status        Status          `json:"status"`
	Solver        *Solver         `json:"solver,omitempty"`
	Verdict       json.RawMessage `json:"verdict,omitempty"`
	// VerdictSolverKind labels who gave the verdict; VerdictSolverHash is
	// the SHA-256 of their id.
	VerdictSolverKind string `json:"verdict_solver_kind,omitempty"`
	VerdictSolverHash string `json:"verdict_solver_hash,omitempty"`
	VerdictSchemaOK   bool   `json:"verdict_schema_ok"`
	// SolverPaid is an operator assertion, never payment evidence.
	SolverPaid    bool   `json:"solver_paid"`
	DisputeReason string `json:"dispute_reason,omitempty"`
	// Exchange is a quorum Matter's state (exchange.go); nil for v1.
	Exchange *Exchange `json:"exchange,omitempty"`

	QuestionHash string `json:"question_sha256"`
	SchemaHash   string `json:"verdict_schema_sha256"`
	VerdictHash  string `json:"verdict_sha256,omitempty"`

	Receipts        []string `json:"receipts"` // receipt ids, oldest first
	LastReceiptHash string   `json:"last_receipt_hash"`

	CreatedAt  time.Time `json:"created_at"`
	JudgedAt   time.Time `json:"judged_at,omitzero"`
	SettledAt  time.Time `json:"settled_at,omitzero"`
	DisputedAt time.Time `json:"disputed_at,omitzero"`
	ExpiredAt  time.Time `json:"expired_at,omitzero"`
}

// PublicSolver is the solver metadata a redacted projection shows.
type PublicSolver struct {
	IDHash       string       `json:"solver_id_sha256"`
	Kind         string       `json:"solver_kind"`
	ConflictFree bool         `json:"conflict_free"`
	Status       SolverStatus `json:"solver_status"`
	AssignedAt   time.Time    `json:"assigned_at"`
	AcceptedAt   time.Time    `json:"accepted_at,omitzero"`
}

// Public is the seed's public Matter projection: hashes, solver metadata,
// the action digest, timestamps and the receipt count; no question, schema,
// verdict, identities or reason.
type Public struct {
	ID              string        `json:"matter_id"`
	Schema          string        `json:"schema"`
	Status          Status        `json:"status"`
	RiskClass       string        `json:"risk_class"`
	RequesterHash   string        `json:"requester_id_sha256"`
	ActionDigest    string        `json:"action_digest,omitempty"`
	QuestionHash    string        `json:"question_sha256"`
	SchemaHash      string        `json:"verdict_schema_sha256"`
	VerdictHash     string        `json:"verdict_sha256,omitempty"`
	VerdictSchemaOK bool          `json:"verdict_schema_ok"`
	SolverPaid      bool          `json:"solver_paid"`
	Solver          *PublicSolver `json:"solver,omitempty"`
	Deadline        time.Time     `json:"deadline"`
	CreatedAt       time.Time     `json:"created_at"`
	JudgedAt        time.Time     `json:"judged_at,omitzero"`
	SettledAt       time.Time     `json:"settled_at,omitzero"`
	DisputedAt      time.Time     `json:"disputed_at,omitzero"`
	ExpiredAt       time.Time     `json:"expired_at,omitzero"`
	ReceiptCount    int           `json:"receipt_count"`
	LastReceiptHash string        `json:"last_receipt_hash"`
	Redacted        bool          `json:"redacted"`
	// Exchange is a quorum Matter's state, redacted; nil for v1.
	Exchange *PublicExchange `json:"exchange,omitempty"`
}

// Public returns m's redacted projection.
func (m *Matter) Public() Public {
	p := Public{
		ID: m.ID, Schema: m.Schema, Status: m.Status, RiskClass: m.RiskClass,
		RequesterHash: hashHex(m.RequesterID), ActionDigest: m.ActionDigest,
		QuestionHash: m.QuestionHash, SchemaHash: m.SchemaHash, VerdictHash: m.VerdictHash,
		VerdictSchemaOK: m.VerdictSchemaOK, SolverPaid: m.SolverPaid,
		Deadline: m.Deadline, CreatedAt: m.CreatedAt, JudgedAt: m.JudgedAt,
		SettledAt: m.SettledAt, DisputedAt: m.DisputedAt, ExpiredAt: m.ExpiredAt,
		ReceiptCount: len(m.Receipts), LastReceiptHash: m.LastReceiptHash, Redacted: true,
	}
	if s := m.Solver; s != nil {
		p.Solver = &PublicSolver{IDHash: hashHex(s.ID), Kind: s.Kind, ConflictFree: s.ConflictFree,
			Status: s.Status, AssignedAt: s.AssignedAt, AcceptedAt: s.AcceptedAt}
	}
	if m.Exchange != nil {
		p.Exchange = m.Exchange.public()
	}
	return p
}

func (m *Matter) solverKind() string {
	if m.Solver != nil {
		return m.Solver.Kind
	}
	return m.VerdictSolverKind
}

// Reply is a mutation's answer, the same bytes on every replay.
type Reply = idem.Reply

// Config configures a Service. Store and Signer are required.
type Config struct {
	Store  store.Store
	Signer Signer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// NewID returns a fresh id; ident.NewID when nil (cmd/assay gives
	// PostgreSQL ident.RandomID).
	NewID func() string
	// Court decides the exchange's appeals; appeals are refused with
	// appeal_unavailable when nil.
	Court Court
	// Auth is how callers authenticate: principal.Signed (registered
	// principals, the default) or principal.Open (identities from the
	// body, one tenant, local use only).
	Auth principal.Mode
	// Principals is the server's one principal registry; one over Store
	// and Now when nil.
	Principals *principal.Registry
}

// Service is the judgment service over a store. It is safe for concurrent
// use; every mutation is one serialisable transaction.
type Service struct {
	st     store.Store
	signer Signer
	now    func() time.Time
	newID  func() string
	court  Court
	auth   principal.Mode
	// principals are the registered keys and the used nonces.
	principals *principal.Registry
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Signer == nil {
		return nil, errors.New("matters: Config.Store and Config.Signer are required")
	}
	s := &Service{st: cfg.Store, signer: cfg.Signer, now: cfg.Now, newID: cfg.NewID, court: cfg.Court, auth: cfg.Auth, principals: cfg.Principals}
	if s.auth == "" {
		s.auth = principal.Signed
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = ident.NewID
	}
	if s.principals == nil {
		s.principals = principal.New(s.st, s.now)
	}
	return s, nil
}
