package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/market"
)

// decodeBody reads a bounded, strict JSON body into v (fields are what the
// route takes, for refusals) and the request's Idempotency-Key.
func decodeBody(c *fiber.Ctx, s *server, v any, fields string) (escrow.Idem, error) {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return escrow.Idem{}, err
	}
	if err := decode(b, v, fields); err != nil {
		return escrow.Idem{}, err
	}
	return idem(c, b)
}

// jsonMutation is the handler of a court or market mutation: the body
// decoded into a Req, the request's Idempotency-Key, and do's stored or
// fresh reply.
func jsonMutation[Req any](s *server, fields string, do func(*fiber.Ctx, Req, escrow.Idem) (escrow.Reply, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req Req
		id, err := decodeBody(c, s, &req, fields)
		if err != nil {
			return err
		}
		r, err := do(c, req, id)
		return reply(c, r, err)
	}
}

// marketMutation is jsonMutation in the market's terms (its own Idem
// type, until the services share one).
func marketMutation[Req any](s *server, fields string, do func(*fiber.Ctx, Req, market.Idem) (market.Reply, error)) fiber.Handler {
	return jsonMutation(s, fields, func(c *fiber.Ctx, req Req, id escrow.Idem) (market.Reply, error) {
		return do(c, req, market.Idem(id))
	})
}

// view is the handler of a read: get's answer, as JSON.
func view[T any](get func(*fiber.Ctx) (T, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		v, err := get(c)
		if err != nil {
			return err
		}
		return c.JSON(v)
	}
}

// bodyView is the handler of a read that takes a JSON body (a search, a
// replay, a tick): the body decoded into a Req, as a mutation's is, and
// do's answer, as JSON.
func bodyView[Req, T any](s *server, fields string, do func(*fiber.Ctx, Req) (T, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req Req
		if _, err := decodeBody(c, s, &req, fields); err != nil {
			return err
		}
		v, err := do(c, req)
		if err != nil {
			return err
		}
		return c.JSON(v)
	}
}
