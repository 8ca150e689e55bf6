package market

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// Receipt kinds the market signs.
const (
	KindListing    = "AssayListing"    // a publication, with its checker replay
	KindPurchase   = "AssayPurchase"   // a purchase: artifact hash, payment reference, recourse, purpose
	KindSettlement = "AssaySettlement" // a window closed: the seller and the platform paid
	KindChallenge  = "AssayChallenge"  // a challenge and how it was resolved
	KindRefund     = "AssayRefund"     // a refund of price and fee
	KindReplay     = "AssayReplay"     // a sample or buyer-requested replay
)

// Listing states.
const (
	ListingActive  = "active"
	ListingRetired = "retired" // the seller deactivated it
	ListingPulled  = "pulled"  // a challenge was upheld or a sample replay failed
)

// Purchase states.
const (
	PurchaseHeld       = "held"       // proceeds held; the window is open
	PurchaseChallenged = "challenged" // a challenge awaits the operator; nothing settles
	PurchaseSettled    = "settled"    // the seller and the platform were paid
	PurchaseRefunded   = "refunded"   // the buyer got price and fee back
)

// Challenge states.
const (
	ChallengeOpen     = "open"
	ChallengeUpheld   = "upheld"
	ChallengeRejected = "rejected"
)

// Bounds.
const (
	MaxAgentBytes    = ident.MaxIDBytes
	MaxTitleBytes    = 512
	MaxProblemBytes  = 64 << 10
	MaxArtifactBytes = 4 << 20
	MaxEvidenceBytes = 256 << 10
	MaxTextBytes     = 4096
	// SamplesForLevel3: passed replays after publication, with no failure,
	// that make a level-1 listing level 3.
	SamplesForLevel3 = 3
	// DefaultHousePrefix names the house (seed) agents: the seed's G17.
	DefaultHousePrefix = "g17-"
	settleBatch        = 256
)

// ArtifactTypes are the seed's artifact types.
var ArtifactTypes = []string{"solution", "dataset", "embedding", "code", "document", "data_feed"}

// Signer signs receipts; *receipt.Keyring implements it.
type Signer interface {
	Sign(kind, id string, subject any) (receipt.Receipt, error)
}

// Runner replays a checker; *checkers.Runner implements it.
type Runner interface {
	Run(ctx context.Context, ref checkers.Ref, in wasm.Input) (wasm.Outcome, error)
}

// BatchRunner is a Runner that replays many jobs at once, in parallel;
// *checkers.Runner is one. Tick replays its samples through it when the
// Runner has it.
type BatchRunner interface {
	RunJobs(ctx context.Context, jobs []checkers.Job, opts checkers.BatchOptions) ([]checkers.Result, error)
}

// Interface guards.
var (
	_ Signer      = (*receipt.Keyring)(nil)
	_ Runner      = (*checkers.Runner)(nil)
	_ BatchRunner = (*checkers.Runner)(nil)
)

// Config configures a Service. Store and Signer are required.
type Config struct {
	Store  store.Store
	Signer Signer
	// Runner replays checkers: the server's one runner, reading the
	// checker registry in Store (runtime/replays.Checkers), where POST
	// /checkers puts wasm checkers and Publish a listing's Python source.
	// Nil: listings with a checker are refused (checkers_unavailable), and
	// level-2 listings still work.
	Runner Runner
	// Rail is the payment rail; rail.Dev when nil.
	Rail rail.Rail
	// Intents configures the intents of a rail that settles remotely
	// (rail.Remote: x402): Exclusive, Lease, Counters and Fault; the
	// market fills in its store, rail and clock.
	Intents rail.PaymentsConfig
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// NewID returns a fresh id; ident.NewID when nil (cmd/assay gives
	// PostgreSQL ident.RandomID).
	NewID func() string
	// Rand picks sample listings: a number in [0, n). math/rand when nil.
	Rand func(n int) int
	// HousePrefix names house agents, whose listings carry seed=true and
	// whose purchases are not organic demand; DefaultHousePrefix when empty.
	HousePrefix string
	// PlatformAccount receives fees; "platform:market" when empty.
	PlatformAccount string
	// Auth is how the market authenticates the agents that act in it:
	// principal.Signed (an action is made by the agent it names) or
	// principal.Open (agents named in the body, local use only; the
	// default).
	Auth principal.Mode
	// Identity names who stands behind an agent id, for level 3: replays
	// by agent ids with one identity count as one buyer, and never when
	// the identity is the seller's. Nil: the agent id itself, which is all
	// the market knows until agents are authenticated; then the
	// authenticated principal of the request (carried by ctx) belongs
	// here.
	Identity func(ctx context.Context, agent string) string
	// Sources keeps a listing's Python checker source where Runner reads
	// it, charged to the publisher's upload quota
	// (*replays.Library.KeepSource). Nil: the source is put in Store
	// directly, charged to nothing.
	Sources Sources
}

