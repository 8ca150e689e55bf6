package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
)

// MCPPath is where every service's MCP tools are served (streamable
// HTTP, stateless: the 2026-07-28 revision and the ones before it).
const MCPPath = "/mcp"

// toolListTTL is how long a client may keep tools/list and
// server/discover answers (2026-07-28's ttlMs): the tools change only
// when the server restarts with other services.
const toolListTTL = 10 * time.Minute

// The MCP tools' outputs where the service answers a map.
type (
	deactivatedOut struct {
		Listing         market.View `json:"listing"`
		BondReturnedUSD market.USD  `json:"bond_returned_usd"`
	}
	challengedOut struct {
		Challenge market.Challenge `json:"challenge"`
		Purchase  market.Purchase  `json:"purchase"`
		Receipt   json.RawMessage  `json:"receipt"`
	}
)

// schemaTypes are how the market's wire types read in JSON Schema. A
// json.RawMessage has no schema of its own (an empty schema, which
// encodes as the boolean true that stock clients refuse): rawSchemas says
// what each raw property is, by name, and schemaOf refuses a raw property
// it does not name.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): rawSchema,
	reflect.TypeFor[market.USD](): {Type: "number", Minimum: ptr(0.0),
		Description: "US dollars, exact to the micro-dollar (at most six fractional digits)"},
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
}

// rawSchema marks a json.RawMessage in a derived schema (For clones it,
// so the mark is its comment) until rawSchemas replaces it.
var rawSchema = &jsonschema.Schema{Comment: rawMark}

const rawMark = "assay: raw JSON"

func isRaw(s *jsonschema.Schema) bool { return s != nil && s.Comment == rawMark }

// amountSchema is an amount a client states: a decimal string, parsed
// exactly, or a JSON number written with no exponent.
func amountSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: desc + ". US dollars as a decimal string (exact, e.g. \"2.50\") or a JSON number without exponent; at most six fractional digits, never rounded",
		AnyOf: []*jsonschema.Schema{
			{Type: "string", Pattern: `^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$`},
			{Type: "number", Minimum: ptr(0.0)},
		},
	}
}

// jsonValue is any JSON value but null, spelled out so that every
// branch has a type.
func jsonValue(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{
		{Type: "string"}, {Type: "object"}, {Type: "array"}, {Type: "number"}, {Type: "boolean"},
	}}
}

// receiptSchema is a signed receipt as the market answers it.
var receiptSchema = func() *jsonschema.Schema {
	s := schemaOf[receipt.Receipt]()
	s.Description = "the signed receipt (W3C VC shape): verify it offline with assay verify or POST /verify"
	s.AdditionalProperties = nil // a receipt's own package says what it holds
	return s
}()

// rawSchemas are the schemas of the raw properties, by name.
var rawSchemas = map[string]*jsonschema.Schema{
	"price_usd":              amountSchema("the listing's price"),
	"est_recompute_cost_usd": amountSchema("what recomputing the artifact would cost a buyer, shown in search results; 0 when omitted"),
	"artifact": jsonValue("the artifact. With encoding json (the default) any JSON value: a string is delivered and checked as its text, " +
		"anything else as its JSON text. With encoding base64 a string of standard base64, for bytes that are not UTF-8 text. " +
		"At most " + fmt.Sprint(market.MaxArtifactBytes) + " bytes; withheld until purchase, then delivered in the form it was published"),
	"evidence": jsonValue("the evidence: a failing input, a counterexample or checker output. A string is given to the seller's checker " +
		"at /in/evidence as its text, anything else as its JSON text; at most " + fmt.Sprint(market.MaxEvidenceBytes) + " bytes of UTF-8"),
	"credentialSubject": {Type: "object", Description: "what the receipt attests, canonicalised with RFC 8785 and hashed into proof.subjectHash"},
	"receipt":           nil, // receiptSchema, set by init
}

func init() { rawSchemas["receipt"] = receiptSchema }

