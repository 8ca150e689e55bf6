package api

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
)

// The transparency log's routes: C2SP tlog-tiles under the prefix /log
// (its checkpoint, tiles and entry bundles), the log's keys, and the log's
// word on a receipt beside GET /receipts/{id}.

const (
	svcLog = "log"
	// codeInvalidLog refuses a ?log= that is not true or false.
	codeInvalidLog = "invalid_log"
	// headerLogIndex and headerLogStatus carry, on GET /receipts/{id},
	// the receipt's index in the log and its status there
	// (translog.Inclusion.Status).
	headerLogIndex  = "Assay-Log-Index"
	headerLogStatus = "Assay-Log-Status"
)

// logTileRow is the table's row of every tile path: its {tile} stands for
// the several segments of a C2SP tlog-tiles path, which fiber serves as a
// wildcard.
const logTileRow = "/log/tile/{tile}"

// logRoutes registers the log's routes when the server has a log.
func (s *server) logRoutes(app *fiber.App) {
	if s.cfg.Log == nil {
		return
	}
	r := s.router(app, "")
	r.add("GET", "/log/checkpoint", s.logCheckpoint)
	r.add("GET", "/log/key", s.logKey)
	rt := *lookup("GET", logTileRow)
	app.Get(rt.fiberPath(), s.logTile)
	s.routes.add(&rt)
}

// logCheckpoint serves the published checkpoint, a C2SP signed note, not
// to be cached beyond a second.
func (s *server) logCheckpoint(c *fiber.Ctx) error {
	cp, err := s.cfg.Log.Checkpoint(c.UserContext())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-cache, max-age=1")
	return c.Send(cp)
}

// logTile serves a tile or an entry bundle; both never change, the
// partial ones included (a partial tile's path names its width).
func (s *server) logTile(c *fiber.Ctx) error {
	b, err := s.cfg.Log.Tile(c.UserContext(), "tile/"+c.Params("*"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(b)
}

// logKey serves the log's origin, its key and its witnesses.
func (s *server) logKey(c *fiber.Ctx) error {
	return c.JSON(s.cfg.Log.Key())
}

// withLog puts what the log says of the receipt b beside it: the
// Assay-Log-Index and Assay-Log-Status headers, and with ?log=true the
// answer {"receipt": <the receipt, or its Data Integrity form>, "log":
// translog.Inclusion}. It reports whether it answered.
func (s *server) withLog(c *fiber.Ctx, b json.RawMessage) (bool, error) {
	want := false
	switch q := c.Query("log"); q {
	case "", "false":
	case "true":
		want = true
	default:
		return true, fault.New(fault.Invalid, codeInvalidLog, `log must be absent, "true" (the receipt with its log proof) or "false", not %q`, q)
	}
	inc, err := s.cfg.Log.Inclusion(c.UserContext(), b)
	if err != nil {
		return true, err
	}
	c.Set(headerLogStatus, inc.Status)
	if inc.Index != nil {
		c.Set(headerLogIndex, strconv.FormatInt(*inc.Index, 10))
	}
	if !want {
		return false, nil
	}
	switch c.Query("format") {
	case "":
	case "di":
		var r receipt.Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return true, err
		}
		if b, err = s.cfg.Keys.Credential(r); err != nil {
			return true, err
		}
	default:
		return false, nil // the receipt handler refuses it
	}
	out, err := translog.MarshalInclusion("receipt", b, inc)
	if err != nil {
		return true, err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return true, c.Send(out)
}
