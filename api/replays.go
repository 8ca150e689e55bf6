package api

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/replays"
)

// replays is POST /replays: one checker of the court's, many artifacts; with
// ?spread=true, run by every node's replay worker through the queue.
func (s *server) replays(c *fiber.Ctx, _ principal.Actor) error {
	b, err := body(c, replays.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req replays.Request
	if err := decode(b, &req, replays.RequestFields); err != nil {
		return err
	}
	svc := s.cfg.Replays
	if svc == nil {
		return fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	}
	var res replays.Response
	if c.QueryBool("spread") && s.cfg.ReplayQueue != nil {
		// Every node sharing the store runs a part (replays.Worker).
		var id [12]byte
		rand.Read(id[:])
		res, err = svc.ReplayQueued(c.UserContext(), s.cfg.ReplayQueue, "api-"+hex.EncodeToString(id[:]), req)
	} else {
		res, err = svc.Replay(c.UserContext(), req)
	}
	if err != nil {
		return err
	}
	// A batch's answer is bounded whichever nodes ran it.
	res.Trim()
	return c.JSON(res)
}