// argDescriptions describe the tools' arguments that the market's types
// carry without a description, by "tool.path" or by path, where a path
// is a property's name, or its parent's and its own joined by a dot.
var argDescriptions = map[string]string{
	"publish_listing.agent":     "the seller's agent id; a level-2 bond is escrowed from its wallet",
	"purchase.agent":            "the buyer's agent id; its wallet pays price + 3% fee",
	"deactivate_listing.agent":  "the seller that published the listing",
	"challenge_listing.agent":   "the buyer that bought the listing",
	"challenge_listing.reason":  "why the artifact fails, for the record and the operator",
	"resolve_challenge.reason":  "the operator's reasons, recorded in the resolution",
	"title":                     "a one-line title buyers see",
	"problem_statement":         "the problem the artifact solves, as text; buyers find it by its fingerprint (sha256 of the normalised token set) or by words",
	"encoding":                  "how artifact is sent: json (the default) or base64",
	"artifact_type":             "what the artifact is",
	"license_terms":             "the license, in free text; house agents' listings get seed=true",
	"checker":                   "a checker, for level 1: the market replays it on the artifact before publication and on challenges; omit for level 2 (bonded)",
	"checker.kind":              "python or wasm; inferred from source or sha256 when omitted",
	"checker.source":            "python assertion source: completion is pass, an exception fails",
	"checker.sha256":            "the sha256 of a checker uploaded with POST /checkers",
	"checker.fuel":              "the fuel limit of a run (instructions, deterministic); the default when omitted",
	"checker.memory_mib":        "the memory limit of a run in MiB; the default when omitted",
	"verification_level":        "1 (a checker) or 2 (a bond); inferred when omitted; 3 is earned by replays, 4 is reserved",
	"purpose":                   "the purpose memo, written into the receipt for the operator's compliance record",
	"resolve_challenge.verdict": "uphold (refund the buyer, pay the bond, pull the listing) or reject (the purchase settles)",
	"query":                     "the problem as text, matched by its words and constraints",
	"query_fingerprint":         "sha256 of the normalised token set of the problem, computed locally so that the text never leaves the caller",
	"limit":                     "the most results to answer; the market's default when omitted",
	"cursor":                    "without query and query_fingerprint, the active listings are browsed newest first: next_cursor of one page asks for the next",

	// the court
	"buyer":                   "the buyer's agent id (a did:key when the court is signed): it funds, and accepts or disputes",
	"seller":                  "the seller's agent id: it delivers, and is paid on release",
	"currency":                "the price's currency: credits (notional) when omitted, or usd-micro, backed by the buyer's market wallet",
	"deliver_by":              "RFC 3339: after it, a funded contract with nothing delivered returns the escrow to the buyer",
	"reason":                  "why, in a sentence, for the record",
	"resolve_dispute.verdict": "release (pay the seller) or refund (return the escrow to the buyer)",

	// judgment matters
	"idempotency_key":              "1 to 256 bytes: a retry with the same key and body answers the first call's result",
	"matter_id":                    "the Matter's id, e.g. mat-01J…",
	"action_digest":                "sha256 hex of the exact action the Matter is about: the verdict is bound to it",
	"question":                     "the question the solver answers, in plain text",
	"stakes_usdc":                  "what is at stake, in USDC, as a decimal string",
	"deadline":                     "when the Matter expires unjudged, RFC 3339",
	"risk_class":                   "spend, publish or irreversible",
	"requester_id":                 "the requester; in signed mode the caller's key id, filled from the signature when omitted",
	"solver_id":                    "the solver's principal key id; in signed mode the caller's own, filled from the signature when omitted",
	"solver_kind":                  "human or model",
	"qualification":                "why the solver is qualified, at most 1024 bytes",
	"qualifications":               "the solver's qualifications",
	"conflict_free":                "the assigner asserts that the solver has no conflict of interest",
	"conflicts":                    "the requester ids the solver will not judge for",
	"lineage":                      "a model solver's provider and base_model, for a quorum's lineage diversity",
	"commitment":                   "sha256 hex of the verdict's canonical JSON and the salt",
	"salt":                         "the salt committed to with the verdict",
	"fee_usdc":                     "the appeal fee, in USDC, taken from the appellant",
	"quorum":                       "the quorum's terms",
	"quorum.solvers":               "N, the seats",
	"quorum.agree":                 "M, how many identical verdicts judge the Matter (more than half of N)",
	"quorum.agree_on":              "the verdict's top-level fields two verdicts must share to agree; the schema's required fields when empty",
	"quorum.bond_usdc":             "each solver's bond, decimal dollars; empty for an unstaked Matter",
	"quorum.pay_usdc":              "each solver's pay, decimal dollars; empty for an unstaked Matter",
	"quorum.lineages":              "K, the fewest distinct lineages among the model solvers (0: no rule)",
	"quorum.reveal_window_seconds": "how long solvers have to reveal once the quorum closed; an hour when 0",

	// replays
	"artifacts":             "the artifacts to replay the checker on, in order: a string is given as its text, anything else as its JSON text",
	"no_memo":               "true runs every artifact, memoised or not",
	"checker.artifact_type": "what the artifacts are, for a python checker (code runs the checker after the artifact's source)",
}

