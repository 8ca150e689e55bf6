package api

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// receiptRoutes registers the routes that serve and verify receipts.
func (s *server) receiptRoutes(app *fiber.App) {
	r := s.router(app, "")
	r.add("GET", "/receipts/{id}", s.receipt)
	r.add("POST", "/verify", s.verify)
}

// receipt serves a receipt of any service from the receipt repository, in
// the bytes that were signed.
func (s *server) receipt(c *fiber.Ctx) error {
	var b json.RawMessage
	err := s.cfg.Court.Store().View(c.UserContext(), func(tx store.Tx) error {
		var err error
		b, err = receipt.Get(tx, c.Params("id"))
		return err
	})
	if err != nil {
		return err
	}
	switch c.Query("format") {
	case "":
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(b)
	case "di":
		var r receipt.Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		b, err := s.cfg.Keys.Credential(r)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(b)
	}
	return fault.New(fault.Invalid, codeInvalidFormat, `format must be absent (the receipt) or "di" (its W3C Data Integrity form)`)
}

func (s *server) verify(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(b); !json.Valid(b) || len(t) == 0 || t[0] != '{' {
		return fault.New(fault.Invalid, codeInvalidJSON, `the body must be a receipt as a JSON object, bare or as {"receipt": …}`)
	}
	return c.JSON(s.cfg.Keys.Verifier().Verify(b))
}
