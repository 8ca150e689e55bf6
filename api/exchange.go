package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/matters"
)

// The exchange's routes, under /api/v1/economic/matters/exchange and
// signed as the judgment routes are (docs/exchange.md).
// exchangeRoutes registers the exchange's routes on the judgment group.
func (s *server) exchangeRoutes(reg router) {
	m := s.cfg.Matters
	reg.add("POST", "/exchange/solvers", matterMutation(s, fieldsOf[matters.RegisterSolverRequest](), func(r *matters.RegisterSolverRequest) *string { return &r.IdempotencyKey }, m.RegisterSolver))
	reg.add("GET", "/exchange/solvers/{id}", s.solverProfile)
	reg.add("POST", "/exchange/open", matterMutation(s, fieldsOf[matters.QuorumOpenRequest](), func(r *matters.QuorumOpenRequest) *string { return &r.IdempotencyKey }, m.OpenQuorum))
	reg.add("POST", "/exchange/assign", matterMutation(s, fieldsOf[matters.SeatRequest](), func(r *matters.SeatRequest) *string { return &r.IdempotencyKey }, m.AssignSeat))
	reg.add("POST", "/exchange/accept", matterMutation(s, fieldsOf[matters.AcceptRequest](), func(r *matters.AcceptRequest) *string { return &r.IdempotencyKey }, m.AcceptSeat))
	reg.add("POST", "/exchange/commit", matterMutation(s, fieldsOf[matters.CommitRequest](), func(r *matters.CommitRequest) *string { return &r.IdempotencyKey }, m.Commit))
	reg.add("POST", "/exchange/reveal", matterMutation(s, fieldsOf[matters.RevealRequest](), func(r *matters.RevealRequest) *string { return &r.IdempotencyKey }, m.Reveal))
	reg.add("POST", "/exchange/appeal", matterMutation(s, fieldsOf[matters.AppealRequest](), func(r *matters.AppealRequest) *string { return &r.IdempotencyKey }, m.Appeal))
	reg.add("POST", "/exchange/observe", matterMutation(s, fieldsOf[matters.ObserveRequest](), func(r *matters.ObserveRequest) *string { return &r.IdempotencyKey }, m.Observe))
}

func (s *server) solverProfile(c *fiber.Ctx) error {
	p, err := s.cfg.Matters.SolverProfile(c.UserContext(), actorOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(p)
}
