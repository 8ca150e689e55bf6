package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
)

// The services as the API calls them: what it needs of each, declared
// here, where it is used. cmd/assay hands it the runtime's services
// (runtime/escrow, runtime/market, runtime/matters, runtime/replays,
// runtime/principal); a test may hand it anything that answers alike.
// Every call that a caller may or may not be allowed to make takes the
// request's principal.Actor, and the service decides.

// Court is the escrow court (*escrow.Service).
type Court interface {
	Create(ctx context.Context, req escrow.CreateRequest, ik idem.Request) (idem.Reply, error)
	Fund(ctx context.Context, a principal.Actor, id string, ik idem.Request) (idem.Reply, error)
	Deliver(ctx context.Context, a principal.Actor, id string, req escrow.DeliverRequest, ik idem.Request) (idem.Reply, error)
	Accept(ctx context.Context, a principal.Actor, id string, ik idem.Request) (idem.Reply, error)
	Dispute(ctx context.Context, a principal.Actor, id string, req escrow.DisputeRequest, ik idem.Request) (idem.Reply, error)
	Resolve(ctx context.Context, a principal.Actor, id string, req escrow.ResolveRequest, ik idem.Request) (idem.Reply, error)
	Get(ctx context.Context, id string) (*escrow.Contract, error)
	Activity(ctx context.Context, limit int) (escrow.Activity, error)
	AgentReceipts(ctx context.Context, did string, limit int) (receipt.AgentReceipts, error)
	Reputation(ctx context.Context, did string) (escrow.Reputation, error)
	Account(ctx context.Context, id string) (ledger.Account, error)
	Audit(ctx context.Context) (ledger.Audit, error)
	// SignedReceipt is a receipt of any service, in its signed bytes.
	SignedReceipt(ctx context.Context, id string) (json.RawMessage, error)
	// Mode is how the court authenticates parties, for the documents.
	Mode() principal.Mode
}

// Market is the artifact market (*market.Service).
type Market interface {
	Search(ctx context.Context, req market.SearchRequest) (market.Results, error)
	Get(ctx context.Context, id string) (market.View, error)
	Publish(ctx context.Context, a principal.Actor, req market.PublishRequest, ik idem.Request) (idem.Reply, error)
	Buy(ctx context.Context, a principal.Actor, listing string, req market.PurchaseRequest, ik idem.Request) (idem.Reply, error)
	Deactivate(ctx context.Context, a principal.Actor, id string, req market.DeactivateRequest, ik idem.Request) (idem.Reply, error)
	Challenge(ctx context.Context, a principal.Actor, listing string, req market.ChallengeRequest, ik idem.Request) (idem.Reply, error)
	Replay(ctx context.Context, a principal.Actor, listing string, req market.ReplayRequest) (market.Replayed, error)
	Resolve(ctx context.Context, a principal.Actor, id string, req market.ResolveRequest, ik idem.Request) (idem.Reply, error)
	Tick(ctx context.Context, req market.TickRequest) (market.Ticked, error)
	PurchaseOf(ctx context.Context, id string) (*market.Purchase, error)
	ChallengeOf(ctx context.Context, id string) (*market.Challenge, error)
	AgentProfile(ctx context.Context, did string) (market.Profile, error)
	Stats(ctx context.Context) (market.Stats, error)
	WalletOf(ctx context.Context, did string) (market.Wallet, error)
	Deposit(ctx context.Context, a principal.Actor, did string, req market.AmountRequest, ik idem.Request) (idem.Reply, error)
	Withdraw(ctx context.Context, a principal.Actor, did string, req market.AmountRequest, ik idem.Request) (idem.Reply, error)
	Mode() principal.Mode
}

// Matters is the judgment service and its exchange (*matters.Service).
type Matters interface {
	Open(ctx context.Context, a principal.Actor, req matters.OpenRequest) (idem.Reply, error)
	Assign(ctx context.Context, a principal.Actor, req matters.AssignRequest) (idem.Reply, error)
	Accept(ctx context.Context, a principal.Actor, req matters.AcceptRequest) (idem.Reply, error)
	Verdict(ctx context.Context, a principal.Actor, req matters.VerdictRequest) (idem.Reply, error)
	Settle(ctx context.Context, a principal.Actor, req matters.SettleRequest) (idem.Reply, error)
	Dispute(ctx context.Context, a principal.Actor, req matters.DisputeRequest) (idem.Reply, error)
	Tick(ctx context.Context, a principal.Actor, req matters.TickRequest) (idem.Reply, error)
	RegisterSolver(ctx context.Context, a principal.Actor, req matters.RegisterSolverRequest) (idem.Reply, error)
	SolverProfile(ctx context.Context, a principal.Actor, id string) (matters.Profile, error)
	OpenQuorum(ctx context.Context, a principal.Actor, req matters.QuorumOpenRequest) (idem.Reply, error)
	AssignSeat(ctx context.Context, a principal.Actor, req matters.SeatRequest) (idem.Reply, error)
	AcceptSeat(ctx context.Context, a principal.Actor, req matters.AcceptRequest) (idem.Reply, error)
	Commit(ctx context.Context, a principal.Actor, req matters.CommitRequest) (idem.Reply, error)
	Reveal(ctx context.Context, a principal.Actor, req matters.RevealRequest) (idem.Reply, error)
	Appeal(ctx context.Context, a principal.Actor, req matters.AppealRequest) (idem.Reply, error)
	Observe(ctx context.Context, a principal.Actor, req matters.ObserveRequest) (idem.Reply, error)
	List(ctx context.Context, a principal.Actor, all bool) ([]matters.View, error)
	Get(ctx context.Context, a principal.Actor, id string) (matters.View, error)
	Receipts(ctx context.Context, a principal.Actor, id string) ([]receipt.Receipt, error)
	Mode() principal.Mode
}

// Checkers is the checker registry's uploads (*replays.Library).
type Checkers interface {
	Put(ctx context.Context, kind string, module []byte, ik idem.Request) (idem.Reply, error)
	Info(ctx context.Context, sum string) (replays.Info, error)
}

// Replays runs a batch of replays (*replays.Service).
type Replays interface {
	Replay(ctx context.Context, req replays.Request) (replays.Response, error)
	ReplayQueued(ctx context.Context, q store.Queue, batch string, req replays.Request) (replays.Response, error)
}

// Identities keeps the registered keys, API keys and nonces a signed
// request is checked against (*principal.Registry): the server's one
// registry.
type Identities interface {
	Now() time.Time
	Principal(ctx context.Context, keyID string) (principal.Principal, error)
	APIKeyOf(ctx context.Context, token string) (principal.APIKey, bool, error)
	UseNonce(ctx context.Context, keyID, nonce string, created time.Time) error
}

// Replies looks up a stored reply before a mutation runs
// (idem.Keeper): the one replay pre-check of every service.
type Replies interface {
	Replay(ctx context.Context, r idem.Request) (*idem.Reply, error)
}
