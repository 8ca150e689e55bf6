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

// matterHints answer a bare GET of the judgment service's POST routes,
// without a signature, so that a caller finds out how to sign before it
// has a key. Paths are relative to /api/v1/economic/matters.
var matterHints = map[string]usage{
	"/open": {
		Detail: "open a Matter before a spend, publication or irreversible action; signed mode binds requester_id to your key id and requires action_digest (sign every request: RFC 9421 Ed25519 covering @method @path @authority content-digest, with created, keyid, nonce; see /skill.md)",
		Method: "POST", Path: mattersBase + "/open",
		Body: map[string]any{"action_digest": "<sha256 hex of the exact action>", "question": "may we pay invoice 42?", "stakes_usdc": "12.5",
			"deadline": "2026-05-01T13:00:00Z", "risk_class": "spend|publish|irreversible",
			"verdict_schema":  map[string]any{"type": "object", "required": []any{"approve"}, "properties": map[string]any{"approve": map[string]any{"type": "boolean"}}},
			"idempotency_key": "1 to 256 bytes"},
		Returns: `201 {"matter": <redacted projection>, "receipt": <matter_opened>}`,
	},
	"/assign": {
		Detail: "the requester or an operator assigns the one solver (a solver principal of the tenant), asserting conflict_free", Method: "POST", Path: mattersBase + "/assign",
		Body:    map[string]any{"matter_id": "mat-…", "solver_id": "<solver key id>", "solver_kind": "human|model", "qualification": "optional, at most 1024 bytes", "conflict_free": true, "idempotency_key": "…"},
		Returns: `{"matter", "receipt": <solver_assigned>}`,
	},
	"/accept": {
		Detail: "the assigned solver accepts the assignment", Method: "POST", Path: mattersBase + "/accept",
		Body: map[string]any{"matter_id": "mat-…", "idempotency_key": "…"}, Returns: `{"matter", "receipt": <solver_accepted>}`,
	},
	"/verdict": {
		Detail: "the accepted solver submits the one verdict; it must match verdict_schema and carry the Matter's action_digest; the first valid one wins", Method: "POST", Path: mattersBase + "/verdict",
		Body:    map[string]any{"matter_id": "mat-…", "solver_kind": "human|model", "action_digest": "<the Matter's>", "verdict": map[string]any{"approve": true}, "idempotency_key": "…"},
		Returns: `{"matter", "receipt": <verdict_submitted, verdict_schema_ok true>}`,
	},
	"/settle": {
		Detail: "the requester or an operator marks a judged Matter settled: solver_paid is a flag, no funds move", Method: "POST", Path: mattersBase + "/settle",
		Body: map[string]any{"matter_id": "mat-…", "idempotency_key": "…"}, Returns: `{"matter", "receipt": <matter_settled>}`,
	},
	"/dispute": {
		Detail: "the requester or an operator disputes an open or judged Matter (terminal)", Method: "POST", Path: mattersBase + "/dispute",
		Body:    map[string]any{"matter_id": "mat-…", "reason": "1 to 2048 bytes", "action_digest": "<the Matter's>", "idempotency_key": "…"},
		Returns: `{"matter", "receipt": <matter_disputed>}`,
	},
	"/tick": {
		Detail: "an operator expires the tenant's open Matters at or past their deadline; a replay answers the original receipts", Method: "POST", Path: mattersBase + "/tick",
		Body: map[string]any{"idempotency_key": "…"}, Returns: `{"evaluated_at", "expired", "receipts": <matter_expired…>}`,
	},
}
