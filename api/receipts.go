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
	if s.cfg.Log != nil {
		if done, err := s.withLog(c, b); done || err != nil {
			return err
		}
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

// verify answers whether a receipt is this court's: {"valid": true}, or
// {"valid": false, "reason"} for a receipt that fails. A body that is not
// JSON is refused with 400 invalid_json; JSON that is not a receipt (no
// credentialSubject and proof objects, bare or under "receipt") with 422
// not_a_receipt, as the seed's service answers it.
func (s *server) verify(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return fault.New(fault.Invalid, codeInvalidJSON, `the body is not JSON: send a receipt, bare or as {"receipt": …}`)
	}
	if !receiptShaped(b) {
		return fault.New(fault.Unprocessable, codeNotAReceipt, `the body is not a receipt: send the receipt object (with credentialSubject and proof), bare or as {"receipt": …}`)
	}
	return c.JSON(s.cfg.Keys.Verifier().Verify(b))
}

// receiptShaped reports whether a JSON text is a receipt, bare or as
// {"receipt": …}: an object with a credentialSubject and a proof that are
// objects. Whether it verifies is the Verifier's to say.
func receiptShaped(b []byte) bool {
	var outer map[string]json.RawMessage
	if json.Unmarshal(b, &outer) != nil {
		return false
	}
	if inner, ok := outer["receipt"]; ok && len(outer) == 1 {
		if json.Unmarshal(inner, &outer) != nil {
			return false
		}
	}
	isObject := func(v json.RawMessage) bool {
		t := bytes.TrimSpace(v)
		return len(t) > 0 && t[0] == '{'
	}
	return isObject(outer["credentialSubject"]) && isObject(outer["proof"])
}
