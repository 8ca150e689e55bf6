package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
)

// The artifact market's operations, under /market when Config.Market is
// set: the seed's tools (their MCP names in the route table) and the
// wallets. Who may act as an agent is the market's to decide, from the
// request's Actor.

func (s *server) searchListings(c *call) (market.Results, error) {
	limit, err := limitOf(c.query, 0)
	if err != nil {
		return market.Results{}, err
	}
	return s.cfg.Market.Search(c.ctx, market.SearchRequest{Query: c.query("query"), QueryFingerprint: c.query("query_fingerprint"), Limit: limit,
		Cursor: c.query("cursor")})
}

func (s *server) search(c *call, req market.SearchRequest) (market.Results, error) {
	return s.cfg.Market.Search(c.ctx, req)
}

func (s *server) listing(c *call) (market.View, error) { return s.cfg.Market.Get(c.ctx, c.param("id")) }

func (s *server) publish(c *call, req market.PublishRequest) (idem.Reply, error) {
	return s.cfg.Market.Publish(c.ctx, c.actor, req, c.ik)
}

func (s *server) purchase(c *call, req market.PurchaseRequest) (idem.Reply, error) {
	req.Pay = c.pay
	return s.cfg.Market.Buy(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) deactivate(c *call, req market.DeactivateRequest) (idem.Reply, error) {
	return s.cfg.Market.Deactivate(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) challengeListing(c *call, req market.ChallengeRequest) (idem.Reply, error) {
	return s.cfg.Market.Challenge(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) replayListing(c *call, req market.ReplayRequest) (market.Replayed, error) {
	return s.cfg.Market.Replay(c.ctx, c.actor, c.param("id"), req)
}

func (s *server) purchaseOf(c *call) (*market.Purchase, error) {
	return s.cfg.Market.PurchaseOf(c.ctx, c.param("id"))
}

func (s *server) challengeOf(c *call) (*market.Challenge, error) {
	return s.cfg.Market.ChallengeOf(c.ctx, c.param("id"))
}

func (s *server) resolveChallenge(c *call, req market.ResolveRequest) (idem.Reply, error) {
	return s.cfg.Market.Resolve(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) tick(c *call, req market.TickRequest) (market.Ticked, error) {
	return s.cfg.Market.Tick(c.ctx, req)
}

func (s *server) agentProfile(c *call) (market.Profile, error) {
	return s.cfg.Market.AgentProfile(c.ctx, c.param("agent"))
}

func (s *server) stats(c *call) (market.Stats, error) { return s.cfg.Market.Stats(c.ctx) }

func (s *server) wallet(c *call) (market.Wallet, error) {
	return s.cfg.Market.WalletOf(c.ctx, c.param("agent"))
}

func (s *server) deposit(c *call, req market.AmountRequest) (idem.Reply, error) {
	req.Pay = c.pay
	return s.cfg.Market.Deposit(c.ctx, c.actor, c.param("agent"), req, c.ik)
}

func (s *server) withdraw(c *call, req market.AmountRequest) (idem.Reply, error) {
	return s.cfg.Market.Withdraw(c.ctx, c.actor, c.param("agent"), req, c.ik)
}

func (s *server) fingerprint(c *call) (fingerprintOut, error) {
	text := c.query("text")
	return fingerprintOut{Fingerprint: market.Fingerprint(text), Tokens: market.Tokens(text), Constraints: market.Constraints(text)}, nil
}

// clock moves the market's test clock forward (ASSAY_TEST_CLOCK=1).
func (s *server) clock(c *call, req clockIn) (clockOut, error) {
	d, err := time.ParseDuration(req.Advance)
	if err != nil || d < 0 {
		return clockOut{}, fault.New(fault.Invalid, codeInvalidDuration, "advance is a non-negative Go duration, e.g. 2h")
	}
	s.cfg.AdvanceMarketClock(d)
	return clockOut{Advanced: d.String()}, nil
}

// marketMode, courtMode and mattersMode are how each service
// authenticates, for the documents; open when it does not run.
func (s *server) marketMode() principal.Mode {
	if s.cfg.Market == nil {
		return principal.Open
	}
	return s.cfg.Market.Mode()
}

func (s *server) courtMode() principal.Mode {
	if s.cfg.Court == nil {
		return principal.Open
	}
	return s.cfg.Court.Mode()
}

func (s *server) mattersMode() principal.Mode {
	if s.cfg.Matters == nil {
		return principal.Signed
	}
	return s.cfg.Matters.Mode()
}

// payment is what a request presents to pay: its PAYMENT-SIGNATURE
// header, and the URL it was sent to.
func payment(c *fiber.Ctx) market.Pay {
	return market.Pay{Proof: c.Get(rail.HeaderPaymentSignature), Resource: c.BaseURL() + c.OriginalURL()}
}