// resultDescriptions describe the fields of the tools' answers that an
// agent acts on (the seed's listing, match and trade objects), by
// "parent.name" or by name.
var resultDescriptions = map[string]string{
	"fingerprint":            "sha256 of the normalised token set of the problem statement",
	"verification_level":     "1 deterministic (a checker), 2 optimistic (a bond), 3 statistically confirmed (a level-1 checker passed replays by independent buyers)",
	"has_checker":            "whether a machine-runnable checker is attached",
	"bond_usd":               "money actually escrowed and payable to a successful challenger",
	"freshness_days":         "days since the listing was published",
	"license_terms":          "the license; seed=true marks a house agent's listing",
	"artifact_sha256":        "sha256 of the artifact's bytes, as the checker sees them",
	"artifact_encoding":      "the form the artifact is delivered in: json or base64",
	"encoding":               "the form of artifact: json, or base64 (a string of standard base64 holding the bytes)",
	"confirmed_buyers":       "distinct independent buyers whose replays passed",
	"challenge_window_hours": "hours after purchase in which a challenge may be filed; proceeds are held as long",
	"window_closes_at":       "when the challenge window closes and the held proceeds settle",
	"total_usd":              "what the buyer paid: price + 3% fee",
	"refund_usd":             "what an upheld challenge refunds: price + fee",
	"payment_ref":            "the payment rail's reference",
	"match":                  "match confidence: rely on exact and strong, verify partial, never rely on weak",
	"match.confidence":       "a score in [0, 1]",
	"match.class":            "exact (fingerprint equality), strong, partial or weak",
	"match.constraint_diff":  "the query's constraints matched, missing from and conflicting with the listing",
	"match.warning":          "a constraint conflict spelled out; null when the class is exact or strong",
	"match.basis":            "how the score was computed and what it can miss",
	"no_reliable_match":      "true when no result is exact or strong: treat results as leads",
	"trades_sold":            "sales settled",
	"challenges_lost":        "challenges upheld against the agent's listings",
	"challenge_loss_rate":    "challenges lost over sales closed (settled or lost)",
	"stake_forfeited_usd":    "bonds the agent forfeited to challengers",
	"account_age_days":       "days since the agent was first seen",
}

// describeResults describes the fields of an answer's schema that
// resultDescriptions names and that carry no description of their own.
func describeResults(s *jsonschema.Schema) *jsonschema.Schema {
	var walk func(s *jsonschema.Schema, parent string)
	walk = func(s *jsonschema.Schema, parent string) {
		if s == nil {
			return
		}
		for name, p := range s.Properties {
			if _, shared := rawSchemas[name]; shared {
				continue
			}
			d, ok := resultDescriptions[parent+"."+name]
			if !ok {
				d, ok = resultDescriptions[name]
			}
			if ok && p.Description == "" {
				p.Description = d
			}
			walk(p, name)
		}
		walk(s.Items, parent)
		for _, b := range s.AnyOf {
			walk(b, parent)
		}
	}
	walk(s, "")
	return s
}

