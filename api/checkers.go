package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
)

// checkerRoutes registers checker upload and lookup, and batch replays.
func (s *server) checkerRoutes(app *fiber.App) {
	r := s.router(app, "")
	r.add("POST", "/checkers", s.putChecker)
	r.add("GET", "/checkers/{sha256}", s.checker)
	r.add("POST", "/replays", s.replays)
}

func (s *server) putChecker(c *fiber.Ctx) error {
	b, err := body(c, escrow.MaxCheckerBytes)
	if err != nil {
		return err
	}
	ct, _, _ := strings.Cut(c.Get(fiber.HeaderContentType), ";")
	var kind string
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/wasm":
		kind = escrow.CheckerWasm
	case "text/x-python":
		kind = escrow.CheckerPython
	default:
		return fault.New(fault.Invalid, codeUnsupportedCheckerKind, "send the checker's bytes with Content-Type: application/wasm, or Python source with text/x-python, not %q", ct)
	}
	id, err := readIdem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.PutChecker(c.UserContext(), kind, b, id)
	return reply(c, r, err)
}

func (s *server) checker(c *fiber.Ctx) error {
	info, err := s.cfg.Court.Checker(c.UserContext(), c.Params("sha256"))
	if err != nil {
		return err
	}
	return c.JSON(info)
}
