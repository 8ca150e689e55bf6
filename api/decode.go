package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
)

// body returns the request body (raw: a Content-Encoding is not undone) and
// refuses one over limit.
func body(c *fiber.Ctx, limit int) ([]byte, error) {
	b := c.Request().Body()
	if len(b) > limit {
		return nil, fault.New(fault.TooLarge, "body_too_large", "request body is %d bytes; this route takes at most %d", len(b), limit)
	}
	return b, nil
}

// decode reads a JSON object body into v, refusing unknown fields, trailing
// data and wrong types. An empty body reads as {}.
func decode(b []byte, v any, fields string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fault.New(fault.Invalid, "unknown_field", "%s; this route takes %s", strings.TrimPrefix(err.Error(), "json: "), fields)
		case errors.As(err, &typeErr):
			if typeErr.Field == "" {
				return fault.New(fault.Invalid, "invalid_json", "the body must be a JSON object, not %s", typeErr.Value)
			}
			return fault.New(fault.Invalid, "invalid_type", "%s must not be a JSON %s", typeErr.Field, typeErr.Value)
		case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
			return fault.New(fault.Invalid, "invalid_json", "the body is not valid JSON: %v", err)
		}
		return fault.New(fault.Invalid, "invalid_json", "the body is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Invalid, "invalid_json", "the body must hold one JSON object and nothing after it")
	}
	return nil
}

// idem reads the Idempotency-Key header and fingerprints the request.
func idem(c *fiber.Ctx, b []byte) (escrow.Idem, error) {
	key := c.Get("Idempotency-Key")
	if key == "" {
		return escrow.Idem{}, nil
	}
	if err := escrow.ValidIdemKey(key); err != nil {
		return escrow.Idem{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", c.Method(), c.Path())
	h.Write(b)
	return escrow.Idem{Key: key, Fingerprint: hex.EncodeToString(h.Sum(nil))}, nil
}

// reply writes a mutation's stored or fresh answer.
func reply(c *fiber.Ctx, r escrow.Reply, err error) error {
	if err != nil {
		return err
	}
	if r.Replayed {
		c.Set("Idempotent-Replayed", "true")
	}
	status := fiber.StatusOK
	if r.Created {
		status = fiber.StatusCreated
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(r.Body)
}