// Sources keeps checker sources in the checker registry for the agent
// that publishes them.
type Sources interface {
	// KeepSource stores source for a, unless it is stored already.
	//
	// # Errors
	//
	// A refusal of a's upload quota (429 or 413), with nothing stored.
	KeepSource(ctx context.Context, a principal.Actor, source []byte) error
}

// The work bounds of the market's reads that scan: a browse or a search
// that would examine more records (a listing, a search record, a posting
// of the token index, each one) is refused with 422 scan_limit_exceeded,
// the same request over the same market always at the same point.
// A page is at most 100 results besides.
const (
	// MaxBrowseRecords bounds a browse, which reads every listing.
	MaxBrowseRecords = 10_000
	// MaxSearchRecords bounds a search: postings of its words, the
	// listings they name, search records where the index is incomplete.
	MaxSearchRecords = 1 << 18
)

// Service is the artifact market over a store. It is safe for concurrent
// use.
type Service struct {
	st       store.Store
	signer   Signer
	runner   Runner
	rail     rail.Rail
	pay      *rail.Payments // the rail's intents, when it settles remotely
	now      func() time.Time
	newID    func() string
	rand     func(int) int
	house    string
	platform string
	ident    func(context.Context, string) string
	auth     principal.Mode
	sources  Sources
	// maxBrowse and maxSearch bound the records one browse or search
	// examines (MaxBrowseRecords, MaxSearchRecords; tests lower them).
	maxBrowse, maxSearch int
	scanOnly             bool // tests: search by scanning every search record
	common               int  // commonPostings; tests lower it
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Signer == nil {
		return nil, errors.New("market: Config.Store and Config.Signer are required")
	}
	s := &Service{st: cfg.Store, signer: cfg.Signer, runner: cfg.Runner, rail: cfg.Rail, now: cfg.Now, newID: cfg.NewID,
		rand: cfg.Rand, house: cfg.HousePrefix, platform: cfg.PlatformAccount, ident: cfg.Identity, common: commonPostings, auth: cfg.Auth, sources: cfg.Sources,
		maxBrowse: MaxBrowseRecords, maxSearch: MaxSearchRecords}
	if s.auth == "" {
		s.auth = principal.Open
	}
	if s.rail == nil {
		s.rail = rail.Dev{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = ident.NewID
	}
	if s.rand == nil {
		s.rand = mrand.IntN
	}
	if s.house == "" {
		s.house = DefaultHousePrefix
	}
	if s.platform == "" {
		s.platform = "platform:market"
	}
	s.pay = s.newPayments(cfg.Intents)
	if err := s.buildIndex(context.Background()); err != nil {
		return nil, fmt.Errorf("market: build the search index: %w", err)
	}
	return s, nil
}

// NewWithRunner is New with r as cfg.Runner.
func NewWithRunner(cfg Config, r Runner) (*Service, error) {
	cfg.Runner = r
	return New(cfg)
}

// Runner returns the Runner the market replays checkers on (Config.Runner);
// nil when it has none.
func (s *Service) Runner() Runner { return s.runner }

// identity is Config.Identity, or the agent id itself.
func (s *Service) identity(ctx context.Context, agent string) string {
	if s.ident == nil {
		return agent
	}
	return s.ident(ctx, agent)
}

// Store returns the store the Service runs on.
func (s *Service) Store() store.Store { return s.st }

// Rail returns the payment rail.
func (s *Service) Rail() rail.Rail { return s.rail }

// Mode returns how the market authenticates agents.
func (s *Service) Mode() principal.Mode { return s.auth }

// Ledger accounts.

func holdAccount(purchase string) string { return "hold:market:" + purchase }
func bondAccount(listing string) string  { return "hold:bond:" + listing }

// Reply is a mutation's answer: the JSON body the client gets.
type Reply = idem.Reply

// lockWallet makes concurrent debits of one wallet conflict, in this
// service and in every other that debits the same ledger account (the
// judgment exchange's bonds): ledger.Lock.
func lockWallet(tx store.Tx, did string) error {
	return ledger.Lock(tx, ledger.AgentAccount(did))
}

// receiptID derives a receipt id from what it is about and its purpose:
// the same on every retry of the transaction that signs it.
func receiptID(subject, purpose string) string { return receipt.ID("market", subject, purpose) }

// sign signs a receipt and stores it, indexed under its parties, in the
// receipt repository.
func (s *Service) sign(tx store.Tx, kind, rid string, at time.Time, subject any, parties ...string) (json.RawMessage, error) {
	r, err := s.signer.Sign(kind, rid, subject)
	if err != nil {
		return nil, err
	}
	return receipt.Put(tx, r, at, parties...)
}

// signedOutcome is an outcome as receipts carry it: without the wall time,
// the one field that differs between runs.
func signedOutcome(o wasm.Outcome) wasm.Outcome {
	o.WallNS = 0
	return o
}
