package api

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/translog"
)

// The services, as the route table groups them.
const (
	svcMeta     = "meta"
	svcCourt    = "court"
	svcReceipts = "receipts"
	svcCheckers = "checkers"
	svcReplays  = "replays"
	svcMarket   = "market"
	svcMCP      = "mcp"
	svcA2A      = "a2a"
	svcMatters  = "matters"
	svcConsole  = "console"
)

// services describe the groups, in the order GET / and /openapi.json show
// them.
var services = []struct{ name, desc string }{
	{svcCourt, "The escrow court: contracts, escrow, disputes replayed by their acceptance criteria, signed verdict receipts, reputation and the ledger."},
	{svcReceipts, "Receipts of every service: served in the bytes that were signed, and verified against this server's keys."},
	{svcCheckers, "Checkers (WebAssembly modules or Python source) that acceptance criteria and the market name by sha256."},
	{svcReplays, "One stored checker replayed on many artifacts, in parallel, with memoised outcomes."},
	{svcMarket, "The artifact market: verified listings, purchases, challenges and wallets (when the server runs it)."},
	{svcMCP, "Every service's operations as Model Context Protocol tools (streamable HTTP, stateless: the 2026-07-28 revision and the ones before it)."},
	{svcA2A, "The Agent2Agent (A2A v1.0) interface: the signed Agent Card, and a dispute run as a task whose artifact is the verdict receipt."},
	{svcMatters, "Judgment matters: one accountable verdict before a spend, a publication or an irreversible action (when the server runs them)."},
	{svcLog, "The transparency log of every receipt (when the server keeps one): C2SP tlog-tiles under /log, checkpoints signed by the log's key and cosigned by witnesses."},
	{svcMeta, "The server's manual, health, keys, capability metadata, metrics and this document."},
	{svcConsole, "The web console: static files, and the routes above from a browser."},
}

// Schemas of answers the handlers build as maps.
type (
	statusOut struct {
		Status escrow.Status `json:"status"`
	}
	deliveredOut struct {
		Status       escrow.Status `json:"status"`
		EvidenceHash string        `json:"evidence_hash"`
	}
	activityOut struct {
		escrow.Activity
		CourtPublicKey string `json:"court_public_key"`
	}
	walletMovedOut struct {
		Agent      string     `json:"agent"`
		AmountUSD  market.USD `json:"amount_usd"`
		BalanceUSD market.USD `json:"balance_usd"`
		PaymentRef string     `json:"payment_ref"`
		Rail       string     `json:"rail"`
		// Payment is the x402 settlement, when the deposit was paid so.
		Payment *rail.Settled `json:"payment,omitempty"`
	}
	resolvedOut struct {
		Challenge market.Challenge `json:"challenge"`
		Purchase  market.Purchase  `json:"purchase"`
	}
	fingerprintOut struct {
		Fingerprint string              `json:"fingerprint"`
		Tokens      []string            `json:"tokens"`
		Constraints []market.Constraint `json:"constraints"`
	}
	clockIn struct {
		Advance string `json:"advance" jsonschema:"a non-negative Go duration, e.g. 2h"`
	}
	clockOut struct {
		Advanced string `json:"advanced"`
	}
	healthzOut struct {
		Status string `json:"status"`
	}
	matterListOut struct {
		Count   int   `json:"count"`
		Matters []any `json:"matters"`
	}
	matterOut struct {
		Matter any `json:"matter"`
	}
	matterReceiptsOut struct {
		Count    int               `json:"count"`
		Receipts []receipt.Receipt `json:"receipts"`
	}
)

var (
	idParam       = param{name: "id", desc: "the contract's id, e.g. esc-01M8TPH5D3SNQHND4Q02GH4ZCF"}
	limitQuery    = param{name: "limit", desc: "the most items to answer", schema: &jsonschema.Schema{Type: "integer", Minimum: ptr(0.0)}}
	matterCodes   = []string{matters.ECodeInvalidRiskClass, matters.ECodeInvalidSchema, matters.ECodeInvalidSolverKind, matters.ECodeInvalidVerdict, matters.ECodeVerdictSchemaMismatch, matters.ECodeInvalidActionDigest, matters.ECodeInvalidQualification, matters.ECodeSolverConflict, matters.ECodeSolverAlreadyAssigned, matters.ECodeSolverNotAssigned, matters.ECodeSolverNotAccepted, matters.ECodeSolverNotAccepting, matters.ECodeSolverKindMismatch, matters.ECodeMatterNotFound, matters.ECodeMatterNotOpen, matters.ECodeMatterNotSettleable, matters.ECodeMatterNotDisputable, matters.ECodeIdempotencyConflict, matters.ECodeMissingField, matters.ECodeFieldTooLong, matters.ECodeInvalidStakes, matters.ECodeInvalidDeadline, matters.ECodeInvalidIdemKey, matters.ECodeInvalidReason, matters.ECodeForbidden, matters.ECodeInsufficientScope, matters.ECodeRequesterMismatch, matters.ECodeSolverMismatch, matters.ECodeUnknownSolver}
	idemCodes     = []string{codeIdemConflict, codeIdemInvalidKey, escrow.ECodeCommitUnknown}
	contractCodes = []string{escrow.ECodeContractNotFound, escrow.ECodeInvalidState, escrow.ECodeReviewWindowClosed, escrow.ECodeDeadlinePassed, escrow.ECodeRailFailed, escrow.ECodeInsufficientFunds, escrow.ECodeOperatorOnly,
		codeAgentMismatch, codeInsufficientScope, ledger.ECodeBalanceLimit}
	marketIdem = []string{codeIdemConflict, codeIdemInvalidKey, market.ECodeCommitUnknown, market.ECodeRailFailed}
	// paidIdem are the refusals of a route that takes a payment: a
	// payment whose outcome is not known yet answers payment_pending.
	paidIdem = with(marketIdem, []string{rail.ECodePaymentPending})
)

// exchangeCodes are the judgment exchange's refusals, with the judgment
// routes'.
var exchangeCodes = with(matterCodes, []string{matters.ECodeInvalidQuorum, matters.ECodeInvalidAmount, matters.ECodeInvalidCommitment, matters.ECodeInvalidSalt,
	matters.ECodeInvalidLineage, matters.ECodeInvalidList, matters.ECodeInvalidOutcome, matters.ECodeQuorumMatter, matters.ECodeNotQuorumMatter, matters.ECodeQuorumFull,
	matters.ECodeQuorumNotMet, matters.ECodeQuorumNotClosed, matters.ECodeLineageDiversity, matters.ECodeAlreadyCommitted, matters.ECodeSolverNotCommitted,
	matters.ECodeAlreadyRevealed, matters.ECodeRevealMismatch, matters.ECodeInsufficientFunds, matters.ECodeSolverNotFound, matters.ECodeMatterNotAppealable,
	matters.ECodeAppealUnavailable, matters.ECodeAlreadyObserved, matters.ECodeNotObservable, matters.ECodeNonceReplayed, matters.ECodePrincipalNotFound})

