package api

import "github.com/gofiber/fiber/v2"

// usage is what a bare GET of a POST route answers, with status 200.
type usage struct {
	Detail  string `json:"detail"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Body    any    `json:"body,omitempty"`
	Returns string `json:"returns"`
	Docs    string `json:"docs"`
}

var hints = map[string]usage{
	"/contracts": {
		Detail: "create a contract with POST; fetch one with GET /contracts/{contract_id}",
		Method: "POST", Path: "/contracts",
		Body: map[string]any{"buyer": "did:nanda:buyer", "seller": "did:nanda:seller", "price": 50,
			"acceptance": map[string]any{"assertions": []any{map[string]any{"path": "rows", "op": "gte", "value": 100}}}},
		Returns: `{"contract_id", "contract_hash", "status": "created"}`,
	},
	"/contracts/:id/fund": {
		Detail: "lock the price in escrow", Method: "POST", Path: "/contracts/{contract_id}/fund",
		Body: map[string]any{}, Returns: `{"status": "funded"}`,
	},
	"/contracts/:id/deliver": {
		Detail: "the seller submits the work product", Method: "POST", Path: "/contracts/{contract_id}/deliver",
		Body: map[string]any{"deliverable": map[string]any{"rows": 120}, "evidence": map[string]any{}}, Returns: `{"status": "delivered", "evidence_hash"}`,
	},
	"/contracts/:id/accept": {
		Detail: "the buyer accepts; escrow releases to the seller", Method: "POST", Path: "/contracts/{contract_id}/accept",
		Body: map[string]any{}, Returns: "a signed verdict receipt, verdict release, tier buyer-accept",
	},
	"/contracts/:id/dispute": {
		Detail: "the buyer disputes; the court replays the acceptance criteria", Method: "POST", Path: "/contracts/{contract_id}/dispute",
		Body: map[string]any{"reason": "far fewer rows than agreed"}, Returns: "a signed verdict receipt: credentialSubject.verdict, tier, checks, payout",
	},
	"/contracts/:id/resolve": {
		Detail: "an operator decides an escalated dispute (Authorization: Bearer <ASSAY_OPERATOR_TOKEN>)", Method: "POST", Path: "/contracts/{contract_id}/resolve",
		Body: map[string]any{"verdict": "refund", "reason": "the summary invents facts"}, Returns: "the final signed verdict receipt, tier operator",
	},
	"/verify": {
		Detail: "check a receipt's signature against this court's keys", Method: "POST", Path: "/verify",
		Body: map[string]any{"receipt": "<the receipt object>"}, Returns: `{"valid": true|false, "reason"}`,
	},
	"/checkers": {
		Detail: "upload a wasm checker as the raw body with Content-Type: application/wasm; name it in acceptance.checkers by sha256", Method: "POST", Path: "/checkers",
		Returns: `{"sha256", "kind", "size"}`,
	},
	"/accounts": {
		Detail: "fetch a ledger account with GET /accounts/{id}: rail:dev, hold:escrow:{contract_id}, agent:{did}", Method: "GET", Path: "/accounts/{id}",
		Returns: `{"id", "balances", "entries"}`,
	},
}

func hint(u usage) fiber.Handler {
	u.Docs = "/skill.md"
	return func(c *fiber.Ctx) error { return c.JSON(u) }
}
