package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
)

// courtRoutes registers the escrow court's routes: contracts and their
// mutations, agents' receipts and reputation, activity, and the ledger.
func (s *server) courtRoutes(app *fiber.App) {
	r := s.router(app, "")
	r.add("GET", "/activity", s.activity)
	app.Use("/contracts/", s.courtAuth) // auth.go: the parties, when the court is signed

	r.add("POST", "/contracts", jsonMutation(s, s.create))
	r.add("GET", "/contracts/{id}", s.contract)
	r.add("POST", "/contracts/{id}/fund", jsonMutation(s, s.fund))
	r.add("POST", "/contracts/{id}/deliver", jsonMutation(s, s.deliver))
	r.add("POST", "/contracts/{id}/accept", jsonMutation(s, s.accept))
	r.add("POST", "/contracts/{id}/dispute", jsonMutation(s, s.dispute))
	r.add("POST", "/contracts/{id}/resolve", s.operator(courtOperator), jsonMutation(s, s.resolve))

	r.add("GET", "/agents/{did}/receipts", s.agentReceipts)
	r.add("GET", "/agents/{did}/reputation", s.reputation)

	r.add("GET", "/accounts/{id}", s.account)
	r.add("GET", "/ledger", s.ledger)
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

func (s *server) create(c *fiber.Ctx, req escrow.CreateRequest, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Create(c.UserContext(), req, id)
}

func (s *server) contract(c *fiber.Ctx) error {
	ct, err := s.cfg.Court.Get(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(ct)
}

// fund and accept take the body {}.
func (s *server) fund(c *fiber.Ctx, _ struct{}, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Fund(c.UserContext(), c.Params("id"), id)
}

func (s *server) accept(c *fiber.Ctx, _ struct{}, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Accept(c.UserContext(), c.Params("id"), id)
}

func (s *server) deliver(c *fiber.Ctx, req escrow.DeliverRequest, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Deliver(c.UserContext(), c.Params("id"), req, id)
}

func (s *server) dispute(c *fiber.Ctx, req escrow.DisputeRequest, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Dispute(c.UserContext(), c.Params("id"), req, id)
}

// resolve is the operator's decision on an escalated dispute (behind
// s.operator).
func (s *server) resolve(c *fiber.Ctx, req escrow.ResolveRequest, id idem.Idem) (idem.Reply, error) {
	return s.cfg.Court.Resolve(c.UserContext(), c.Params("id"), req, id)
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