// enums are the closed sets some arguments are drawn from.
var enums = map[string][]any{
	"encoding":                  {market.EncodingJSON, market.EncodingBase64},
	"artifact_type":             anys(market.ArtifactTypes),
	"checker.kind":              {"python", "wasm"},
	"resolve_challenge.verdict": {"uphold", "reject"},
	"resolve_dispute.verdict":   {"release", "refund"},
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func schemaOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		panic(fmt.Sprintf("api: schema of %T: %v", *new(T), err))
	}
	resolveRaw(s, fmt.Sprintf("%T", *new(T)))
	splitNullable(s)
	return s
}

// splitNullable spells each nullable type that For derives for pointers
// and slices (["null", "object"]) as anyOf a null branch and a typed one:
// one type to a schema is what the most clients read (the Inspector warns
// of type arrays as unportable).
func splitNullable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, p := range s.Properties {
		splitNullable(p)
	}
	splitNullable(s.Items)
	splitNullable(s.AdditionalProperties)
	for _, b := range s.AnyOf {
		splitNullable(b)
	}
	if len(s.Types) != 2 || !slices.Contains(s.Types, "null") {
		return
	}
	typed := *s
	typed.Types, typed.Type, typed.Description = nil, s.Types[0], ""
	if typed.Type == "null" {
		typed.Type = s.Types[1]
	}
	*s = jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{{Type: "null"}, &typed}}
}

// resolveRaw replaces every raw property under s with its rawSchemas
// entry, and panics on one it has none for.
func resolveRaw(s *jsonschema.Schema, where string) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if isRaw(p) {
			r, ok := rawSchemas[name]
			if !ok || r == nil {
				panic(fmt.Sprintf("api: %s.%s is raw JSON with no schema in rawSchemas", where, name))
			}
			s.Properties[name] = r
			continue
		}
		resolveRaw(p, where+"."+name)
	}
	if isRaw(s.Items) {
		panic(fmt.Sprintf("api: %s[] is raw JSON with no schema", where))
	}
	resolveRaw(s.Items, where+"[]")
	if isRaw(s.AdditionalProperties) {
		panic(fmt.Sprintf("api: %s{} is raw JSON with no schema", where))
	}
	resolveRaw(s.AdditionalProperties, where+"{}")
}

// toolSpec is a route table row's MCP tool: the same operation as the
// row's REST route, its path parameters and idempotency key as
// arguments beside the body's fields.
type toolSpec struct {
	name, title, desc string
	kind              toolKind
	// args name the path's parameters as arguments: listing_id for {id}.
	args []toolArg
	// out is the answer's schema when it is not the row's (resp).
	out func() *jsonschema.Schema
	// post reworks the row's answer into the tool's (resolve_challenge
	// adds the challenge's receipt).
	post func(s *server, ctx context.Context, body json.RawMessage) (json.RawMessage, error)
	// in and request serve a row whose body is not JSON (a checker's
	// bytes): in is the tool's input schema, and request turns its
	// arguments into the REST request's body and Content-Type.
	in      func() *jsonschema.Schema
	request func(args map[string]json.RawMessage) (body []byte, contentType string, err error)
}

// toolArg is a path parameter as a tool's argument.
type toolArg struct{ param, name, desc string }

