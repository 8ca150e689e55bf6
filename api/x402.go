package api

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
)

// The market's purchase and deposit routes speak x402 (v2) when the
// server settles on a rail paid per request: a request that must be paid
// is answered 402 with PAYMENT-REQUIRED (base64 of the payment
// requirements, which the JSON body repeats beside its coded error); the
// client retries with PAYMENT-SIGNATURE; a paid answer carries
// PAYMENT-RESPONSE (base64 of the settlement). On the dev rail nothing
// changes: no header is read and none is written.

// paymentRequiredBody is a 402's body: the error every route answers,
// and the requirements the PAYMENT-REQUIRED header carries.
type paymentRequiredBody struct {
	errorBody
	PaymentRequired any `json:"payment_required"`
}

// paymentRequired answers 402: payment_required when no payment was
// presented, or the code of the refusal of the one that was.
func paymentRequired(c *fiber.Ctx, pr *rail.PaymentRequired) error {
	code, msg := x402.CodePaymentRequired, "this request must be paid: pay as the PAYMENT-REQUIRED header says and send the payment in PAYMENT-SIGNATURE"
	if f, ok := fault.As(pr.Err); ok {
		code, msg = f.Code, f.Message
		if code != x402.CodePaymentRequired {
			msg += "; pay again as the PAYMENT-REQUIRED header says"
		}
	}
	c.Set(rail.HeaderPaymentRequired, pr.Header)
	return c.Status(rail.StatusPaymentRequired).JSON(paymentRequiredBody{
		errorBody:       errorBody{Detail: msg, Error: errorCode{Code: code, Message: msg}},
		PaymentRequired: pr.Required,
	})
}

// paymentResponse sets PAYMENT-RESPONSE when the reply reports a payment
// settled on the rail (its "payment" field), on a replayed reply too.
func paymentResponse(c *fiber.Ctx, body []byte) error {
	var b struct {
		Payment *rail.Settled `json:"payment"`
	}
	if json.Unmarshal(body, &b) != nil || b.Payment == nil {
		return nil
	}
	h, err := x402.Encode(x402.Settlement{Success: true, Payer: b.Payment.Payer, Transaction: b.Payment.Transaction, Network: b.Payment.Network})
	if err != nil {
		return err
	}
	c.Set(rail.HeaderPaymentResponse, h)
	return nil
}
