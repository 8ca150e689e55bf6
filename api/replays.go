package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/replays"
)

func init() {
	hints["/replays"] = usage{
		Detail: "replay one stored checker on many artifacts, in parallel; outcomes are memoised (no_memo: true runs every one)",
		Method: "POST", Path: "/replays",
		Body: map[string]any{"checker": map[string]any{"sha256": "<sha256 from POST /checkers>", "fuel": 500000000, "memory_mib": 64},
			"artifacts": []any{map[string]any{"rows": 120}, "a string artifact is given as its contents"}},
		Returns: `{"count", "memo_hits", "outcomes": [one outcome per artifact, in order]}`,
	}
}

// replays is POST /replays: one checker of the court's, many artifacts.
func (s *server) replays(c *fiber.Ctx) error {
	b, err := body(c, replays.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req replays.Request
	if err := decode(b, &req, replays.RequestFields); err != nil {
		return err
	}
	res, err := replays.NewService(s.cfg.Court.Runner()).Replay(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.JSON(res)
}
