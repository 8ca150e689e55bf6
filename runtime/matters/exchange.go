package matters

import (
	"encoding/json"
	"time"
)

// The exchange: quorum Matters over a solver registry, with commit-reveal
// verdicts, stakes and bonds on the shared ledger, appeal to the court and
// outcome observation. A v1 Matter (one assigned solver) has no Exchange
// and behaves as the seed says; docs/exchange.md is the user's guide.

// The exchange's own states. A quorum Matter is open while it takes
// commitments and reveals; judged when M solvers agreed; no_consensus when
// they did not; appealed while the court decides; upheld or overturned when
// it has. no_consensus, upheld and overturned are terminal.
const (
	StatusNoConsensus Status = "no_consensus"
	StatusAppealed    Status = "appealed"
	StatusUpheld      Status = "upheld"
	StatusOverturned  Status = "overturned"
)

// Phase is where an open quorum Matter stands.
type Phase string

// The phases: solvers commit until the quorum closes (N commitments, or
// the deadline with at least M), then reveal until every committed solver
// revealed or the reveal window ends; then the reveals are aggregated.
const (
	PhaseCommit Phase = "commit"
	PhaseReveal Phase = "reveal"
	PhaseClosed Phase = "closed"
)

// Seat states, beyond SolverInvited and SolverAccepted.
const (
	SolverCommitted SolverStatus = "committed"
	SolverRevealed  SolverStatus = "revealed"
)

// Receipt kinds of the exchange.
const (
	KindSolverRegistered = "solver_registered"
	KindCommitted        = "verdict_committed"
	KindQuorumClosed     = "quorum_closed"
	KindRevealed         = "verdict_revealed"
	KindAggregated       = "verdicts_aggregated"
	KindAppealed         = "matter_appealed"
	KindAppealResolved   = "appeal_resolved"
	KindObserved         = "outcome_observed"
)

func init() {
	for k, t := range map[string]string{
		KindSolverRegistered: "AssayMatterSolverRegistered",
		KindCommitted:        "AssayMatterVerdictCommitted",
		KindQuorumClosed:     "AssayMatterQuorumClosed",
		KindRevealed:         "AssayMatterVerdictRevealed",
		KindAggregated:       "AssayMatterVerdictsAggregated",
		KindAppealed:         "AssayMatterAppealed",
		KindAppealResolved:   "AssayMatterAppealResolved",
		KindObserved:         "AssayMatterOutcomeObserved",
	} {
		receiptTypes[k] = t
	}
}

// Bounds of the exchange.
const (
	MaxSeats          = 25  // N
	MaxListEntries    = 32  // qualifications, conflicts, agree_on fields
	MaxLabelBytes     = 256 // a lineage name, a qualification, a conflict
	MinSaltBytes      = 32
	MaxSaltBytes      = 256
	DefaultRevealWait = time.Hour
	MaxRevealWait     = 30 * 24 * time.Hour
)

// Currency is the ledger currency of stakes and bonds: integer micro-USD,
// the market's, so that a wallet an agent funds through the market pays
// for Matters too.
const Currency = "usd-micro"

// Lineage is a model solver's ancestry: who serves it and what it was
// trained from. Two models of one lineage are one voice for diversity.
type Lineage struct {
	Provider  string `json:"provider"`
	BaseModel string `json:"base_model"`
}

func (l Lineage) key() string { return l.Provider + "\x00" + l.BaseModel }

