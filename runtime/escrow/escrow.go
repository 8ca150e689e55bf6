package escrow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Status is a contract's state.
type Status string

// The states of a contract. See the package documentation.
const (
	StatusCreated   Status = "created"
	StatusFunded    Status = "funded"
	StatusDelivered Status = "delivered"
	StatusEscalated Status = "escalated"
	StatusResolved  Status = "resolved"
)

// Tiers that are not adjudicate's: who or what decided a case when no
// adjudication ran, or a person did.
const (
	TierBuyerAccept = "buyer-accept"         // the buyer accepted
	TierOperator    = "operator"             // an operator resolved an escalated dispute
	TierDeliverBy   = "deliver-by-expired"   // nothing was delivered by deliver_by: refund
	TierReview      = "review-window-lapsed" // the buyer did not decide in the review window: release
)

// Defaults and bounds.
const (
	DefaultCurrency     = "credits"
	DefaultDeadlineTick = 1000
	// MaxPrice is the largest price: receipts carry it as an exact JSON
	// number, which RFC 8785 bounds at 2^53-1, and it is the most one
	// ledger transfer moves.
	MaxPrice       = ledger.MaxAmount
	MaxDIDBytes    = ident.MaxIDBytes
	MaxReasonBytes = 4096
)

// Signer signs receipts; *receipt.Keyring implements it.
type Signer interface {
	// Sign signs subject as a receipt of kind with the given id, issued now.
	Sign(kind, id string, subject any) (receipt.Receipt, error)
}

// Runner replays the checkers a contract's criteria name; the server's
// one *checkers.Runner implements it.
type Runner = adjudicate.Runner

// Identities says which agent ids can prove who they are;
// *principal.Registry implements it.
type Identities interface {
	// Provable reports whether agent can sign for itself: a did:key, or
	// a registered principal's key id.
	//
	// # Errors
	//
	// A failed read, which refuses the request: never a pass.
	Provable(ctx context.Context, agent string) (bool, error)
}

// Interface guards.
var (
	_ Identities = (*principal.Registry)(nil)
	_ Signer     = (*receipt.Keyring)(nil)
	_ Runner     = (*checkers.Runner)(nil)
)

// Config configures a Service. Store and Signer are required.
type Config struct {
	Store  store.Store
	Signer Signer
	// Runner replays checkers: the server's one runner, reading the
	// registry in Store (runtime/replays.Checkers). Nil: a dispute whose
	// criteria name a checker is escalated.
	Runner Runner
	// Juror answers semantic criteria: adjudicate/jury's LLM jury, wired
	// by cmd/assay. Nil: semantic criteria get no answer and a dispute
	// that reaches them is escalated.
	Juror adjudicate.Juror
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// NewID returns a fresh id; ident.NewID, whose ids sort by when they
	// were made, when nil. A store on which such ids make transactions
	// conflict (PostgreSQL) is given ident.RandomID.
	NewID func() string
	// Rail is the rail a contract in a notional currency (the seed's
	// credits) is funded on: the price is collected on it, then posted from
	// the buyer's mint account (rail.MintAccount) into the contract's hold;
	// a collection that cannot be recorded is refunded (rail.Charge).
	// rail.Mint{} when nil. A contract in a backed currency (rail.Backed)
	// is funded from the buyer's own wallet instead, by a request the
	// buyer makes.
	Rail rail.Rail
	// Auth is how the court authenticates parties: principal.Open (the
	// seed's court, the default) or principal.Signed, where a party that
	// can prove who it is (Identities) moves its contracts itself.
	Auth principal.Mode
	// Identities says which parties can prove who they are: the server's
	// one principal registry. Required when Auth is signed.
	Identities Identities
	// ContractPrefix starts every contract id; "esc-" when empty.
	ContractPrefix string
}

// Service is the escrow court over a store. It is safe for concurrent use.
type Service struct {
	st     store.Store
	signer Signer
	runner adjudicate.Runner
	juror  adjudicate.Juror
	now    func() time.Time
	newID  func() string
	rail   rail.Rail
	auth   principal.Mode
	ids    Identities
	prefix string
	plans  *adjudicate.Cache
	// contracts is the court's repository of contract records (repo.go).
	contracts contracts
	seq       atomic.Uint64 // last activity sequence number handed out
	// node tells this process's activity events from those of other
	// nodes serving the court from the same store, which number theirs
	// from the same last sequence number: random per process, so that no
	// two nodes write one key.
	node string
}

// New returns a Service on cfg.Store. It reads the last activity sequence
// number, so that numbering resumes after a restart.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Signer == nil {
		return nil, errors.New("escrow: Config.Store and Config.Signer are required")
	}
	s := &Service{
		st:     cfg.Store,
		signer: cfg.Signer,
		runner: cfg.Runner,
		juror:  cfg.Juror,
		now:    cfg.Now,
		newID:  cfg.NewID,
		rail:   cfg.Rail,
		auth:   cfg.Auth,
		ids:    cfg.Identities,
		prefix: cfg.ContractPrefix,
		plans:  adjudicate.NewCache(4096),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = ident.NewID
	}
	if s.rail == nil {
		s.rail = rail.Mint{}
	}
	if s.auth == "" {
		s.auth = principal.Open
	}
	if s.auth == principal.Signed && s.ids == nil {
		return nil, errors.New("escrow: a signed court needs Config.Identities")
	}
	if s.prefix == "" {
		s.prefix = "esc-"
	}
	if err := markNegatives(ctx, cfg.Store); err != nil {
		return nil, fmt.Errorf("escrow: mark agents with negatives: %w", err)
	}
	last, err := s.lastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("escrow: read activity log: %w", err)
	}
	s.seq.Store(last)
	var node [4]byte
	if _, err := rand.Read(node[:]); err != nil {
		return nil, fmt.Errorf("escrow: node tag: %w", err)
	}
	s.node = hex.EncodeToString(node[:])
	return s, nil
}

// Runner returns the Runner that replays the court's checkers
// (Config.Runner); nil when the court has none.
func (s *Service) Runner() Runner { return s.runner }

// HasJuror reports whether semantic criteria can be decided here.
func (s *Service) HasJuror() bool { return s.juror != nil }

// Store returns the store the Service runs on.
func (s *Service) Store() store.Store { return s.st }

// Mode returns how the court authenticates parties.
func (s *Service) Mode() principal.Mode { return s.auth }
