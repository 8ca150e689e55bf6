package api

import (
	"crypto/subtle"
	"strings"
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
	g := app.Group("/market")
	g.Get("/listings", func(c *fiber.Ctx) error { // search_listings
		r, err := m.Search(c.UserContext(), market.SearchRequest{Query: c.Query("query"), QueryFingerprint: c.Query("query_fingerprint"), Limit: c.QueryInt("limit")})
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	g.Post("/search", func(c *fiber.Ctx) error { // search_listings
		var req market.SearchRequest
		if _, err := decodeBody(c, s, &req, "query, query_fingerprint, limit"); err != nil {
			return err
		}
		r, err := m.Search(c.UserContext(), req)
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	g.Get("/listings/:id", func(c *fiber.Ctx) error { // get_listing
		v, err := m.Get(c.UserContext(), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(v)
	})
	g.Post("/listings", func(c *fiber.Ctx) error { // publish_listing
		var req market.PublishRequest
		id, err := decodeBody(c, s, &req, "agent, title, problem_statement, artifact, encoding, artifact_type, price_usd, est_recompute_cost_usd, license_terms, checker, verification_level")
		if err != nil {
			return err
		}
		r, err := m.Publish(c.UserContext(), req, id)
		return reply(c, r, err)
	})
	g.Post("/listings/:id/purchase", func(c *fiber.Ctx) error { // purchase
		var req market.PurchaseRequest
		id, err := decodeBody(c, s, &req, "agent, purpose")
		if err != nil {
			return err
		}
		r, err := m.Buy(c.UserContext(), c.Params("id"), req, id)
		return reply(c, r, err)
	})
	g.Post("/listings/:id/deactivate", func(c *fiber.Ctx) error { // deactivate_listing
		var req market.DeactivateRequest
		id, err := decodeBody(c, s, &req, "agent")
		if err != nil {
			return err
		}
		r, err := m.Deactivate(c.UserContext(), c.Params("id"), req, id)
		return reply(c, r, err)
	})
	g.Post("/listings/:id/challenge", func(c *fiber.Ctx) error { // challenge_listing
		var req market.ChallengeRequest
		id, err := decodeBody(c, s, &req, "agent, evidence, reason")
		if err != nil {
			return err
		}
		r, err := m.Challenge(c.UserContext(), c.Params("id"), req, id)
		return reply(c, r, err)
	})
	g.Post("/listings/:id/replay", func(c *fiber.Ctx) error {
		var req market.ReplayRequest
		if _, err := decodeBody(c, s, &req, "agent"); err != nil {
			return err
		}
		r, err := m.Replay(c.UserContext(), c.Params("id"), req)
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	g.Get("/purchases/:id", func(c *fiber.Ctx) error {
		p, err := m.PurchaseOf(c.UserContext(), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(p)
	})
	g.Get("/challenges/:id", func(c *fiber.Ctx) error {
		ch, err := m.ChallengeOf(c.UserContext(), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(ch)
	})
	g.Post("/challenges/:id/resolve", func(c *fiber.Ctx) error { // resolve_challenge
		if err := s.operator(c); err != nil {
			return err
		}
		var req market.ResolveRequest
		id, err := decodeBody(c, s, &req, "verdict, reason")
		if err != nil {
			return err
		}
		r, err := m.Resolve(c.UserContext(), c.Params("id"), req, id)
		return reply(c, r, err)
	})
	g.Post("/tick", func(c *fiber.Ctx) error {
		if err := s.operator(c); err != nil {
			return err
		}
		var req market.TickRequest
		if _, err := decodeBody(c, s, &req, "samples"); err != nil {
			return err
		}
		t, err := m.Tick(c.UserContext(), req)
		if err != nil {
			return err
		}
		return c.JSON(t)
	})
	g.Get("/agents/:agent", func(c *fiber.Ctx) error { // agent_profile
		p, err := m.AgentProfile(c.UserContext(), c.Params("agent"))
		if err != nil {
			return err
		}
		return c.JSON(p)
	})
	g.Get("/stats", func(c *fiber.Ctx) error { // marketplace_stats
		st, err := m.Stats(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(st)
	})
	g.Get("/wallets/:agent", func(c *fiber.Ctx) error {
		w, err := m.WalletOf(c.UserContext(), c.Params("agent"))
		if err != nil {
			return err
		}
		return c.JSON(w)
	})
	g.Post("/wallets/:agent/deposit", func(c *fiber.Ctx) error {
		var req market.AmountRequest
		id, err := decodeBody(c, s, &req, "amount_usd")
		if err != nil {
			return err
		}
		r, err := m.Deposit(c.UserContext(), c.Params("agent"), req, id)
		return reply(c, r, err)
	})
	g.Post("/wallets/:agent/withdraw", func(c *fiber.Ctx) error {
		var req market.AmountRequest
		id, err := decodeBody(c, s, &req, "amount_usd")
		if err != nil {
			return err
		}
		r, err := m.Withdraw(c.UserContext(), c.Params("agent"), req, id)
		return reply(c, r, err)
	})
	g.Get("/fingerprint", func(c *fiber.Ctx) error {
		text := c.Query("text")
		return c.JSON(fiber.Map{"fingerprint": market.Fingerprint(text), "tokens": market.Tokens(text), "constraints": market.Constraints(text)})
	})
	if advance := s.cfg.AdvanceMarketClock; advance != nil {
		g.Post("/clock", func(c *fiber.Ctx) error { // tests only: ASSAY_TEST_CLOCK=1
			if err := s.operator(c); err != nil {
				return err
			}
			var req struct {
				Advance string `json:"advance"`
			}
			if _, err := decodeBody(c, s, &req, "advance"); err != nil {
				return err
			}
			d, err := time.ParseDuration(req.Advance)
			if err != nil || d < 0 {
				return fault.New(fault.Invalid, "invalid_duration", "advance is a non-negative Go duration, e.g. 2h")
			}
			advance(d)
			return c.JSON(fiber.Map{"advanced": d.String()})
		})
	}
	registerMCP(app, s) // the same operations as the seed's MCP tools
}

// decodeBody reads a bounded, strict JSON body into v and the request's
// idempotency key in the market's terms.
func decodeBody(c *fiber.Ctx, s *server, v any, fields string) (idem.Idem, error) {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return idem.Idem{}, err
	}
	if err := decode(b, v, fields); err != nil {
		return idem.Idem{}, err
	}
	return readIdem(c, b)
}

// operator checks the operator's bearer token.
func (s *server) operator(c *fiber.Ctx) error {
	if s.cfg.OperatorToken == "" {
		return fault.New(fault.Forbidden, "operator_disabled", "operator routes are disabled on this server: start it with ASSAY_OPERATOR_TOKEN set")
	}
	token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="assay-operator"`)
		return fault.New(fault.Unauthorized, "unauthorized", "this route takes the operator's bearer token: Authorization: Bearer <token>")
	}
	return nil
}
