package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/matters"
)

// The exchange's routes, under /api/v1/economic/matters/exchange and
// signed as the judgment routes are (docs/exchange.md).
const (
	solverFields  = "solver_id, solver_kind, lineage, qualifications, conflicts, idempotency_key"
	qOpenFields   = openFields + ", quorum"
	seatFields    = "matter_id, solver_id, idempotency_key"
	commitFields  = "matter_id, solver_id, commitment, idempotency_key"
	revealFields  = "matter_id, solver_id, action_digest, verdict, salt, idempotency_key"
	appealFields  = "matter_id, reason, fee_usdc, action_digest, idempotency_key"
	observeFields = "matter_id, outcome, idempotency_key"
)

// exchangeRoutes registers the exchange's routes on the judgment group.
func (s *server) exchangeRoutes(g fiber.Router) {
	m := s.cfg.Matters
	g.Post("/exchange/solvers", matterMutation(s, solverFields, func(r *matters.RegisterSolverRequest) *string { return &r.IdempotencyKey }, m.RegisterSolver))
	g.Get("/exchange/solvers/:id", s.solverProfile)
	g.Post("/exchange/open", matterMutation(s, qOpenFields, func(r *matters.QuorumOpenRequest) *string { return &r.IdempotencyKey }, m.OpenQuorum))
	g.Post("/exchange/assign", matterMutation(s, seatFields, func(r *matters.SeatRequest) *string { return &r.IdempotencyKey }, m.AssignSeat))
	g.Post("/exchange/accept", matterMutation(s, acceptFields, func(r *matters.AcceptRequest) *string { return &r.IdempotencyKey }, m.AcceptSeat))
	g.Post("/exchange/commit", matterMutation(s, commitFields, func(r *matters.CommitRequest) *string { return &r.IdempotencyKey }, m.Commit))
	g.Post("/exchange/reveal", matterMutation(s, revealFields, func(r *matters.RevealRequest) *string { return &r.IdempotencyKey }, m.Reveal))
	g.Post("/exchange/appeal", matterMutation(s, appealFields, func(r *matters.AppealRequest) *string { return &r.IdempotencyKey }, m.Appeal))
	g.Post("/exchange/observe", matterMutation(s, observeFields, func(r *matters.ObserveRequest) *string { return &r.IdempotencyKey }, m.Observe))
}

func (s *server) solverProfile(c *fiber.Ctx) error {
	p, err := s.cfg.Matters.SolverProfile(c.UserContext(), actorOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(p)
}
