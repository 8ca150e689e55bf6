package api

import (
	"crypto/subtle"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
)

// courtRoutes registers the escrow court's routes: contracts and their
// mutations, agents' receipts and reputation, activity, and the ledger.
func (s *server) courtRoutes(app *fiber.App) {
	app.Get("/activity", s.activity)

	app.Post("/contracts", s.create)
	app.Get("/contracts/:id", s.contract)
	app.Post("/contracts/:id/fund", s.fund)
	app.Post("/contracts/:id/deliver", s.deliver)
	app.Post("/contracts/:id/accept", s.accept)
	app.Post("/contracts/:id/dispute", s.dispute)
	app.Post("/contracts/:id/resolve", s.resolve)

	app.Get("/agents/:did/receipts", s.agentReceipts)
	app.Get("/agents/:did/reputation", s.reputation)

	app.Get("/accounts/:id", s.account)
	app.Get("/ledger", s.ledger)
}

func (s *server) activity(c *fiber.Ctx) error {
	limit, err := queryLimit(c, 50)
	if err != nil {
		return err
	}
	a, err := s.cfg.Court.Activity(c.UserContext(), limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"count": a.Count, "total_seq": a.TotalSeq, "events": a.Events,
		"court_public_key": s.cfg.Keys.Current().PublicKey})
}

const (
	createFields  = "buyer, seller, price, currency, acceptance, deadline_tick, deliver_by, review_window"
	deliverFields = "deliverable, evidence"
	disputeFields = "reason"
	resolveFields = "verdict, reason"
	emptyFields   = "no fields: send {}"
)

func (s *server) create(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.CreateRequest
	if err := decode(b, &req, createFields); err != nil {
		return err
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Create(c.UserContext(), req, id)
	return reply(c, r, err)
}

func (s *server) contract(c *fiber.Ctx) error {
	ct, err := s.cfg.Court.Get(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(ct)
}

// empty handles a POST whose body must be {} (fund, accept).
func (s *server) empty(c *fiber.Ctx, do func(id string, ik idem.Idem) (idem.Reply, error)) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req struct{}
	if err := decode(b, &req, emptyFields); err != nil {
		return err
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := do(c.Params("id"), id)
	return reply(c, r, err)
}

func (s *server) fund(c *fiber.Ctx) error {
	return s.empty(c, func(id string, ik idem.Idem) (idem.Reply, error) {
		return s.cfg.Court.Fund(c.UserContext(), id, ik)
	})
}

func (s *server) accept(c *fiber.Ctx) error {
	return s.empty(c, func(id string, ik idem.Idem) (idem.Reply, error) {
		return s.cfg.Court.Accept(c.UserContext(), id, ik)
	})
}

func (s *server) deliver(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.DeliverRequest
	if err := decode(b, &req, deliverFields); err != nil {
		return err
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Deliver(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) dispute(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.DisputeRequest
	if err := decode(b, &req, disputeFields); err != nil {
		return err
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Dispute(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) resolve(c *fiber.Ctx) error {
	if s.cfg.OperatorToken == "" {
		return fault.New(fault.Forbidden, "operator_disabled", "operator resolution is disabled on this server: start it with ASSAY_OPERATOR_TOKEN set")
	}
	auth := c.Get(fiber.HeaderAuthorization)
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="assay-operator"`)
		return fault.New(fault.Unauthorized, "unauthorized", "resolving a dispute takes the operator's bearer token: Authorization: Bearer <token>")
	}
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.ResolveRequest
	if err := decode(b, &req, resolveFields); err != nil {
		return err
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Resolve(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) agentReceipts(c *fiber.Ctx) error {
	limit, err := queryLimit(c, 100)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.AgentReceipts(c.UserContext(), c.Params("did"), limit)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

func (s *server) reputation(c *fiber.Ctx) error {
	r, err := s.cfg.Court.Reputation(c.UserContext(), c.Params("did"))
	if err != nil {
		return err
	}
	return c.JSON(r)
}

func (s *server) account(c *fiber.Ctx) error {
	a, err := s.cfg.Court.Account(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(a)
}

func (s *server) ledger(c *fiber.Ctx) error {
	a, err := s.cfg.Court.Audit(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(a)
}
