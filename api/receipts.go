package api

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
)

// receipt serves a receipt of any service from the receipt repository, in
// the bytes that were signed (?format=di: its Data Integrity form), with
// what the transparency log says of it (tlog.go).
func (s *server) receipt(c *fiber.Ctx, _ principal.Actor) error {
	format := c.Query("format")
	if format != "" && format != "di" {
		return fault.New(fault.Invalid, codeInvalidFormat, `format must be absent (the receipt) or "di" (its W3C Data Integrity form)`)
	}
	bundle, err := s.logQuery(c)
	if err != nil {
		return err
	}
	b, err := s.cfg.Court.SignedReceipt(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	out := b
	if format == "di" {
		var r receipt.Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if out, err = s.cfg.Keys.Credential(r); err != nil {
			return err
		}
	}
	return s.withLog(c, b, out, bundle)
}

// verify answers whether a receipt is this court's: {"valid": true}, or
// {"valid": false, "reason"} for a receipt that fails. A body that is not
// JSON is refused with 400 invalid_json; JSON that is not a receipt (no
// credentialSubject and proof objects, bare or under "receipt") with 422
// not_a_receipt, as the seed's service answers it.
func (s *server) verify(c *fiber.Ctx, _ principal.Actor) error {
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
// {"receipt": …} (with "log" beside it, as GET /receipts/{id}?log=true
// answers it): an object with a credentialSubject and a proof that are
// objects. Whether it verifies is the Verifier's to say.
func receiptShaped(b []byte) bool {
	var outer map[string]json.RawMessage
	if json.Unmarshal(b, &outer) != nil {
		return false
	}
	_, logged := outer["log"]
	if inner, ok := outer["receipt"]; ok && (len(outer) == 1 || len(outer) == 2 && logged) {
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
