package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// DefaultCORSOrigins are the origins whose pages may call the public
// routes: any, as the seed service allows, since those routes take no
// credentials.
const DefaultCORSOrigins = "*"

// corsRoute reports whether a page of another origin may call r: the
// routes anyone may call (the open court, receipts, checkers, replays, the
// manual) and the market's reads, and the usage notes. Never an operator's
// route, the judgment routes (signed by a principal) or MCP (which takes
// the operator's token for one tool); and no route allows credentials.
func corsRoute(r *route) bool {
	if r.of != nil {
		return true
	}
	switch {
	case r.auth != RouteOpen:
		return false
	case r.service == svcMCP:
		return false
	case r.service == svcMarket && r.write:
		return false
	}
	return true
}

// cors answers the CORS preflight of a route that corsRoute allows, and
// adds Access-Control-Allow-Origin to its answers, for the origins of
// Config.CORSOrigins; other routes get no CORS header, and their
// preflight answers 405 with Allow. "none" turns CORS off.
func (s *server) cors() fiber.Handler {
	origins := s.cfg.CORSOrigins
	if origins == "" {
		origins = DefaultCORSOrigins
	}
	if corsOff(origins) {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	return cors.New(cors.Config{
		Next:          func(c *fiber.Ctx) bool { return !s.crossOrigin(c) },
		AllowOrigins:  origins,
		AllowMethods:  "GET,HEAD,POST",
		AllowHeaders:  "Content-Type, Idempotency-Key, Accept",
		ExposeHeaders: "Idempotent-Replayed, X-Request-Id, Retry-After, " + headerLogStatus + ", " + headerLogIndex,
		MaxAge:        600,
	})
}

// crossOrigin reports whether the request (or, for a preflight, the
// request it asks about) is to a route a page of another origin may call.
func (s *server) crossOrigin(c *fiber.Ctx) bool {
	method := c.Method()
	if method == fiber.MethodOptions {
		method = c.Get(fiber.HeaderAccessControlRequestMethod)
	}
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	allowed := false
	s.routes.eachAt(c.Path(), func(p *pathPattern) bool {
		for _, r := range p.routes {
			if r.method == method && corsRoute(r) {
				allowed = true
				return false
			}
		}
		return true
	})
	return allowed
}

// corsOff reports whether origins turns CORS off.
func corsOff(origins string) bool { return strings.EqualFold(strings.TrimSpace(origins), "none") }
