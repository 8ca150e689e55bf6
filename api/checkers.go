package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
)

// putChecker uploads a checker to the checker registry: its bytes as the
// body, its kind named by the Content-Type.
func putChecker(s *server, c *call) (answer, error) {
	ct, _, _ := strings.Cut(c.header(fiber.HeaderContentType), ";")
	var kind string
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/wasm":
		kind = replays.KindWasm
	case "text/x-python":
		kind = replays.KindPython
	default:
		return answer{}, fault.New(fault.Invalid, codeUnsupportedCheckerKind, "send the checker's bytes with Content-Type: application/wasm, or Python source with text/x-python, not %q", ct)
	}
	if s.cfg.Checkers == nil {
		return answer{}, fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server keeps no checkers")
	}
	r, err := s.cfg.Checkers.Put(c.ctx, kind, c.body, c.ik)
	return answer{reply: &r}, err
}

func (s *server) checker(c *call) (replays.Info, error) {
	if s.cfg.Checkers == nil {
		return replays.Info{}, fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server keeps no checkers")
	}
	return s.cfg.Checkers.Info(c.ctx, c.param("sha256"))
}
