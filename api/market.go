package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
)

// registerMarket serves the artifact market under /market when
// Config.Market is set. Each route is one of the seed's tools, or a
// wallet operation.
func registerMarket(app *fiber.App, s *server) {
	m := s.cfg.Market
	if m == nil {
		return
	}
	g := s.router(app.Group("/market", s.authenticated(s.cfg.MarketAuth, marketRealm)), "/market")
	op := s.operator(marketOperator)
	auth := s.cfg.MarketAuth
	g.add("GET", "/listings", func(c *fiber.Ctx) error { // search_listings
		limit, err := queryLimit(c, 0)
		if err != nil {
			return err
		}
		r, err := m.Search(c.UserContext(), market.SearchRequest{Query: c.Query("query"), QueryFingerprint: c.Query("query_fingerprint"), Limit: limit,
			Cursor: c.Query("cursor")})
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	g.add("POST", "/search", bodyView(s, func(c *fiber.Ctx, req market.SearchRequest) (market.Results, error) { // search_listings
		return m.Search(c.UserContext(), req)
	}))
	g.add("GET", "/listings/{id}", view(func(c *fiber.Ctx) (market.View, error) { // get_listing
		return m.Get(c.UserContext(), c.Params("id"))
	}))
	g.add("POST", "/listings", jsonMutation(s, func(c *fiber.Ctx, req market.PublishRequest, id idem.Idem) (market.Reply, error) { // publish_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Publish(c.UserContext(), req, id)
	}))
	g.add("POST", "/listings/{id}/purchase", paidMutation(s, func(c *fiber.Ctx, req market.PurchaseRequest, id idem.Idem) (market.Reply, error) { // purchase
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		req.Pay = payment(c)
		return m.Buy(c.UserContext(), c.Params("id"), req, id)
	}))
	g.add("POST", "/listings/{id}/deactivate", jsonMutation(s, func(c *fiber.Ctx, req market.DeactivateRequest, id idem.Idem) (market.Reply, error) { // deactivate_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Deactivate(c.UserContext(), c.Params("id"), req, id)
	}))
	g.add("POST", "/listings/{id}/challenge", jsonMutation(s, func(c *fiber.Ctx, req market.ChallengeRequest, id idem.Idem) (market.Reply, error) { // challenge_listing
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Reply{}, err
		}
		return m.Challenge(c.UserContext(), c.Params("id"), req, id)
	}))
	g.add("POST", "/listings/{id}/replay", bodyView(s, func(c *fiber.Ctx, req market.ReplayRequest) (market.Replayed, error) {
		if err := marketActsFor(c, auth, req.Agent); err != nil {
			return market.Replayed{}, err
		}
		return m.Replay(c.UserContext(), c.Params("id"), req)
	}))
	g.add("GET", "/purchases/{id}", view(func(c *fiber.Ctx) (*market.Purchase, error) {
		return m.PurchaseOf(c.UserContext(), c.Params("id"))
	}))
	g.add("GET", "/challenges/{id}", view(func(c *fiber.Ctx) (*market.Challenge, error) {
		return m.ChallengeOf(c.UserContext(), c.Params("id"))
	}))
	g.add("POST", "/challenges/{id}/resolve", op, jsonMutation(s, func(c *fiber.Ctx, req market.ResolveRequest, id idem.Idem) (market.Reply, error) { // resolve_challenge
		return m.Resolve(c.UserContext(), c.Params("id"), req, id)
	}))
	g.add("POST", "/tick", op, bodyView(s, func(c *fiber.Ctx, req market.TickRequest) (market.Ticked, error) {
		return m.Tick(c.UserContext(), req)
	}))
	g.add("GET", "/agents/{agent}", view(func(c *fiber.Ctx) (market.Profile, error) { // agent_profile
		return m.AgentProfile(c.UserContext(), c.Params("agent"))
	}))
	g.add("GET", "/stats", view(func(c *fiber.Ctx) (market.Stats, error) { // marketplace_stats
		return m.Stats(c.UserContext())
	}))
	g.add("GET", "/wallets/{agent}", view(func(c *fiber.Ctx) (market.Wallet, error) {
		return m.WalletOf(c.UserContext(), c.Params("agent"))
	}))
	g.add("POST", "/wallets/{agent}/deposit", paidMutation(s, func(c *fiber.Ctx, req market.AmountRequest, id idem.Idem) (market.Reply, error) {
		if err := s.depositsFor(c, auth, c.Params("agent")); err != nil {
			return market.Reply{}, err
		}
		req.Pay = payment(c)
		return m.Deposit(c.UserContext(), c.Params("agent"), req, id)
	}))
	g.add("POST", "/wallets/{agent}/withdraw", jsonMutation(s, func(c *fiber.Ctx, req market.AmountRequest, id idem.Idem) (market.Reply, error) {
		if err := marketActsFor(c, auth, c.Params("agent")); err != nil {
			return market.Reply{}, err
		}
		return m.Withdraw(c.UserContext(), c.Params("agent"), req, id)
	}))
	g.add("GET", "/fingerprint", func(c *fiber.Ctx) error {
		text := c.Query("text")
		return c.JSON(fiber.Map{"fingerprint": market.Fingerprint(text), "tokens": market.Tokens(text), "constraints": market.Constraints(text)})
	})
	if advance := s.cfg.AdvanceMarketClock; advance != nil {
		g.add("POST", "/clock", op, func(c *fiber.Ctx) error { // tests only: ASSAY_TEST_CLOCK=1
			var req struct {
				Advance string `json:"advance"`
			}
			if _, err := decodeBody(c, s, &req, fieldsOf[clockIn]()); err != nil {
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
	registerMCP(app, s)                   // the same operations as the seed's MCP tools
	s.routes.add(lookup("POST", MCPPath)) // the SDK answers the other methods 405 with Allow
}
