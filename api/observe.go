package api

import (
	"github.com/assayhq/assay/runtime/principal"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/fault"
)

// HeaderRequestID carries a request's id: taken from the request when it
// has a sane one, made up otherwise, and echoed on the answer.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDBytes bounds an X-Request-Id taken from a client.
const maxRequestIDBytes = 128

// unmatchedRoute is the route label of requests no route matched, so that
// scanners probing random paths add one series, not one per path.
const unmatchedRoute = "unmatched"

// requestIDs makes up request ids: a random prefix per process and a
// counter, unique without a read of the system's randomness per request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (r *requestIDs) next() string {
	return r.prefix + strconv.FormatUint(r.n.Add(1), 10)
}

// saneRequestID reports whether a client's X-Request-Id may be logged and
// echoed: 1 to maxRequestIDBytes of printable ASCII, no spaces.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// observe is the middleware that gives each request an id, and records
// its answer: one log line (when log is set) and the request metrics
// (when m is set). It answers an error itself, with the app's error
// handler, so that the status and the error's code are known here. A line
// holds the method, the route template, the status, the duration, the
// request id and, for an error, its code: never the path's ids, the
// query, a header's value or a body.
func observe(log *slog.Logger, m *metrics.Metrics) fiber.Handler {
	ids := newRequestIDs()
	return func(c *fiber.Ctx) error {
		start := time.Now()
		id := c.Get(HeaderRequestID)
		if !saneRequestID(id) {
			id = ids.next()
		}
		c.Set(HeaderRequestID, id)
		err := c.Next()
		code, route := "", c.Route().Path
		if err != nil {
			var fe *fiber.Error // here, not above: errors.As moves it to the heap
			if errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed) {
				route = unmatchedRoute // fiber's own: no route matched
			}
			code = codeOf(err)
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		d := time.Since(start)
		status := c.Response().StatusCode()
		m.ObserveRequest(route, c.Method(), status, d)
		if log != nil {
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			attrs := []slog.Attr{
				slog.String("method", c.Method()),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Duration("duration", d),
				slog.String("request_id", id),
			}
			if code != "" {
				attrs = append(attrs, slog.String("code", code))
			}
			log.LogAttrs(context.Background(), level, "request", attrs...)
		}
		return nil
	}
}

// codeOf is the code the error handler answers err with (errorHandler).
func codeOf(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		if known, ok := fiberCodes[fe.Code]; ok {
			return known.Code
		}
		return codeHTTPError
	}
	return fault.CodeOf(err)
}

// metricsHandler serves m at GET /metrics.
func metricsHandler(m *metrics.Metrics) fiber.Handler {
	return adaptor.HTTPHandler(m.Handler())
}

// metrics serves GET /metrics.
func (s *server) metrics(c *fiber.Ctx, _ principal.Actor) error {
	return metricsHandler(s.cfg.Metrics)(c)
}