// toolInput is a tool's input schema: the row's body, its path
// parameters, its query parameters and, for a mutation, idempotency_key;
// the arguments described (argDescriptions) and closed sets enumerated
// (enums).
func toolInput(r *route) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	switch {
	case r.tool.in != nil:
		s = r.tool.in()
	case r.req != nil:
		s = r.req()
	}
	// The row's schema may share subschemas with others (docRaw,
	// rawSchemas): the tool annotates its own copy.
	s = s.CloneSchemas()
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	var required []string
	for _, a := range r.tool.args {
		s.Properties[a.name] = &jsonschema.Schema{Type: "string", Description: a.desc}
		required = append(required, a.name)
	}
	for _, q := range r.query {
		if _, clash := s.Properties[q.name]; clash {
			panic("api: " + r.key() + ": the query parameter " + q.name + " is also a body field, so it cannot be a tool argument")
		}
		qs := &jsonschema.Schema{Type: "string"}
		if q.schema != nil {
			qs = q.schema.CloneSchemas()
		}
		qs.Description = q.desc
		s.Properties[q.name] = qs
	}
	s.Required = append(required, s.Required...)
	if r.req == nil && r.tool.in == nil {
		// No body: the arguments are the parameters alone.
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	switch r.idem {
	case idemHeader:
		s.Properties["idempotency_key"] = &jsonschema.Schema{Type: "string", Description: "retries with the same key and arguments answer the first call's result"}
	case idemBody:
		// REST may carry it in a header; a tool call has only its arguments.
		if !slices.Contains(s.Required, "idempotency_key") {
			s.Required = append(s.Required, "idempotency_key")
		}
	}
	tool := r.tool.name
	var walk func(s *jsonschema.Schema, parent string)
	walk = func(s *jsonschema.Schema, parent string) {
		for name, p := range s.Properties {
			path := name
			if parent != "" {
				path = parent + "." + name
			}
			if _, shared := rawSchemas[name]; !shared {
				// Derived for this property alone: safe to annotate.
				if d, ok := argDescriptions[tool+"."+path]; ok {
					p.Description = d
				} else if d, ok := argDescriptions[path]; ok && p.Description == "" {
					p.Description = d
				}
				if e, ok := enums[tool+"."+path]; ok {
					p.Enum = e
				} else if e, ok := enums[path]; ok {
					p.Enum = e
				}
			}
			walk(p, path)
		}
		for _, b := range s.AnyOf { // a nullable object's properties
			walk(b, parent)
		}
	}
	walk(s, "")
	if s.Properties["artifact"] != nil && s.Properties["encoding"] != nil {
		// The union narrows with the encoding: base64 is a string.
		s.If = &jsonschema.Schema{Type: "object", Required: []string{"encoding"},
			Properties: map[string]*jsonschema.Schema{"encoding": {Const: ptr[any](market.EncodingBase64)}}}
		s.Then = &jsonschema.Schema{Type: "object",
			Properties: map[string]*jsonschema.Schema{"artifact": {Type: "string", ContentEncoding: "base64"}}}
	}
	return s
}

// mcpHandler serves the tools of every row that names one over MCP at
// MCPPath: each runs its row's operation through the same pipeline as
// its REST route, and answers the REST body as structured content, which
// the tool's output schema describes. The endpoint is stateless, so one
// endpoint speaks the 2026-07-28 revision (no handshake: every request
// carries its version, server/discover answers the capabilities) and the
// revisions before it (initialize), as the Go SDK serves them.
//
// A refusal by a service, or of arguments that do not fit the input
// schema, is a tool error (isError) whose text is the REST error body; a
// request the protocol refuses is a JSON-RPC error (-32601 for a method
// not offered: only tools are; -32602 for bad params or an unknown tool).
// Credentials are those of the HTTP request that carries the call, as
// the REST routes take them: an RFC 9421 signature, Authorization:
// Bearer <API key>, or the operator's bearer token.
func (s *server) mcpHandler() fiber.Handler {
	srv := newMCPServer(s)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// Each POST is answered in full: fiber's adaptor buffers responses,
		// so no request holds a stream open.
		Stateless: true, JSONResponse: true, Logger: s.cfg.Logger,
		MaxRequestBodyBytes: s.mcpBodyLimit(),
	})
	return adaptor.HTTPHandler(h)
}

// mcpBodyLimit bounds a request to MCPPath: the largest body of a tool's
// row, with room for base64 and the JSON-RPC envelope.
func (s *server) mcpBodyLimit() int64 {
	n := max(s.cfg.MaxBodyBytes, market.MaxArtifactBytes+market.MaxProblemBytes)
	for _, r := range s.tools() {
		n = max(n, r.bodyLimit)
	}
	return int64(n)*4/3 + 64<<10
}

