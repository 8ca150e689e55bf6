package api

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
)

// replays is POST /replays: one checker of the court's, many artifacts;
// with ?spread=true (spread over MCP), run by every node's replay worker
// through the queue.
func (s *server) replays(c *call) (answer, error) {
	var req replays.Request
	if err := decode(c.body, &req, replays.RequestFields); err != nil {
		return answer{}, err
	}
	svc := s.cfg.Replays
	if svc == nil {
		return answer{}, fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	}
	var res replays.Response
	var err error
	if spread, _ := strconv.ParseBool(c.query("spread")); spread && s.cfg.ReplayQueue != nil {
		// Every node sharing the store runs a part (replays.Worker).
		var id [12]byte
		rand.Read(id[:])
		res, err = svc.ReplayQueued(c.ctx, s.cfg.ReplayQueue, "api-"+hex.EncodeToString(id[:]), req)
	} else {
		res, err = svc.Replay(c.ctx, req)
	}
	if err != nil {
		return answer{}, err
	}
	// A batch's answer is bounded whichever nodes ran it.
	res.Trim()
	return answer{value: res}, nil
}