// mattersAuthCodes are the refusals of a caller that signs (auth.go).
var mattersAuthCodes = []string{codeSignatureMissing, codeSignatureMalformed, codeSignatureExpired, codeSignatureInvalid, codeUnknownKey, codeDigestMismatch,
	principal.ECodeNonceReplayed, codeAPIKeyInvalid}

// paidCodes are the refusals of a payment over x402 (x402.go), on the
// routes that take one.
var paidCodes = []string{x402.CodePaymentRequired, x402.CodeInvalidPayment, x402.CodeSignatureInvalid, x402.CodePaymentExpired, x402.CodePaymentNotYetValid,
	x402.CodePaymentUnderpaid, x402.CodePaymentOverpaid, x402.CodeWrongRecipient, x402.CodeWrongAsset, x402.CodePaymentReplayed, x402.CodePaymentRefused}

// invalidText are the codes of refused text fields (the services'
// validText and ident's): invalid_<field> for each.
func invalidText(fields ...string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = "invalid_" + f
	}
	return out
}

func with(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// routeTable is every route the server can serve, each one operation:
// New registers the rows of the services it runs (register), serves the
// market's rows that name a tool as MCP tools, and derives from the rows
// everything that describes the API.
var routeTable = []route{
	// the manual and the server's own
	{method: "GET", path: "/", raw: (*server).skill, service: svcMeta, auth: RouteOpen, summary: "this manual (Markdown); a browser asking for text/html gets the web console",
		resp: textSchema, respTypes: []string{"text/markdown; charset=utf-8", "text/html; charset=utf-8"}},
	{method: "GET", path: "/skill.md", raw: (*server).skill, service: svcMeta, auth: RouteOpen, summary: "this manual, as Markdown",
		resp: textSchema, respTypes: []string{"text/markdown; charset=utf-8"}},
	{method: "GET", path: "/health", raw: (*server).health, service: svcMeta, auth: RouteOpen, summary: "status, the court's current public key, the juror and the judgment routes", resp: healthSchema},
	{method: "GET", path: "/healthz", raw: (*server).healthz, service: svcMeta, auth: RouteOpen, summary: "liveness: {\"status\": \"ok\"}", resp: schemaFn[healthzOut]},
	{method: "GET", path: "/agentfacts", raw: (*server).agentFacts, service: svcMeta, auth: RouteOpen, summary: "a machine-readable summary of this server: functions, endpoints, receipt certification", resp: agentFactsSchema},
	{method: "GET", path: "/.well-known/agent-facts", raw: (*server).agentFacts, service: svcMeta, auth: RouteOpen, summary: "the same as /agentfacts", resp: agentFactsSchema},
	{method: "GET", path: "/.well-known/assay-keys", raw: (*server).keys, service: svcMeta, auth: RouteOpen, summary: "every key the court has signed with, and when", resp: schemaFn[receipt.KeySet]},
	{method: "GET", path: "/openapi.json", raw: (*server).openAPIDoc, service: svcMeta, auth: RouteOpen, summary: "this API as an OpenAPI 3.1 document, derived from the route table", resp: looseObject},
	{method: "GET", path: "/metrics", raw: (*server).metrics, only: func(s *server) bool { return s.cfg.Metrics != nil }, service: svcMeta, auth: RouteOpen, summary: "Prometheus metrics (when the server records them)",
		resp: textSchema, respTypes: []string{"text/plain; version=0.0.4; charset=utf-8"}},

	{method: "GET", path: protectedResourcePath, raw: (*server).protectedResource, service: svcMCP, auth: RouteOpen, summary: "OAuth protected-resource metadata (RFC 9728) of the MCP endpoint: how to send a bearer token, and where the manual says how to get one",
		resp: protectedResourceSchema},
	{method: "GET", path: protectedResourcePath + MCPPath, raw: (*server).protectedResource, service: svcMCP, auth: RouteOpen, summary: "the same as " + protectedResourcePath + " (RFC 9728's path for the resource " + MCPPath + ")",
		resp: protectedResourceSchema},
	{method: "GET", path: AgentCardPath, raw: (*server).agentCard, service: svcA2A, auth: RouteOpen, summary: "the A2A Agent Card: the services as skills, the A2A endpoint, the security schemes; signed by the court (JWS over its RFC 8785 form)",
		resp: agentCardSchema},
	{method: "POST", path: A2APath, raw: (*server).a2aEndpoint, service: svcA2A, auth: RouteOpen, summary: "A2A v1.0 JSON-RPC: SendMessage with a data part {contract_id, reason} disputes as the buyer, and the task's artifact is the verdict receipt; GetTask reads it back",
		req: jsonRPCSchema, resp: jsonRPCSchema},
	{method: "GET", path: JWKSPath, raw: (*server).jwks, service: svcMeta, auth: RouteOpen, summary: "every key the court has signed with, as a JSON Web Key Set (kid: its did:key)", resp: jwksSchema},

	// the escrow court
	{method: "GET", path: "/activity", tool: &toolSpec{name: "court_activity", title: "The court's activity", kind: read, desc: "The court's recent events, newest first, with the court's public key."}, op: view((*server).activity), service: svcCourt, auth: RouteOpen, summary: "the court's recent events, newest first",
		query: []param{limitQuery}, resp: schemaFn[activityOut], codes: []string{codeInvalidLimit}},
	{method: "POST", path: "/contracts", tool: &toolSpec{name: "create_contract", title: "Create an escrow contract", kind: additive, desc: "Create an escrow contract between a buyer and a seller: the price and the acceptance criteria (schema, assertions, checkers by sha256) that the court replays on a dispute. Answers contract_id; the buyer funds it next."}, op: mutate((*server).create), idem: idemHeader, service: svcCourt, auth: RouteOpen, summary: "create a contract: buyer, seller, price and the acceptance criteria",
		req: schemaFn[escrow.CreateRequest], resp: schemaFn[escrow.Created],
		codes: with(idemCodes, []string{escrow.ECodeInvalidDID, escrow.ECodeSameParty, escrow.ECodeInvalidPrice, escrow.ECodeInvalidCurrency,
			escrow.ECodeInvalidDeadlineTick, escrow.ECodeInvalidDeliverBy, escrow.ECodeInvalidReviewWindow, escrow.ECodeSellerBanned, escrow.ECodeMissingField,
			escrow.ECodeCheckerNotFound, escrow.ECodeUnknownChecker, escrow.ECodeInvalidSHA256, escrow.ECodeInvalidChecker}, criteriaCodes),
		hint: &hint{verb: "create", detail: "create a contract with POST; fetch one with GET /contracts/{contract_id}",
			body: map[string]any{"buyer": "did:nanda:buyer", "seller": "did:nanda:seller", "price": 50,
				"acceptance": map[string]any{"assertions": []any{map[string]any{"path": "rows", "op": "gte", "value": 100}}}},
			returns: `{"contract_id", "contract_hash", "status": "created"}`,
			also:    map[string]step{"fetch": {Method: "GET", Path: "/contracts/{contract_id}", Returns: "the contract: terms, status, hashes, verdict, receipt ids"}}}},
	{method: "GET", path: "/contracts/{id}", tool: &toolSpec{name: "get_contract", title: "Get a contract", kind: read, desc: "A contract: its terms, status (created, funded, delivered, escalated, resolved), hashes, verdict and receipt ids.", args: []toolArg{{"id", "contract_id", "the contract's id, e.g. esc-01M8TPH5D3SNQHND4Q02GH4ZCF"}}}, op: view((*server).contract), service: svcCourt, auth: RouteOpen, summary: "a contract: its terms, status, hashes, verdict and receipt ids",
		resp: schemaFn[escrow.Contract], codes: []string{escrow.ECodeContractNotFound}},
	{method: "POST", path: "/contracts/{id}/fund", tool: &toolSpec{name: "fund_contract", title: "Fund a contract", kind: destructive, desc: "The buyer locks the price in escrow (from its wallet when the currency is backed).", args: []toolArg{{"id", "contract_id", "the contract to fund"}}}, op: mutate((*server).fund), idem: idemHeader, service: svcCourt, auth: RouteParty, summary: "lock the price in escrow", bodyOptional: true,
		req: schemaFn[struct{}], resp: schemaFn[statusOut], codes: with(idemCodes, contractCodes),
		hint: &hint{verb: "fund", detail: "lock the price in escrow", body: map[string]any{}, returns: `{"status": "funded"}`}},
	{method: "POST", path: "/contracts/{id}/deliver", tool: &toolSpec{name: "deliver_work", title: "Deliver the work", kind: additive, desc: "The seller submits the work product (deliverable) and optional evidence; the buyer then accepts or disputes within the review window.", args: []toolArg{{"id", "contract_id", "the contract delivered on"}}}, op: mutate((*server).deliver), idem: idemHeader, service: svcCourt, auth: RouteParty, summary: "the seller submits the work product (and optional evidence)",
		req: schemaFn[escrow.DeliverRequest], resp: schemaFn[deliveredOut], codes: with(idemCodes, contractCodes, []string{escrow.ECodeInvalidDeliverable, escrow.ECodeMissingField}),
		hint: &hint{verb: "deliver", detail: "the seller submits the work product",
			body: map[string]any{"deliverable": map[string]any{"rows": 120}, "evidence": map[string]any{}}, returns: `{"status": "delivered", "evidence_hash"}`}},
	{method: "POST", path: "/contracts/{id}/accept", tool: &toolSpec{name: "accept_delivery", title: "Accept the delivery", kind: destructive, desc: "The buyer accepts: escrow releases to the seller. Answers the signed verdict receipt (verdict release, tier buyer-accept).", args: []toolArg{{"id", "contract_id", "the contract accepted"}}}, op: mutate((*server).accept), idem: idemHeader, service: svcCourt, auth: RouteParty, summary: "the buyer accepts; escrow releases to the seller; answers the signed receipt", bodyOptional: true,
		req: schemaFn[struct{}], resp: receiptFn, codes: with(idemCodes, contractCodes),
		hint: &hint{verb: "accept", detail: "the buyer accepts; escrow releases to the seller", body: map[string]any{}, returns: "a signed verdict receipt, verdict release, tier buyer-accept"}},
	{method: "POST", path: "/contracts/{id}/dispute", rate: RateDecisions, tool: &toolSpec{name: "dispute_delivery", title: "Dispute the delivery", kind: destructive, desc: "The buyer disputes: the court replays the acceptance criteria on the deliverable (schema and assertions, then checkers in a sandbox, a jury only for semantic criteria) and answers the signed verdict receipt: credentialSubject.verdict (release or refund), tier, checks and payout.", args: []toolArg{{"id", "contract_id", "the contract disputed"}}}, op: mutate((*server).dispute), idem: idemHeader, service: svcCourt, auth: RouteParty, summary: "the buyer disputes; the court replays the criteria and answers the signed verdict receipt", bodyOptional: true,
		req: schemaFn[escrow.DisputeRequest], resp: receiptFn, codes: with(idemCodes, contractCodes, []string{escrow.ECodeCheckersUnavailable}, invalidText("reason")),
		hint: &hint{verb: "dispute", detail: "the buyer disputes; the court replays the acceptance criteria",
			body: map[string]any{"reason": "far fewer rows than agreed"}, returns: "a signed verdict receipt: credentialSubject.verdict, tier, checks, payout"}},
	{method: "POST", path: "/contracts/{id}/resolve", tool: &toolSpec{name: "resolve_dispute", title: "Resolve an escalated dispute (operator)", kind: destructive, desc: "Operator only (Authorization: Bearer <operator token> on the HTTP request): decide an escalated dispute, release or refund. Answers the final signed verdict receipt.", args: []toolArg{{"id", "contract_id", "the escalated contract"}}}, op: mutate((*server).resolve), idem: idemHeader, service: svcCourt, auth: RouteOperator, summary: "an operator decides an escalated dispute",
		req: schemaFn[escrow.ResolveRequest], resp: receiptFn, codes: with(idemCodes, contractCodes, []string{escrow.ECodeInvalidVerdict}, invalidText("reason")),
		hint: &hint{verb: "resolve", detail: "an operator decides an escalated dispute (Authorization: Bearer <ASSAY_OPERATOR_TOKEN>)",
			body: map[string]any{"verdict": "refund", "reason": "the summary invents facts"}, returns: "the final signed verdict receipt, tier operator"}},
	{method: "GET", path: "/agents/{did}/receipts", tool: &toolSpec{name: "agent_receipts", title: "An agent's receipts", kind: read, desc: "The signed receipts an agent was party to, newest first.", args: []toolArg{{"did", "agent", "the agent's id, e.g. did:nanda:seller or a did:key"}}}, op: view((*server).agentReceipts), service: svcCourt, auth: RouteOpen, summary: "the receipts an agent was party to, newest first",
		query: []param{limitQuery}, resp: schemaFn[receipt.AgentReceipts], codes: []string{escrow.ECodeInvalidDID, codeInvalidLimit}},
	{method: "GET", path: "/agents/{did}/reputation", tool: &toolSpec{name: "agent_reputation", title: "An agent's court reputation", kind: read, desc: "An agent's standing (bans) and Beta reputation as seller and as buyer, from the court's verdicts.", args: []toolArg{{"did", "agent", "the agent's id, e.g. did:nanda:seller or a did:key"}}}, op: view((*server).reputation), service: svcCourt, auth: RouteOpen, summary: "an agent's standing and Beta reputation as seller and as buyer",
		resp: schemaFn[escrow.Reputation], codes: []string{escrow.ECodeInvalidDID}},
	{method: "GET", path: "/accounts/{id}", tool: &toolSpec{name: "get_account", title: "A ledger account", kind: read, desc: "A ledger account with its balances and entries: rail:dev, hold:escrow:{contract_id}, agent:{did}, mint:{currency}:{did}.", args: []toolArg{{"id", "account", "the account's id, e.g. hold:escrow:esc-01M8TPH5D3SNQHND4Q02GH4ZCF"}}}, op: view((*server).account), service: svcCourt, auth: RouteOpen, summary: "a ledger account: rail:dev, hold:escrow:{contract_id}, agent:{did}, mint:{currency}:{did}",
		resp: schemaFn[ledger.Account], codes: []string{escrow.ECodeInvalidAccount},
		hint: &hint{verb: "fetch", at: "/accounts", detail: "fetch a ledger account with GET /accounts/{id}: rail:dev, hold:escrow:{contract_id}, agent:{did}",
			returns: `{"id", "balances", "entries"}`}},
	{method: "GET", path: "/ledger", tool: &toolSpec{name: "ledger_audit", title: "Audit the ledger", kind: read, desc: "The sum of every account per currency: zero in each when the books balance."}, op: view((*server).ledger), service: svcCourt, auth: RouteOpen, summary: "the sum of every account per currency (zero when sound)", resp: schemaFn[ledger.Audit]},

	// receipts
	{method: "GET", path: "/receipts/{id}", op: view((*server).receipt), tool: &toolSpec{name: "get_receipt", title: "Get a receipt", kind: read, desc: "A stored receipt of any service in the bytes that were signed; format di answers its W3C Data Integrity form (eddsa-jcs-2022); log true answers {receipt, log} with its transparency log proof.", args: []toolArg{{"id", "receipt_id", "the receipt's id, e.g. urn:assay:receipt:8f3a…"}}, out: receiptOrCredential}, service: svcReceipts, auth: RouteOpen, summary: "a stored receipt in its signed bytes; ?format=di as a W3C Data Integrity credential; ?log=true as {receipt, log} with its transparency log proof",
		query: []param{{name: "format", desc: `absent (the receipt) or "di" (its W3C Data Integrity form, eddsa-jcs-2022)`, schema: &jsonschema.Schema{Type: "string", Enum: []any{"di"}}},
			{name: "log", desc: `"true": answer {"receipt": …, "log": {origin, status, index, entry, proof (C2SP tlog-proof), superseded_by}}; the Assay-Log-Status and Assay-Log-Index headers say where the receipt is in the log either way`, schema: &jsonschema.Schema{Type: "string", Enum: []any{"true", "false"}}}},
		resp: looseObject, codes: []string{codeReceiptNotFound, codeInvalidFormat, codeInvalidLog, codeLogNotKept}},
	{method: "POST", path: "/verify", rate: RateReads, op: (*server).verify, tool: &toolSpec{name: "verify_receipt", title: "Verify a receipt", kind: read, desc: "Check a receipt's signature against this court's keys (every key it has signed with, each in its window): valid, or the reason it is not.", in: verifyToolIn}, service: svcReceipts, auth: RouteOpen, summary: "check a receipt's signature against this court's keys: {\"receipt\": …} or the bare receipt",
		req: verifyBodySchema, resp: schemaFn[receipt.Result], codes: []string{codeNotAReceipt},
		hint: &hint{verb: "verify", detail: "check a receipt's signature against this court's keys; a body that is not a receipt answers 422 not_a_receipt",
			body: map[string]any{"receipt": "<the receipt object>"}, returns: `{"valid": true|false, "reason"}`}},

	// checkers and replays
	{method: "POST", path: "/checkers", rate: RateUploads, op: putChecker, idem: idemHeader, tool: &toolSpec{name: "upload_checker", title: "Upload a checker", kind: additive, desc: "Upload a checker that acceptance criteria and listings name by sha256: a WebAssembly module (wasip1 command) as wasm_base64, or Python assertion source as python. Answers its sha256, kind and size.", in: checkerToolIn, request: checkerToolRequest}, bodyLimit: replays.MaxCheckerBytes, service: svcCheckers, auth: RouteOpen, summary: "upload a checker: raw WebAssembly (application/wasm) or Python source (text/x-python)",
		reqTypes: []string{"application/wasm", "text/x-python"}, resp: schemaFn[replays.Info], created: true,
		codes: with(idemCodes, []string{codeUnsupportedCheckerKind, escrow.ECodeInvalidChecker, replays.ECodeCheckerTooLarge, replays.ECodeUnsupportedKind, replays.ECodeUploadQuota}),
		hint: &hint{verb: "upload", detail: "upload a wasm checker as the raw body with Content-Type: application/wasm, or Python source with text/x-python; name it in acceptance.checkers by sha256",
			returns: `{"sha256", "kind", "size"}`}},
	{method: "GET", path: "/checkers/{sha256}", op: view((*server).checker), tool: &toolSpec{name: "get_checker", title: "Get a checker", kind: read, desc: "A stored checker's metadata: sha256, kind, size.", args: []toolArg{{"sha256", "sha256", "the checker's sha256, 64 hex digits"}}}, service: svcCheckers, auth: RouteOpen, summary: "a stored checker's metadata",
		resp: schemaFn[replays.Info], codes: []string{escrow.ECodeInvalidSHA256, escrow.ECodeCheckerNotFound}},
	{method: "POST", path: "/replays", rate: RateDecisions, op: (*server).replays, bodyLimit: replays.MaxBodyBytes, tool: &toolSpec{name: "replay_checker", title: "Replay a checker", kind: read, desc: "Replay one stored checker on many artifacts in parallel, in the sandbox under fuel and memory limits; outcomes are memoised (no_memo runs every one). Answers one outcome per artifact, in order: kind (pass, fail, trap, fuel_exhausted, …), exit code, fuel used, output."}, service: svcReplays, auth: RouteOpen, summary: "replay one stored checker on many artifacts; ?spread=true spreads the batch over every node",
		query: []param{{name: "spread", desc: "true spreads the batch over every node sharing the store", schema: &jsonschema.Schema{Type: "boolean"}}},
		req:   schemaFn[replays.Request], resp: schemaFn[replays.Response],
		codes: []string{replays.ECodeArtifactTooLarge, replays.ECodeBatchTimeout, replays.ECodeBatchTooLarge, replays.ECodeCheckerNotFound, replays.ECodeCheckersUnavailable,
			replays.ECodeInvalidArtifact, replays.ECodeInvalidChecker, replays.ECodeInvalidEncoding, replays.ECodeInvalidEvidence, replays.ECodeMissingField, replays.ECodeReplayInvalid,
			escrow.ECodeInvalidSHA256, escrow.ECodeUnknownChecker},
		hint: &hint{verb: "replay", detail: "replay one stored checker on many artifacts, in parallel; outcomes are memoised (no_memo: true runs every one); ?spread=true spreads the batch over every node sharing the store",
			body: map[string]any{"checker": map[string]any{"sha256": "<sha256 from POST /checkers>", "fuel": 500000000, "memory_mib": 64},
				"artifacts": []any{map[string]any{"rows": 120}, "a string artifact is given as its contents"}},
			returns: `{"count", "memo_hits", "outcomes": [one outcome per artifact, in order], "trimmed": [outcomes whose stdout and stderr were dropped past 8 MiB of output in all; their hashes stay]}`}},

	// the artifact market
	{method: "GET", path: "/market/listings", op: view((*server).searchListings), service: svcMarket, auth: RouteOpen, summary: "search listings by problem text or fingerprint (search_listings)",
		query: []param{{name: "query", desc: "the problem as text", schema: &jsonschema.Schema{Type: "string"}},
			{name: "query_fingerprint", desc: "sha256 of the problem's normalised token set", schema: &jsonschema.Schema{Type: "string"}}, limitQuery,
			{name: "cursor", desc: "without query and query_fingerprint, the next page of the browse: next_cursor of the page before", schema: &jsonschema.Schema{Type: "string"}}},
		resp: schemaFn[market.Results], codes: marketSearchCodes},
	{method: "POST", path: "/market/search", rate: RateReads, op: viewBody((*server).search), tool: &toolSpec{name: "search_listings", title: "Search listings", kind: read, desc: "Search active listings by query (problem text) or query_fingerprint (sha256 of the normalised token set, computed locally). Exact fingerprint hits first; every result carries match confidence, class, constraint_diff, warning and basis; no_reliable_match is true when no result is exact or strong."}, service: svcMarket, auth: RouteOpen, summary: "search listings, the query in the body (search_listings)",
		req: schemaFn[market.SearchRequest], resp: schemaFn[market.Results], codes: marketSearchCodes},
	{method: "GET", path: "/market/listings/{id}", op: view((*server).listing), tool: &toolSpec{name: "get_listing", title: "Get a listing", kind: read, desc: "A listing's full detail with its seller's numeric reputation; the artifact is withheld until purchase.", args: []toolArg{{"id", "listing_id", "the listing's id, e.g. lst_8acce3be8637"}}}, service: svcMarket, auth: RouteOpen, summary: "a listing, without its artifact (get_listing)",
		resp: schemaFn[market.View], codes: []string{market.ECodeListingNotFound}},
	{method: "POST", path: "/market/listings", rate: RateUploads, op: mutate((*server).publish), idem: idemHeader, tool: &toolSpec{name: "publish_listing", title: "Publish a listing", kind: additive, desc: "Publish an artifact as agent. With a checker (python source, or a wasm checker's sha256) the market replays it on the artifact first: a pass lists at level 1 with no bond, a failure refuses the listing. Without one it is level 2 and a bond of max(20% of price, $0.50) is escrowed from the seller's wallet. price_usd is a decimal string or number with at most six fractional digits."}, service: svcMarket, auth: RouteAgent, write: true, summary: "publish a listing: level 1 with a checker, level 2 with a bond (publish_listing)",
		req: schemaFn[market.PublishRequest], resp: schemaFn[market.Published], created: true,
		codes: with(marketIdem, []string{market.ECodeArtifactTooLarge, market.ECodeCheckerFailed, market.ECodeCheckerRequired, market.ECodeCheckerTooLarge, market.ECodeCheckersUnavailable,
			market.ECodeInsufficientFunds, market.ECodeInvalidAmount, market.ECodeAmountTooLarge, market.ECodeInvalidArtifact, market.ECodeInvalidArtifactType, market.ECodeInvalidChecker,
			market.ECodeInvalidEncoding, market.ECodeInvalidLevel, market.ECodeInvalidProblemStatement, market.ECodeLevelReserved, market.ECodeMarketLimitExceeded, market.ECodeMissingField,
			market.ECodeNoChecker, market.ECodeUnknownChecker, market.ECodeUnsupportedCheckerKind, market.ECodeWalletLimitExceeded, escrow.ECodeInvalidSHA256, replays.ECodeUploadQuota},
			invalidText("agent", "title", "license_terms", "problem_statement"))},
	{method: "POST", path: "/market/listings/{id}/purchase", op: mutate((*server).purchase), idem: idemHeader, paid: true, tool: &toolSpec{name: "purchase", title: "Buy a listing", kind: destructive, desc: "Buy a listing as agent: debits price + 3% fee, delivers the artifact at once with a signed receipt and the recourse terms; proceeds are held until the challenge window closes.", args: []toolArg{{"id", "listing_id", "the listing to buy"}}}, service: svcMarket, auth: RouteAgent, write: true, summary: "buy a listing: price + 3% fee from the buyer's wallet; answers the artifact and a receipt (purchase)",
		req: schemaFn[market.PurchaseRequest], resp: schemaFn[market.Bought], created: true,
		codes: with(paidCodes, paidIdem, []string{market.ECodeListingNotFound, market.ECodeListingNotActive, market.ECodeAlreadyPurchased, market.ECodeOwnListing, market.ECodeInsufficientFunds,
			market.ECodeArtifactNotDeliverable, market.ECodeMissingField, market.ECodeWalletLimitExceeded, market.ECodeMarketLimitExceeded}, invalidText("agent", "purpose"))},
	{method: "POST", path: "/market/listings/{id}/deactivate", op: mutate((*server).deactivate), idem: idemHeader, tool: &toolSpec{name: "deactivate_listing", title: "Retire a listing", kind: destructive, desc: "Retire a listing as its seller; a level-2 bond comes back once no challenge window is open.", args: []toolArg{{"id", "listing_id", "the listing to retire"}}}, service: svcMarket, auth: RouteAgent, write: true, summary: "the seller retires a listing; its bond returns (deactivate_listing)",
		req: schemaFn[market.DeactivateRequest], resp: schemaFn[deactivatedOut],
		codes: with(marketIdem, []string{market.ECodeListingNotFound, market.ECodeListingNotActive, market.ECodeNotSeller, market.ECodeMissingField}, invalidText("agent"))},
	{method: "POST", path: "/market/listings/{id}/challenge", rate: RateDecisions, op: mutate((*server).challengeListing), idem: idemHeader, tool: &toolSpec{name: "challenge_listing", title: "Challenge a purchase", kind: destructive, desc: "Challenge a purchase within its window, with evidence (a failing input, a counterexample, checker output). At levels 1 and 3 the seller's checker is replayed with the evidence at /in/evidence: a failing replay upholds the challenge at once (refund, listing pulled); otherwise the operator decides.", args: []toolArg{{"id", "listing_id", "the listing bought"}}}, service: svcMarket, auth: RouteAgent, write: true, summary: "the buyer challenges a purchase with evidence (challenge_listing)",
		req: schemaFn[market.ChallengeRequest], resp: schemaFn[challengedOut], created: true,
		codes: with(marketIdem, []string{market.ECodeListingNotFound, market.ECodePurchaseNotFound, market.ECodeAlreadyChallenged, market.ECodeChallengeWindowClosed, market.ECodePurchaseClosed,
			market.ECodeEvidenceTooLarge, market.ECodeInvalidEvidence, market.ECodeMissingField, market.ECodeCheckersUnavailable}, invalidText("agent", "reason"))},
	{method: "POST", path: "/market/listings/{id}/replay", rate: RateDecisions, op: viewBody((*server).replayListing), service: svcMarket, auth: RouteAgent, summary: "a buyer replays a level-1 listing's checker on its artifact",
		req: schemaFn[market.ReplayRequest], resp: schemaFn[market.Replayed],
		codes: []string{market.ECodeListingNotFound, market.ECodePurchaseNotFound, market.ECodeNoChecker, market.ECodeCheckersUnavailable, market.ECodeMissingField, "invalid_agent"}},
	{method: "GET", path: "/market/purchases/{id}", op: view((*server).purchaseOf), service: svcMarket, auth: RouteOpen, summary: "a purchase", resp: schemaFn[market.Purchase], codes: []string{market.ECodePurchaseNotFound}},
	{method: "GET", path: "/market/challenges/{id}", op: view((*server).challengeOf), service: svcMarket, auth: RouteOpen, summary: "a challenge", resp: schemaFn[market.Challenge], codes: []string{market.ECodeChallengeNotFound}},
	{method: "POST", path: "/market/challenges/{id}/resolve", op: mutate((*server).resolveChallenge), idem: idemHeader, tool: &toolSpec{name: "resolve_challenge", title: "Resolve a challenge (operator)", kind: destructive, desc: "Operator only (Authorization: Bearer <operator token> on the HTTP request): uphold or reject an open challenge.", args: []toolArg{{"id", "challenge_id", "the challenge to decide"}}, out: schemaFn[challengedOut], post: withReceipt}, service: svcMarket, auth: RouteOperator, write: true, summary: "an operator upholds or rejects a challenge (resolve_challenge)",
		req: schemaFn[market.ResolveRequest], resp: schemaFn[resolvedOut],
		codes: with(marketIdem, []string{market.ECodeChallengeNotFound, market.ECodeChallengeNotOpen, market.ECodeInvalidVerdict}, invalidText("reason"))},
	{method: "POST", path: "/market/tick", rate: RateDecisions, op: viewBody((*server).tick), service: svcMarket, auth: RouteOperator, write: true, summary: "an operator settles due purchases and samples level-1 listings for replay",
		req: schemaFn[market.TickRequest], resp: schemaFn[market.Ticked], bodyOptional: true, codes: []string{market.ECodeInvalidSamples, market.ECodeCheckersUnavailable}},
	{method: "GET", path: "/market/intents", op: view((*server).unresolvedIntents), service: svcMarket, auth: RouteOperator, summary: "an operator lists the payments on the rail whose outcome is not resolved yet, oldest first",
		query: []param{{name: "limit", desc: "the most intents to list, 1 to 1000 (default 1000)", schema: &jsonschema.Schema{Type: "integer", Minimum: ptr(1.0)}}},
		resp:  schemaFn[market.UnresolvedIntents], codes: []string{codeInvalidLimit, market.ECodeInvalidLimit}},
	{method: "GET", path: "/market/agents/{agent}", op: view((*server).agentProfile), tool: &toolSpec{name: "agent_profile", title: "Agent reputation", kind: read, desc: "An agent's public numeric reputation: trades_sold, challenges_lost, challenge_loss_rate, stake_forfeited_usd, account_age_days.", args: []toolArg{{"agent", "agent_id", "the agent, e.g. g17-mathema"}}}, service: svcMarket, auth: RouteOpen, summary: "an agent's trading record (agent_profile)", resp: schemaFn[market.Profile], codes: invalidText("agent")},
	{method: "GET", path: "/market/stats", op: view((*server).stats), tool: &toolSpec{name: "marketplace_stats", title: "Market statistics", kind: read, desc: "Live market totals; house (seed=true) agents are left out of organic-demand figures."}, service: svcMarket, auth: RouteOpen, summary: "the market's totals (marketplace_stats)", resp: schemaFn[market.Stats], codes: []string{market.ECodeStatsOverflow}},
	{method: "GET", path: "/market/wallets/{agent}", op: view((*server).wallet), service: svcMarket, auth: RouteOpen, summary: "an agent's wallet", resp: schemaFn[market.Wallet], codes: invalidText("agent")},
	{method: "POST", path: "/market/wallets/{agent}/deposit", op: mutate((*server).deposit), idem: idemHeader, paid: true, service: svcMarket, auth: RouteAgentOrOperator, write: true, summary: "deposit into a wallet from the dev rail",
		req: schemaFn[market.AmountRequest], resp: schemaFn[walletMovedOut], created: true,
		codes: with(paidCodes, paidIdem, []string{market.ECodeInvalidAmount, market.ECodeAmountTooLarge, market.ECodeDepositUnavailable, market.ECodeWalletLimitExceeded, market.ECodeMarketLimitExceeded, market.ECodeMissingField}, invalidText("agent"))},
	{method: "POST", path: "/market/wallets/{agent}/withdraw", op: mutate((*server).withdraw), idem: idemHeader, service: svcMarket, auth: RouteAgent, write: true, summary: "withdraw from a wallet to the rail",
		req: schemaFn[market.AmountRequest], resp: schemaFn[walletMovedOut], created: true,
		codes: with(paidIdem, []string{market.ECodeInvalidAmount, market.ECodeAmountTooLarge, market.ECodeInsufficientFunds, market.ECodeMissingField}, invalidText("agent"))},
	{method: "GET", path: "/market/fingerprint", op: view((*server).fingerprint), service: svcMarket, auth: RouteOpen, summary: "the fingerprint, tokens and constraints of a problem text, as the market computes them",
		query: []param{{name: "text", desc: "the problem statement", schema: &jsonschema.Schema{Type: "string"}}}, resp: schemaFn[fingerprintOut]},
	{method: "POST", path: "/market/clock", op: viewBody((*server).clock), only: func(s *server) bool { return s.cfg.AdvanceMarketClock != nil }, service: svcMarket, auth: RouteOperator, summary: "tests only (ASSAY_TEST_CLOCK=1): move the market's clock forward",
		req: schemaFn[clockIn], resp: schemaFn[clockOut], codes: []string{codeInvalidDuration}},
	{method: "POST", path: MCPPath, raw: (*server).mcpEndpoint, anyMethod: true, service: svcMCP, auth: RouteOpen, summary: "every service's tools over MCP (JSON-RPC 2.0; streamable HTTP, stateless, JSON responses; 2026-07-28 and earlier revisions); credentials as the REST routes take them",
		req: jsonRPCSchema, resp: jsonRPCSchema, respTypes: []string{"application/json"},
		codes: with([]string{codeInvalidRequest, codeNotAcceptable, codeSessionNotFound, codeInvalidArguments, codeAgentMismatch, codeInsufficientScope}, mattersAuthCodes)},

	// judgment matters
	{method: "POST", path: mattersBase + "/open", tool: &toolSpec{name: "open_matter", title: "Open a Matter", kind: additive, desc: "Open a judgment Matter before a spend, a publication or an irreversible action: the question, the action_digest (sha256 hex of the exact action), stakes, a deadline, a risk class and the verdict_schema the one verdict must match. Signed mode binds requester_id to the caller's key."}, op: judgment(Matters.Open), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "open a Matter before a spend, publication or irreversible action",
		req: matterReq[matters.OpenRequest], resp: schemaFn[matters.Changed], created: true, codes: matterCodes,
		hint: &hint{verb: "open", detail: "open a Matter before a spend, publication or irreversible action; signed mode binds requester_id to your key id and requires action_digest (sign every request: RFC 9421 Ed25519 covering @method @path @authority content-digest, with created, keyid, nonce; see /skill.md)",
			body: map[string]any{"action_digest": "<sha256 hex of the exact action>", "question": "may we pay invoice 42?", "stakes_usdc": "12.5",
				"deadline": "2026-05-01T13:00:00Z", "risk_class": "spend|publish|irreversible",
				"verdict_schema":  map[string]any{"type": "object", "required": []any{"approve"}, "properties": map[string]any{"approve": map[string]any{"type": "boolean"}}},
				"idempotency_key": "1 to 256 bytes"},
			returns: `201 {"matter": <redacted projection>, "receipt": <matter_opened>}`}},
	{method: "POST", path: mattersBase + "/assign", tool: &toolSpec{name: "assign_solver", title: "Assign the solver", kind: additive, desc: "The requester or an operator assigns the one solver (a solver principal of the tenant), asserting conflict_free."}, op: judgment(Matters.Assign), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "the requester or an operator assigns the one solver",
		req: matterReq[matters.AssignRequest], resp: schemaFn[matters.Changed], codes: matterCodes,
		hint: &hint{verb: "assign", detail: "the requester or an operator assigns the one solver (a solver principal of the tenant), asserting conflict_free",
			body:    map[string]any{"matter_id": "mat-…", "solver_id": "<solver key id>", "solver_kind": "human|model", "qualification": "optional, at most 1024 bytes", "conflict_free": true, "idempotency_key": "…"},
			returns: `{"matter", "receipt": <solver_assigned>}`}},
	{method: "POST", path: mattersBase + "/accept", tool: &toolSpec{name: "accept_assignment", title: "Accept an assignment", kind: additive, desc: "The assigned solver accepts the assignment."}, op: judgment(Matters.Accept), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "the assigned solver accepts the assignment",
		req: matterReq[matters.AcceptRequest], resp: schemaFn[matters.Changed], codes: matterCodes,
		hint: &hint{verb: "accept", detail: "the assigned solver accepts the assignment", body: map[string]any{"matter_id": "mat-…", "idempotency_key": "…"}, returns: `{"matter", "receipt": <solver_accepted>}`}},
	{method: "POST", path: mattersBase + "/verdict", tool: &toolSpec{name: "submit_verdict", title: "Submit the verdict", kind: additive, desc: "The accepted solver submits the one verdict: it must match verdict_schema and carry the Matter's action_digest; the first valid one wins and the Matter is judged."}, op: judgment(Matters.Verdict), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "the accepted solver submits the one verdict",
		req: matterReq[matters.VerdictRequest], resp: schemaFn[matters.Changed], codes: matterCodes,
		hint: &hint{verb: "submit_verdict", detail: "the accepted solver submits the one verdict; it must match verdict_schema and carry the Matter's action_digest; the first valid one wins",
			body:    map[string]any{"matter_id": "mat-…", "solver_kind": "human|model", "action_digest": "<the Matter's>", "verdict": map[string]any{"approve": true}, "idempotency_key": "…"},
			returns: `{"matter", "receipt": <verdict_submitted, verdict_schema_ok true>}`}},
	{method: "POST", path: mattersBase + "/settle", tool: &toolSpec{name: "settle_matter", title: "Settle a Matter", kind: destructive, desc: "The requester or an operator marks a judged Matter settled (solver_paid is a flag; no funds move)."}, op: judgment(Matters.Settle), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "the requester or an operator marks a judged Matter settled",
		req: matterReq[matters.SettleRequest], resp: schemaFn[matters.Changed], codes: matterCodes,
		hint: &hint{verb: "settle", detail: "the requester or an operator marks a judged Matter settled: solver_paid is a flag, no funds move",
			body: map[string]any{"matter_id": "mat-…", "idempotency_key": "…"}, returns: `{"matter", "receipt": <matter_settled>}`}},
	{method: "POST", path: mattersBase + "/dispute", tool: &toolSpec{name: "dispute_matter", title: "Dispute a Matter", kind: destructive, desc: "The requester or an operator disputes an open or judged Matter (terminal)."}, op: judgment(Matters.Dispute), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "the requester or an operator disputes an open or judged Matter (terminal)",
		req: matterReq[matters.DisputeRequest], resp: schemaFn[matters.Changed], codes: matterCodes,
		hint: &hint{verb: "dispute", detail: "the requester or an operator disputes an open or judged Matter (terminal)",
			body:    map[string]any{"matter_id": "mat-…", "reason": "1 to 2048 bytes", "action_digest": "<the Matter's>", "idempotency_key": "…"},
			returns: `{"matter", "receipt": <matter_disputed>}`}},
	{method: "POST", path: mattersBase + "/tick", tool: &toolSpec{name: "expire_matters", title: "Expire overdue Matters", kind: destructive, desc: "An operator expires the tenant's open Matters at or past their deadline."}, op: judgment(Matters.Tick), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "an operator expires the tenant's open Matters at or past their deadline",
		req: matterReq[matters.TickRequest], resp: schemaFn[matters.Ticked], codes: matterCodes,
		hint: &hint{verb: "tick", detail: "an operator expires the tenant's open Matters at or past their deadline; a replay answers the original receipts",
			body: map[string]any{"idempotency_key": "…"}, returns: `{"evaluated_at", "expired", "receipts": <matter_expired…>}`}},
	{method: "GET", path: mattersBase, tool: &toolSpec{name: "list_matters", title: "The caller's open Matters", kind: read, desc: "The caller's open Matters."}, op: matterList(false), service: svcMatters, auth: RoutePrincipal, summary: "the caller's open Matters", resp: matterListSchema, codes: matterCodes},
	{method: "GET", path: mattersBase + "/all", tool: &toolSpec{name: "list_all_matters", title: "Every Matter the caller may see", kind: read, desc: "Every Matter the caller may see: the private record for its parties, else the redacted projection."}, op: matterList(true), service: svcMatters, auth: RoutePrincipal, summary: "every Matter the caller may see", resp: matterListSchema, codes: matterCodes},
	{method: "GET", path: mattersBase + "/{id}", tool: &toolSpec{name: "get_matter", title: "Get a Matter", kind: read, desc: "A Matter: the private record for its parties, else the redacted projection.", args: []toolArg{{"id", "matter_id", "the Matter's id, e.g. mat-01J…"}}}, op: view((*server).matterGet), service: svcMatters, auth: RoutePrincipal, summary: "a Matter: the private record for its parties, else the redacted projection", resp: matterOutSchema, codes: matterCodes},
	{method: "GET", path: mattersBase + "/{id}/receipts", tool: &toolSpec{name: "matter_receipts", title: "A Matter's receipt chain", kind: read, desc: "A Matter's signed receipts, oldest first: each names the one before it.", args: []toolArg{{"id", "matter_id", "the Matter's id, e.g. mat-01J…"}}}, op: view((*server).matterReceipts), service: svcMatters, auth: RoutePrincipal, summary: "a Matter's receipt chain, oldest first", resp: schemaFn[matterReceiptsOut], codes: matterCodes},

	// the judgment exchange (exchange.go)
	{method: "POST", path: mattersBase + "/exchange/solvers", tool: &toolSpec{name: "register_solver", title: "Register a solver", kind: additive, desc: "Register or update a solver of the judgment exchange: kind, lineage, qualifications, conflicts."}, op: judgment(Matters.RegisterSolver), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "register or update a solver of the exchange: kind, lineage, qualifications, conflicts",
		req: matterReq[matters.RegisterSolverRequest], resp: looseObject, created: true, codes: exchangeCodes},
	{method: "GET", path: mattersBase + "/exchange/solvers/{id}", tool: &toolSpec{name: "solver_profile", title: "A solver's profile", kind: read, desc: "A solver's profile: registration, stakes and calibration.", args: []toolArg{{"id", "solver_id", "the solver's principal key id"}}}, op: view((*server).solverProfile), service: svcMatters, auth: RoutePrincipal, summary: "a solver's profile: registration, stakes and calibration",
		resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/open", tool: &toolSpec{name: "open_quorum_matter", title: "Open a quorum Matter", kind: additive, desc: "Open a quorum Matter: several solvers, commit-reveal, stakes."}, op: judgment(Matters.OpenQuorum), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "open a quorum Matter: several solvers, commit-reveal, stakes",
		req: matterReq[matters.QuorumOpenRequest], resp: looseObject, created: true, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/assign", tool: &toolSpec{name: "assign_seat", title: "Seat a solver", kind: additive, desc: "Seat a solver on a quorum Matter."}, op: judgment(Matters.AssignSeat), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "seat a solver on a quorum Matter",
		req: matterReq[matters.SeatRequest], resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/accept", tool: &toolSpec{name: "accept_seat", title: "Accept a seat", kind: additive, desc: "A seated solver accepts its seat."}, op: judgment(Matters.AcceptSeat), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "a seated solver accepts its seat",
		req: matterReq[matters.AcceptRequest], resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/commit", tool: &toolSpec{name: "commit_verdict", title: "Commit to a verdict", kind: additive, desc: "A seated solver commits to its verdict: a hash of the verdict and a salt."}, op: judgment(Matters.Commit), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "a seated solver commits to its verdict (a hash)",
		req: matterReq[matters.CommitRequest], resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/reveal", tool: &toolSpec{name: "reveal_verdict", title: "Reveal a verdict", kind: additive, desc: "A solver reveals the verdict it committed to, with its salt."}, op: judgment(Matters.Reveal), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "a solver reveals the verdict it committed to, with its salt",
		req: matterReq[matters.RevealRequest], resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/appeal", tool: &toolSpec{name: "appeal_matter", title: "Appeal a quorum Matter", kind: destructive, desc: "Appeal a judged quorum Matter to the court; the appeal fee is taken from the appellant."}, op: judgment(Matters.Appeal), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "appeal a judged quorum Matter to the court",
		req: matterReq[matters.AppealRequest], resp: looseObject, codes: exchangeCodes},
	{method: "POST", path: mattersBase + "/exchange/observe", tool: &toolSpec{name: "observe_outcome", title: "Record an observed outcome", kind: additive, desc: "Record the observed outcome of a judged Matter, for the solvers' calibration."}, op: judgment(Matters.Observe), idem: idemBody, service: svcMatters, auth: RoutePrincipal, summary: "record the observed outcome of a judged Matter, for the solvers' calibration",
		req: matterReq[matters.ObserveRequest], resp: looseObject, codes: exchangeCodes},

	// the transparency log (tlog.go)
	{method: "GET", path: "/log/checkpoint", raw: (*server).logCheckpoint, only: keepsLog, service: svcLog, auth: RouteOpen, summary: "the log's latest checkpoint: a C2SP signed note (origin, size, root hash), signed by the log's key and cosigned by its witnesses",
		resp: textSchema, respTypes: []string{"text/plain; charset=utf-8"}, codes: []string{translog.ECodeNoCheckpoint}},
	{method: "GET", path: "/log/key", op: view((*server).logKey), only: keepsLog, service: svcLog, auth: RouteOpen, summary: "the log's origin, its signed-note verifier key, its witnesses' keys and the quorum of them a checkpoint carries",
		resp: schemaFn[translog.Key]},
	// a tile path spans several segments: one row per count (tlog.go)
	logTile(2), logTile(3), logTile(4), logTile(5), logTile(6), logTile(7), logTile(8),

	// the web console
	{method: "GET", path: "/console", raw: (*server).console, service: svcConsole, auth: RouteOpen, summary: "the web console", resp: textSchema, respTypes: []string{"text/html; charset=utf-8"}},
	{method: "GET", path: "/console/{file}", raw: (*server).consoleFile, service: svcConsole, auth: RouteOpen, summary: "one of the console's files",
		resp: textSchema, respTypes: []string{"text/html; charset=utf-8", "text/css; charset=utf-8", "text/javascript; charset=utf-8"}},
}

// looseMatterSchema is a Matter as the judgment routes and their tools
// answer it: the private record for its parties, else the redacted
// projection. It names no fields, because the MCP SDK takes an output
// schema only when no part of it appears twice, and the precise one
// (matterSchema) shares the verdict's schema between its branches.
func looseMatterSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "a Matter: the private record for its parties, else the redacted projection (matter_id, status, question_sha256, …)"}
}

func matterOutSchema() *jsonschema.Schema {
	s := schemaFn[matterOut]()
	s.Properties["matter"] = looseMatterSchema()
	return s
}

func matterListSchema() *jsonschema.Schema {
	s := schemaFn[matterListOut]()
	s.Properties["matters"] = &jsonschema.Schema{Type: "array", Items: looseMatterSchema()}
	return s
}

// criteriaCodes are the refusals of acceptance criteria, by adjudicate.
var criteriaCodes = []string{adjudicate.EInvalidSchema, adjudicate.EInvalidAssertion, adjudicate.EInvalidCriteria, adjudicate.EInvalidDeliverable}

// marketSearchCodes are a search's refusals.
var marketSearchCodes = []string{market.ECodeInvalidFingerprint, market.ECodeInvalidLimit, codeInvalidLimit, "invalid_query", market.ECodeScanLimit}