// mcpEndpoint is MCP's endpoint: the pipeline has authenticated the HTTP
// request that carries the calls, and its Actor is every tool call's.
func (s *server) mcpEndpoint(c *fiber.Ctx, a principal.Actor) error {
	c.Context().SetUserValue(actorKey{}, a)
	if c.Method() == fiber.MethodPost && strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON) {
		if id, jerr := refusedCall(c.Body()); jerr != nil {
			return writeRPCError(c, rpcStatus(c.Get("MCP-Protocol-Version"), jerr), id, jerr)
		}
	}
	if err := s.mcp()(c); err != nil {
		return err
	}
	return codedHTTPError(c)
}

// actorKey holds the Actor of the HTTP request that carries MCP's tool
// calls, in its context (fasthttp's user values are its context values).
type actorKey struct{}

// actorOf is the Actor the endpoint kept in ctx: anonymous when none.
func actorOf(ctx context.Context) principal.Actor {
	a, _ := ctx.Value(actorKey{}).(principal.Actor)
	return a
}

// mcpMethods are the JSON-RPC calls /mcp answers: the lifecycle, and the
// tools, the one capability it advertises. Notifications pass as the
// protocol has them.
var mcpMethods = map[string]bool{"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "server/discover": true}

func offered(method string) bool {
	return mcpMethods[method] || strings.HasPrefix(method, "notifications/")
}

func notOffered(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("method %.80q is not offered: this server has tools only (tools/list, tools/call)", method)}
}

// refusedCall is the JSON-RPC error that a body holding one call is
// answered, as JSON-RPC says, before the SDK sees it: -32601 for a method
// that is not offered (the SDK refuses one it does not know with plain
// text and HTTP 400), -32602 for a call that needs params and has none.
// Anything else is the SDK's to answer.
func refusedCall(body []byte) (jsonrpc.ID, *jsonrpc.Error) {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return jsonrpc.ID{}, nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return jsonrpc.ID{}, nil
	}
	if !offered(req.Method) {
		return req.ID, notOffered(req.Method)
	}
	if p := bytes.TrimSpace(req.Params); (req.Method == "tools/call" || req.Method == "initialize") && (len(p) == 0 || string(p) == "null") {
		return req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s needs params", req.Method)}
	}
	return jsonrpc.ID{}, nil
}

// rpcStatus is the HTTP status of a JSON-RPC error answered to a request
// of protocol version: from 2026-07-28 on, 404 for a method not found and
// 400 for invalid params, as that revision's transport requires; 200
// before it, as the SDK answers its own.
func rpcStatus(version string, jerr *jsonrpc.Error) int {
	if version >= "2026-07-28" {
		switch jerr.Code {
		case jsonrpc.CodeMethodNotFound:
			return http.StatusNotFound
		case jsonrpc.CodeInvalidParams:
			return http.StatusBadRequest
		}
	}
	return http.StatusOK
}

// writeRPCError answers a JSON-RPC error response with status.
func writeRPCError(c *fiber.Ctx, status int, id jsonrpc.ID, jerr *jsonrpc.Error) error {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: jerr})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(b)
}

// offeredOnly answers -32601 for a method that the SDK knows but this
// server does not offer (resources, prompts, completion, logging), in a
// batch as well as alone.
func offeredOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !offered(method) {
			return nil, notOffered(method)
		}
		return next(ctx, method, req)
	}
}

// codedHTTPError gives an error the MCP handler answered in plain text
// (a request it could not take: a method, an Accept header, a body that is
// not JSON-RPC) the API's coded JSON shape, with the same status.
func codedHTTPError(c *fiber.Ctx) error {
	res := c.Response()
	status := res.StatusCode()
	if status < 400 || strings.HasPrefix(string(res.Header.ContentType()), fiber.MIMEApplicationJSON) {
		return nil
	}
	codes := map[int]string{
		http.StatusBadRequest: codeInvalidRequest, http.StatusMethodNotAllowed: codeMethodNotAllowed,
		http.StatusNotAcceptable: codeNotAcceptable, http.StatusUnsupportedMediaType: codeUnsupportedMediaType,
		http.StatusRequestEntityTooLarge: codeBodyTooLarge, http.StatusNotFound: codeSessionNotFound,
	}
	code, ok := codes[status]
	if !ok {
		code = codeHTTPError
	}
	msg := strings.TrimSpace(string(res.Body()))
	if msg == "" {
		msg = http.StatusText(status)
	}
	res.ResetBody()
	return writeError(c, status, code, "mcp: "+msg)
}