// SolverProfile is a registered solver.
type SolverProfile struct {
	ID             string    `json:"solver_id"`
	Tenant         string    `json:"tenant_id"`
	Kind           string    `json:"solver_kind"`
	Lineage        *Lineage  `json:"lineage,omitempty"`
	Qualifications []string  `json:"qualifications"`
	Conflicts      []string  `json:"conflicts"`
	Version        int       `json:"version"`
	RegisteredAt   time.Time `json:"registered_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Receipts       []string  `json:"receipts"`
}

// QuorumSpec is what a requester asks of a quorum Matter.
type QuorumSpec struct {
	// Solvers is N, the seats; Agree is M, how many identical verdicts
	// judge the Matter (more than half of N); Lineages is K, the fewest
	// distinct lineages among the model solvers (0: no rule).
	Solvers  int `json:"solvers"`
	Agree    int `json:"agree"`
	Lineages int `json:"lineages,omitempty"`
	// AgreeOn names the verdict's top-level fields two verdicts must
	// share to agree; the schema's required fields when empty.
	AgreeOn []string `json:"agree_on,omitempty"`
	// RevealWindowSeconds is how long solvers have to reveal once the
	// quorum closed; an hour when 0.
	RevealWindowSeconds int `json:"reveal_window_seconds,omitempty"`
	// PayUSDC is each solver's pay and BondUSDC each solver's bond,
	// decimal dollars; both empty or zero for an unstaked Matter.
	PayUSDC  string `json:"pay_usdc,omitempty"`
	BondUSDC string `json:"bond_usdc,omitempty"`
}

// Seat is one solver's place in a quorum.
type Seat struct {
	SolverID    string          `json:"solver_id"`
	Kind        string          `json:"solver_kind"`
	Lineage     *Lineage        `json:"lineage,omitempty"`
	Status      SolverStatus    `json:"solver_status"`
	Commitment  string          `json:"commitment,omitempty"`
	Verdict     json.RawMessage `json:"verdict,omitempty"`
	VerdictHash string          `json:"verdict_sha256,omitempty"`
	// Majority is set by the aggregation: whether the seat's verdict
	// agreed with the judged verdict.
	Majority    *bool     `json:"majority,omitempty"`
	BondHeld    bool      `json:"bond_held"`
	AssignedAt  time.Time `json:"assigned_at"`
	AcceptedAt  time.Time `json:"accepted_at,omitzero"`
	CommittedAt time.Time `json:"committed_at,omitzero"`
	RevealedAt  time.Time `json:"revealed_at,omitzero"`
}

// Group is one set of agreeing reveals, by the hash of what they agree on.
type Group struct {
	KeyHash string `json:"agreement_sha256"`
	Count   int    `json:"count"`
}

// Aggregate is what the aggregation found.
type Aggregate struct {
	Result   Status    `json:"result"` // judged or no_consensus
	Revealed int       `json:"revealed"`
	Agreeing int       `json:"agreeing"`
	Groups   []Group   `json:"groups"`
	At       time.Time `json:"at"`
}

// Appeal is a judged quorum Matter's appeal to the court.
type Appeal struct {
	Appellant    string    `json:"appellant"`
	Respondent   string    `json:"respondent"`
	ReasonHash   string    `json:"reason_sha256"`
	FeeMicro     int64     `json:"fee_micro"`
	CaseID       string    `json:"case_id,omitempty"`
	Result       string    `json:"result,omitempty"` // upheld or overturned
	Tier         string    `json:"tier,omitempty"`
	CourtReceipt string    `json:"court_receipt_id,omitempty"`
	CourtHash    string    `json:"court_receipt_hash,omitempty"`
	OpenedAt     time.Time `json:"opened_at"`
	ResolvedAt   time.Time `json:"resolved_at,omitzero"`
	Reason       string    `json:"reason,omitempty"`
}

// Observation is what actually happened, recorded once.
type Observation struct {
	Outcome    json.RawMessage `json:"outcome"`
	Hash       string          `json:"outcome_sha256"`
	ObservedBy string          `json:"observed_by_sha256"`
	At         time.Time       `json:"at"`
}

// Posting is one ledger transfer a Matter made, as its receipts list it.
type Posting struct {
	Transfer string `json:"transfer"`
	From     string `json:"from"`
	To       string `json:"to"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// Exchange is a quorum Matter's exchange state.
type Exchange struct {
	Quorum    QuorumSpec   `json:"quorum"`
	PayMicro  int64        `json:"pay_micro"`
	BondMicro int64        `json:"bond_micro"`
	Hold      string       `json:"hold_account,omitempty"`
	Phase     Phase        `json:"phase"`
	ClosedAt  time.Time    `json:"quorum_closed_at,omitzero"`
	RevealBy  time.Time    `json:"reveal_by,omitzero"`
	Seats     []Seat       `json:"seats"`
	Aggregate *Aggregate   `json:"aggregate,omitempty"`
	Appeal    *Appeal      `json:"appeal,omitempty"`
	Observed  *Observation `json:"observation,omitempty"`
	Postings  []Posting    `json:"postings"`
	// Settled is set when the held money has all moved.
	Settled bool `json:"funds_settled"`
}

func (x *Exchange) staked() bool { return x.PayMicro > 0 || x.BondMicro > 0 }

func (x *Exchange) seat(id string) (int, *Seat) {
	for i := range x.Seats {
		if x.Seats[i].SolverID == id {
			return i, &x.Seats[i]
		}
	}
	return -1, nil
}

func (x *Exchange) count(st ...SolverStatus) int {
	n := 0
	for _, s := range x.Seats {
		for _, w := range st {
			if s.Status == w {
				n++
			}
		}
	}
	return n
}

// PublicSeat is a seat in the redacted projection: no verdict while the
// quorum is sealed, and the solver by hash.
type PublicSeat struct {
	IDHash      string       `json:"solver_id_sha256"`
	Kind        string       `json:"solver_kind"`
	Lineage     *Lineage     `json:"lineage,omitempty"`
	Status      SolverStatus `json:"solver_status"`
	Commitment  string       `json:"commitment,omitempty"`
	VerdictHash string       `json:"verdict_sha256,omitempty"`
	Majority    *bool        `json:"majority,omitempty"`
	BondHeld    bool         `json:"bond_held"`
}

// PublicExchange is the exchange state of the redacted projection.
type PublicExchange struct {
	Quorum    QuorumSpec   `json:"quorum"`
	Phase     Phase        `json:"phase"`
	RevealBy  time.Time    `json:"reveal_by,omitzero"`
	Seats     []PublicSeat `json:"seats"`
	Aggregate *Aggregate   `json:"aggregate,omitempty"`
	Appeal    *struct {
		CaseID string `json:"case_id,omitempty"`
		Result string `json:"result,omitempty"`
		Tier   string `json:"tier,omitempty"`
	} `json:"appeal,omitempty"`
	Observed bool      `json:"observed"`
	Postings []Posting `json:"postings"`
	Settled  bool      `json:"funds_settled"`
}

func (x *Exchange) public() *PublicExchange {
	p := &PublicExchange{Quorum: x.Quorum, Phase: x.Phase, RevealBy: x.RevealBy, Seats: []PublicSeat{},
		Aggregate: x.Aggregate, Observed: x.Observed != nil, Postings: x.Postings, Settled: x.Settled}
	for _, s := range x.Seats {
		p.Seats = append(p.Seats, PublicSeat{IDHash: hashHex(s.SolverID), Kind: s.Kind, Lineage: s.Lineage,
			Status: s.Status, Commitment: s.Commitment, VerdictHash: s.VerdictHash, Majority: s.Majority, BondHeld: s.BondHeld})
	}
	if a := x.Appeal; a != nil {
		p.Appeal = &struct {
			CaseID string `json:"case_id,omitempty"`
			Result string `json:"result,omitempty"`
			Tier   string `json:"tier,omitempty"`
		}{a.CaseID, a.Result, a.Tier}
	}
	return p
}

// ExchangeSubject is what an exchange receipt adds to the Matter subject.
type ExchangeSubject struct {
	Solvers      int        `json:"solvers"`
	Agree        int        `json:"agree"`
	Lineages     int        `json:"lineages"`
	Phase        Phase      `json:"phase"`
	Seat         *int       `json:"seat,omitempty"`
	Commitment   string     `json:"commitment,omitempty"`
	Aggregate    *Aggregate `json:"aggregate,omitempty"`
	Postings     []Posting  `json:"postings,omitempty"`
	CaseID       string     `json:"case_id,omitempty"`
	CourtReceipt string     `json:"court_receipt_id,omitempty"`
	CourtHash    string     `json:"court_receipt_hash,omitempty"`
	AppealResult string     `json:"appeal_result,omitempty"`
	OutcomeHash  string     `json:"outcome_sha256,omitempty"`
	PayMicro     int64      `json:"pay_micro"`
	BondMicro    int64      `json:"bond_micro"`
	SeatVerdict  string     `json:"seat_verdict_sha256,omitempty"`
	Reason       string     `json:"reason,omitempty"`
}
