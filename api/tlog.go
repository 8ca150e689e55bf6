package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/translog"
)

// The transparency log's routes: C2SP tlog-tiles under the prefix /log
// (its checkpoint, tiles and entry bundles), the log's keys, and the log's
// word on a receipt beside GET /receipts/{id}.

// TransparencyLog is the court's transparency log (*translog.Log).
type TransparencyLog interface {
	// Checkpoint is the published checkpoint, a C2SP signed note.
	Checkpoint(ctx context.Context) ([]byte, error)
	// Tile is the resource at a tlog-tiles path below the prefix:
	// "tile/<L>/<N>[.p/<W>]" or "tile/entries/<N>[.p/<W>]".
	Tile(ctx context.Context, path string) ([]byte, error)
	// Key is the log's origin, key and witnesses.
	Key() translog.Key
	// Inclusion is what the log holds of the receipt stored as b.
	Inclusion(ctx context.Context, b []byte) (translog.Inclusion, error)
}

const (
	svcLog = "log"
	// codeInvalidLog refuses a ?log= that is not true or false.
	codeInvalidLog = "invalid_log"
	// codeLogNotKept refuses ?log=true on a server that keeps no log.
	codeLogNotKept = "log_not_kept"
	// headerLogIndex and headerLogStatus carry, on GET /receipts/{id},
	// the receipt's index in the log and its status there
	// (translog.Inclusion.Status).
	headerLogIndex  = "Assay-Log-Index"
	headerLogStatus = "Assay-Log-Status"
)

// keepsLog reports whether the server keeps a transparency log: the log's
// rows are served only then.
func keepsLog(s *server) bool { return s.cfg.Log != nil }

// logTile is the row of the tile paths of n segments below /log/tile/:
// <L>/<N>[.p/<W>] or entries/<N>[.p/<W>], <N> in 3-digit groups
// (x001/234). A tile path spans several segments, and fiber's router, the
// OpenAPI document and the clients that route by it have no parameter
// over several: one row per count keeps every path exact. The table has
// n from 2 (tile/0/000) to 8: a level, the six groups of the largest tile
// index of a log of 2^63-1 entries ((2^63-1)/256 has 17 digits), and a
// partial tile's width.
func logTile(n int) route {
	path := "/log/tile/{level}"
	for i := 1; i < n; i++ {
		path += fmt.Sprintf("/{n%d}", i)
	}
	return route{method: "GET", path: path, raw: (*server).logTile, only: keepsLog, service: svcLog, auth: RouteOpen,
		summary: fmt.Sprintf("a C2SP tlog-tiles resource whose path has %d segments below /log/tile/: <L>/<N>[.p/<W>], a tile of up to 256 hashes at level L, "+
			"or entries/<N>[.p/<W>], an entry bundle; <N> in 3-digit groups (x001/234), <W> a partial tile's width", n),
		resp: textSchema, respTypes: []string{fiber.MIMEOctetStream}, codes: []string{translog.ECodeBadTilePath, translog.ECodeTileNotFound}}
}

// logCheckpoint serves the published checkpoint, a C2SP signed note, not
// to be cached beyond a second.
func (s *server) logCheckpoint(c *fiber.Ctx, _ principal.Actor) error {
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
func (s *server) logTile(c *fiber.Ctx, _ principal.Actor) error {
	b, err := s.cfg.Log.Tile(c.UserContext(), strings.TrimPrefix(c.Path(), "/log/"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(b)
}

// logKey is the log's origin, its key and its witnesses.
func (s *server) logKey(*call) (translog.Key, error) { return s.cfg.Log.Key(), nil }

// logQuery reads GET /receipts/{id}'s ?log=: whether the answer is the
// receipt with its log proof.
func (s *server) logQuery(q string) (bool, error) {
	switch q {
	case "", "false":
		return false, nil
	case "true":
		if s.cfg.Log == nil {
			return false, fault.New(fault.NotFound, codeLogNotKept, "this server keeps no transparency log (assay serve --log=false): ask for the receipt without log=true")
		}
		return true, nil
	default:
		return false, fault.New(fault.Invalid, codeInvalidLog, `log must be absent, "true" (the receipt with its log proof) or "false", not %q`, q)
	}
}

// withLog answers the receipt out (its stored bytes, or its Data Integrity
// form) with what the log says of the receipt stored as stored: the
// Assay-Log-Index and Assay-Log-Status header fields, and when bundle is
// set the answer {"receipt": out, "log": translog.Inclusion}; else out
// alone.
func (s *server) withLog(c *call, stored, out json.RawMessage, bundle bool) (json.RawMessage, error) {
	if s.cfg.Log == nil {
		return out, nil
	}
	inc, err := s.cfg.Log.Inclusion(c.ctx, stored)
	if err != nil {
		return nil, err
	}
	c.set(headerLogStatus, inc.Status)
	if inc.Index != nil {
		c.set(headerLogIndex, strconv.FormatInt(*inc.Index, 10))
	}
	if !bundle {
		return out, nil
	}
	b, err := translog.MarshalInclusion("receipt", out, inc)
	return json.RawMessage(b), err
}