// codedToolErrors makes every tool error a coded body, as the tools' own
// are (toolError): the SDK's own refusals of arguments that do not fit a
// tool's input schema are plain text, and become invalid_arguments.
func codedToolErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		t, ok := r.Content[0].(*mcp.TextContent)
		var body errorBody
		if !ok || json.Unmarshal([]byte(t.Text), &body) == nil && body.Error.Code != "" {
			return res, err
		}
		b, _ := receipt.Marshal(errorBody{Detail: t.Text, Error: errorCode{Code: codeInvalidArguments, Message: t.Text}})
		t.Text = string(b)
		return res, err
	}
}

func newMCPServer(s *server) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "assay", Title: "Assay: escrow court, judgment matters, artifact market and checker replays", Version: s.cfg.Version},
		&mcp.ServerOptions{
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}, // tools only: no logging, resources or prompts
			Instructions: s.instructions(),
			// Every caller sees the same tools: a shared cache may keep them.
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
				c.TTLMs, c.CacheScope = int(toolListTTL.Milliseconds()), "public"
			},
		})
	srv.AddReceivingMiddleware(offeredOnly, codedToolErrors)
	for _, r := range s.tools() {
		addTool(s, srv, r)
	}
	return srv
}

// tools are the rows this server serves as MCP tools, in the table's
// order, each with its auth on this server.
func (s *server) tools() []*route {
	var out []*route
	for _, r := range s.routes.routes {
		if r.tool != nil {
			out = append(out, r)
		}
	}
	return out
}

// toolKind is what a tool does to the market, as its annotations say.
type toolKind int

const (
	read        toolKind = iota // reads only; calling again changes nothing
	additive                    // adds (a listing); idempotent with idempotency_key
	destructive                 // moves money or retires something; idempotent with idempotency_key
)

// annotations are the hints of a tool of kind k titled title. Every tool
// acts on this market alone (not an open world). A mutation is marked
// idempotent because it takes idempotency_key: a retry with the same key
// and arguments answers the first call's result and changes nothing.
func (k toolKind) annotations(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: k == read, DestructiveHint: ptr(k == destructive),
		IdempotentHint: true, OpenWorldHint: ptr(false)}
}

// addTool serves row r as its tool: the row's operation through the
// same pipeline as REST (pipeline.go), its answer the REST body, which
// the tool's output schema describes.
func addTool(s *server, srv *mcp.Server, r *route) {
	t := r.tool
	out := r.resp
	if t.out != nil {
		out = t.out
	}
	mt := &mcp.Tool{Name: t.name, Title: t.title, Description: t.desc, Annotations: t.kind.annotations(t.title),
		InputSchema: toolInput(r), OutputSchema: describeResults(out())}
	mcp.AddTool(srv, mt, func(ctx context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, json.RawMessage, error) {
		b, err := s.callTool(ctx, r, in)
		if err != nil {
			return nil, nil, s.toolError(t.name, err)
		}
		return nil, b, nil
	})
}

