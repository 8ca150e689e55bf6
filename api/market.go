package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
)

// The fields of the market's bodies, for refusals (resolveFields is the
// court's: the same two).
const (
	publishFields     = "agent, title, problem_statement, artifact, encoding, artifact_type, price_usd, est_recompute_cost_usd, license_terms, checker, verification_level"
	purchaseFields    = "agent, purpose"
	challengeFields   = "agent, evidence, reason"
	agentFields       = "agent"
	amountFields      = "amount_usd"
	searchFields      = "query, query_fingerprint, limit"
	tickSamplesFields = "samples"
	clockFields       = "advance"
)

// registerMarket serves the artifact market under /market when
// Config.Market is set. Each route is one of the seed's tools, or a
// wallet operation.
func registerMarket(app *fiber.App, s *server) {
	m := s.cfg.Market
	if m == nil {
		return
	}
	g := app.Group("/market", s.authenticated(s.cfg.MarketAuth, marketRealm))
	op := s.operator(marketOperator)
	auth := s.cfg.MarketAuth
	g.Get("/listings", func(c *fiber.Ctx) error { // search_listings
		limit, err := queryLimit(c, 0)
		if err != nil {
			return err
		}
		r, err := m.Search(c.UserContext(), market.SearchRequest{Query: c.Query("query"), QueryFingerprint: c.Query("query_fingerprint"), Limit: limit})
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	g.Post("/search", bodyView(s, searchFields, func(c *fiber.Ctx, req market.SearchRequest) (market.Results, error) { // search_listings
		return m.Search(c.UserContext(), req)
	}))
	g.Get("/listings/:id", view(func(c *fiber.Ctx) (market.View, error) { // get_listing
		return m.Get(c.UserContext(), c.Params("id"))
	}))
	g.Post("/listings", jsonMutation(s, publishFields, func(c *fiber.Ctx, req market.PublishRequest, id idem.Idem) (market.Reply, error) { // publish_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Publish(c.UserContext(), req, id)
	}))
	g.Post("/listings/:id/purchase", paidMutation(s, purchaseFields, func(c *fiber.Ctx, req market.PurchaseRequest, id idem.Idem) (market.Reply, error) { // purchase
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		req.Pay = payment(c)
		return m.Buy(c.UserContext(), c.Params("id"), req, id)
	}))
	g.Post("/listings/:id/deactivate", jsonMutation(s, agentFields, func(c *fiber.Ctx, req market.DeactivateRequest, id idem.Idem) (market.Reply, error) { // deactivate_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Deactivate(c.UserContext(), c.Params("id"), req, id)
	}))
	g.Post("/listings/:id/challenge", jsonMutation(s, challengeFields, func(c *fiber.Ctx, req market.ChallengeRequest, id idem.Idem) (market.Reply, error) { // challenge_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Challenge(c.UserContext(), c.Params("id"), req, id)
	}))
	g.Post("/listings/:id/replay", bodyView(s, agentFields, func(c *fiber.Ctx, req market.ReplayRequest) (market.Replayed, error) {
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Replayed{}, err
		}
		return m.Replay(c.UserContext(), c.Params("id"), req)
	}))
	g.Get("/purchases/:id", view(func(c *fiber.Ctx) (*market.Purchase, error) {
		return m.PurchaseOf(c.UserContext(), c.Params("id"))
	}))
	g.Get("/challenges/:id", view(func(c *fiber.Ctx) (*market.Challenge, error) {
		return m.ChallengeOf(c.UserContext(), c.Params("id"))
	}))
	g.Post("/challenges/:id/resolve", op, jsonMutation(s, resolveFields, func(c *fiber.Ctx, req market.ResolveRequest, id idem.Idem) (market.Reply, error) { // resolve_challenge
		return m.Resolve(c.UserContext(), c.Params("id"), req, id)
	}))
	g.Post("/tick", op, bodyView(s, tickSamplesFields, func(c *fiber.Ctx, req market.TickRequest) (market.Ticked, error) {
		return m.Tick(c.UserContext(), req)
	}))
	g.Get("/agents/:agent", view(func(c *fiber.Ctx) (market.Profile, error) { // agent_profile
		return m.AgentProfile(c.UserContext(), c.Params("agent"))
	}))
	g.Get("/stats", view(func(c *fiber.Ctx) (market.Stats, error) { // marketplace_stats
		return m.Stats(c.UserContext())
	}))
	g.Get("/wallets/:agent", view(func(c *fiber.Ctx) (market.Wallet, error) {
		return m.WalletOf(c.UserContext(), c.Params("agent"))
	}))
	g.Post("/wallets/:agent/deposit", paidMutation(s, amountFields, func(c *fiber.Ctx, req market.AmountRequest, id idem.Idem) (market.Reply, error) {
		if err := s.depositsFor(c, auth, c.Params("agent")); err != nil {
			return market.Reply{}, err
		}
		req.Pay = payment(c)
		return m.Deposit(c.UserContext(), c.Params("agent"), req, id)
	}))
	g.Post("/wallets/:agent/withdraw", jsonMutation(s, amountFields, func(c *fiber.Ctx, req market.AmountRequest, id idem.Idem) (market.Reply, error) {
		if err := marketActsFor(c, auth, c.Params("agent")); err != nil {
			return market.Reply{}, err
		}
		return m.Withdraw(c.UserContext(), c.Params("agent"), req, id)
	}))
	g.Get("/fingerprint", func(c *fiber.Ctx) error {
		text := c.Query("text")
		return c.JSON(fiber.Map{"fingerprint": market.Fingerprint(text), "tokens": market.Tokens(text), "constraints": market.Constraints(text)})
	})
	if advance := s.cfg.AdvanceMarketClock; advance != nil {
		g.Post("/clock", op, func(c *fiber.Ctx) error { // tests only: ASSAY_TEST_CLOCK=1
			var req struct {
				Advance string `json:"advance"`
			}
			if _, err := decodeBody(c, s, &req, clockFields); err != nil {
				return err
			}
			d, err := time.ParseDuration(req.Advance)
			if err != nil || d < 0 {
				return fault.New(fault.Invalid, codeInvalidDuration, "advance is a non-negative Go duration, e.g. 2h")
			}
			advance(d)
			return c.JSON(fiber.Map{"advanced": d.String()})
		})
	}
	registerMCP(app, s) // the same operations as the seed's MCP tools
}
