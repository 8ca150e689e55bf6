package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/receipt"
)

// The escrow court's operations: contracts and their mutations, agents'
// receipts and reputation, activity, and the ledger. The route table
// (table.go) names each.

func (s *server) activity(c *call) (activityOut, error) {
	limit, err := limitOf(c.query, 50)
	if err != nil {
		return activityOut{}, err
	}
	a, err := s.cfg.Court.Activity(c.ctx, limit)
	if err != nil {
		return activityOut{}, err
	}
	return activityOut{Activity: a, CourtPublicKey: s.cfg.Keys.Current().PublicKey}, nil
}

func (s *server) create(c *call, req escrow.CreateRequest) (idem.Reply, error) {
	return s.cfg.Court.Create(c.ctx, req, c.ik)
}

func (s *server) contract(c *call) (*escrow.Contract, error) {
	return s.cfg.Court.Get(c.ctx, c.param("id"))
}

// fund and accept take the body {}.
func (s *server) fund(c *call, _ struct{}) (idem.Reply, error) {
	return s.cfg.Court.Fund(c.ctx, c.actor, c.param("id"), c.ik)
}

func (s *server) accept(c *call, _ struct{}) (idem.Reply, error) {
	return s.cfg.Court.Accept(c.ctx, c.actor, c.param("id"), c.ik)
}

func (s *server) deliver(c *call, req escrow.DeliverRequest) (idem.Reply, error) {
	return s.cfg.Court.Deliver(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) dispute(c *call, req escrow.DisputeRequest) (idem.Reply, error) {
	return s.cfg.Court.Dispute(c.ctx, c.actor, c.param("id"), req, c.ik)
}

// resolve is the operator's decision on an escalated dispute.
func (s *server) resolve(c *call, req escrow.ResolveRequest) (idem.Reply, error) {
	return s.cfg.Court.Resolve(c.ctx, c.actor, c.param("id"), req, c.ik)
}

func (s *server) agentReceipts(c *call) (receipt.AgentReceipts, error) {
	limit, err := limitOf(c.query, 100)
	if err != nil {
		return receipt.AgentReceipts{}, err
	}
	return s.cfg.Court.AgentReceipts(c.ctx, c.param("did"), limit)
}

func (s *server) reputation(c *call) (escrow.Reputation, error) {
	return s.cfg.Court.Reputation(c.ctx, c.param("did"))
}

func (s *server) account(c *call) (ledger.Account, error) {
	return s.cfg.Court.Account(c.ctx, c.param("id"))
}

func (s *server) ledger(c *call) (ledger.Audit, error) { return s.cfg.Court.Audit(c.ctx) }

// fiberQuery reads a fiber request's query parameters.
func fiberQuery(c *fiber.Ctx) func(string) string { return func(k string) string { return c.Query(k) } }