// callTool runs row r for a tool call with arguments in, as the
// pipeline runs its REST route: the row's rule checked on the actor of
// the HTTP request that carries the call; its path parameters, query
// parameters and (for a key the row takes beside its body) idempotency
// key taken out of the arguments; the rest the body.
func (s *server) callTool(ctx context.Context, r *route, in json.RawMessage) (json.RawMessage, error) {
	a := actorOf(ctx)
	if err := s.limits.take(r.rateClass(), a); err != nil {
		return nil, err // a tool call is counted in its row's class, besides its HTTP request's
	}
	release, err := s.limits.enter(r.rateClass())
	if err != nil {
		return nil, err
	}
	defer release()
	if r.auth == RouteOperator {
		if err := s.allowedAs(svcMCP, a); err != nil {
			return nil, err
		}
	} else if err := s.allowed(r, a); err != nil {
		return nil, err
	}
	args := map[string]json.RawMessage{}
	if len(in) > 0 {
		if err := json.Unmarshal(in, &args); err != nil {
			return nil, fault.New(fault.Invalid, codeInvalidArguments, "the arguments are not a JSON object: %v", err)
		}
	}
	text := func(name string) (string, error) {
		v, ok := args[name]
		delete(args, name)
		var str string
		if ok && json.Unmarshal(v, &str) != nil {
			return "", fault.New(fault.Invalid, codeInvalidArguments, "%s must be a string", name)
		}
		return str, nil
	}
	query := map[string]string{}
	for _, q := range r.query {
		if v, ok := args[q.name]; ok {
			delete(args, q.name)
			var str string
			if json.Unmarshal(v, &str) != nil {
				str = string(bytes.TrimSpace(v)) // a number or a boolean, as a query string spells it
			}
			query[q.name] = str
		}
	}
	header := map[string]string{}
	c := &call{ctx: ctx, actor: a, params: map[string]string{},
		query: func(k string) string { return query[k] }, header: func(k string) string { return header[strings.ToLower(k)] }}
	for _, p := range r.tool.args {
		v, err := text(p.name)
		if err != nil {
			return nil, err
		}
		c.params[p.param] = v
	}
	var key string
	if r.idem == idemHeader {
		var err error
		if key, err = text("idempotency_key"); err != nil {
			return nil, err
		}
	}
	if r.tool.request != nil {
		var ct string
		if c.body, ct, err = r.tool.request(args); err != nil {
			return nil, err
		}
		header[strings.ToLower(fiber.HeaderContentType)] = ct
	} else if c.body, err = json.Marshal(args); err != nil {
		return nil, err
	}
	limit := s.cfg.MaxBodyBytes
	if r.bodyLimit > 0 {
		limit = r.bodyLimit
	}
	if len(c.body) > limit {
		return nil, fault.New(fault.TooLarge, codeBodyTooLarge, "the request is %d bytes; %s takes at most %d", len(c.body), r.tool.name, limit)
	}
	if c.ik, err = idempotency(r, c, key); err != nil {
		return nil, err
	}
	var body json.RawMessage
	if rep, err := s.replayed(ctx, c.ik); err != nil {
		return nil, err
	} else if rep != nil {
		body = rep.Body
	} else {
		ans, err := r.op(s, c)
		if err != nil {
			return nil, err
		}
		if ans.reply != nil {
			body = ans.reply.Body
		} else if raw, ok := ans.value.(json.RawMessage); ok {
			body = raw
		} else if body, err = receipt.Marshal(ans.value); err != nil {
			return nil, err
		}
	}
	if r.tool.post != nil {
		return r.tool.post(s, ctx, body)
	}
	return body, nil
}

// withReceipt is a challenge's answer with the receipt of the
// challenge's last state added, as challenge_listing answers it, when the
// service's answer has none (resolve_challenge's).
func withReceipt(s *server, ctx context.Context, body json.RawMessage) (json.RawMessage, error) {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	if _, ok := out["receipt"]; ok {
		return body, nil
	}
	var c market.Challenge
	if err := json.Unmarshal(out["challenge"], &c); err != nil {
		return nil, err
	}
	if len(c.Receipts) == 0 {
		return nil, fmt.Errorf("api: challenge %s has no receipt", c.ID)
	}
	rc, err := s.cfg.Court.SignedReceipt(ctx, c.Receipts[len(c.Receipts)-1])
	if err != nil {
		return nil, err
	}
	out["receipt"] = rc
	return receipt.Marshal(out)
}

// toolError is an error as a tool answers it: the REST error body, so
// that an agent branches on the same codes over either interface.
// Internal errors are not shown.
func (s *server) toolError(name string, err error) error {
	code, msg := fault.CodeOf(err), fault.MessageOf(err)
	if fault.KindOf(err) == fault.Internal {
		// As the REST error handler does: logged, not shown.
		s.cfg.Logger.Error("internal error", "tool", name, "err", err)
		code, msg = codeInternal, "internal error"
	}
	b, _ := receipt.Marshal(errorBody{Detail: msg, Error: errorCode{Code: code, Message: msg}})
	return errors.New(string(b))
}
