package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/idem"
)

// decodeBody reads a bounded, strict JSON body into v (fields are what the
// route takes, for refusals: fieldsOf the body's type) and the request's
// Idempotency-Key.
func decodeBody(c *fiber.Ctx, s *server, v any, fields string) (idem.Idem, error) {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return idem.Idem{}, err
	}
	if err := decode(b, v, fields); err != nil {
		return idem.Idem{}, err
	}
	return readIdem(c, b)
}

// jsonMutation is the handler of a court or market mutation: the body
// decoded into a Req, the request's Idempotency-Key, and do's stored or
// fresh reply.
func jsonMutation[Req any](s *server, do func(*fiber.Ctx, Req, idem.Idem) (idem.Reply, error)) fiber.Handler {
	fields := fieldsOf[Req]()
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
func bodyView[Req, T any](s *server, do func(*fiber.Ctx, Req) (T, error)) fiber.Handler {
	fields := fieldsOf[Req]()
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
