package api

import (
	"bytes"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
)

// receipt is a receipt of any service from the receipt repository, in
// the bytes that were signed (format=di: its W3C Data Integrity form),
// with what the transparency log says of it (tlog.go).
func (s *server) receipt(c *call) (json.RawMessage, error) {
	format := c.query("format")
	if format != "" && format != "di" {
		return nil, fault.New(fault.Invalid, codeInvalidFormat, `format must be absent (the receipt) or "di" (its W3C Data Integrity form)`)
	}
	bundle, err := s.logQuery(c.query("log"))
	if err != nil {
		return nil, err
	}
	b, err := s.cfg.Court.SignedReceipt(c.ctx, c.param("id"))
	if err != nil {
		return nil, err
	}
	out := b
	if format == "di" {
		var r receipt.Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		if out, err = s.cfg.Keys.Credential(r); err != nil {
			return nil, err
		}
	}
	return s.withLog(c, b, out, bundle)
}

// verify answers whether a receipt is this court's: {"valid": true}, or
// {"valid": false, "reason"} for a receipt that fails. A body that is not
// JSON is refused with 400 invalid_json; JSON that is not a receipt (no
// credentialSubject and proof objects, bare or under "receipt") with 422
// not_a_receipt, as the seed's service answers it.
func (s *server) verify(c *call) (answer, error) {
	if !json.Valid(c.body) {
		return answer{}, fault.New(fault.Invalid, codeInvalidJSON, `the body is not JSON: send a receipt, bare or as {"receipt": …}`)
	}
	if !receiptShaped(c.body) {
		return answer{}, fault.New(fault.Unprocessable, codeNotAReceipt, `the body is not a receipt: send the receipt object (with credentialSubject and proof), bare or as {"receipt": …}`)
	}
	return answer{value: s.cfg.Keys.Verifier().Verify(c.body)}, nil
}

// verifyToolIn is verify_receipt's input: the receipt under "receipt".
func verifyToolIn() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"receipt"}, Properties: map[string]*jsonschema.Schema{
		"receipt": {Type: "object", Description: "the receipt object, as a service answered it: credentialSubject and proof"}}}
}

// receiptOrCredential is get_receipt's output: a receipt, its Data
// Integrity form, or (log true) either under "receipt" with its log proof
// under "log".
func receiptOrCredential() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "the signed receipt (W3C VC shape: credentialSubject, proof), or with format di a W3C VC 2.0 credential with a DataIntegrityProof; with log true, {receipt, log} with its transparency log proof",
		Properties: map[string]*jsonschema.Schema{"credentialSubject": {Type: "object", Description: "what the receipt attests"},
			"proof": {Type: "object", Description: "the signature: subjectHash, signature and publicKey, or a DataIntegrityProof"}}}
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
