package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
)

// OpenAPIPath serves the route table as an OpenAPI 3.1 document.
const OpenAPIPath = "/openapi.json"

// schemaFn is T's schema, as the MCP tools derive theirs (schemaTypes,
// splitNullable), with the raw JSON properties of every service's types
// resolved by docRaw, then rawSchemas.
func schemaFn[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		panic(fmt.Sprintf("api: schema of %T: %v", *new(T), err))
	}
	resolveDocRaw(s, fmt.Sprintf("%T", *new(T)))
	splitNullable(s)
	return s
}

// docRaw are the schemas of the court's, the judgment routes' and the
// replays' raw JSON properties, by name ("name[]" for a list's items);
// the market's are in rawSchemas.
var docRaw = map[string]*jsonschema.Schema{
	"price": {Description: "a positive whole number of the currency's units (an integer; 1.5 or \"50\" are refused)", Type: "integer"},
	"acceptance": {Type: "object", Description: "the acceptance criteria: schema (a JSON-Schema subset), assertions ({path, op, value, semantic, description}), " +
		"checkers ({sha256, fuel, memory_mib}) and expressions; see /skill.md"},
	"deadline_tick": {Type: "integer", Description: "advisory, recorded in the contract hash; 1000 when omitted"},
	"review_window": {Description: "after delivery, how long the buyer has to accept or dispute: a Go duration (\"72h\") or whole seconds",
		AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer", Minimum: ptr(0.0)}}},
	"deliverable":    jsonValue("the work product the acceptance criteria are evaluated against"),
	"verdict_schema": {Type: "object", Description: "the JSON Schema (2020-12 subset) the verdict must match"},
	"verdict":        jsonValue("the verdict, matching the Matter's verdict_schema"),
	"outcome":        jsonValue("the observed outcome, matching the Matter's verdict_schema"),
	"artifacts[]":    jsonValue("an artifact: a string is given as its text, anything else as its JSON text"),
	"receipts[]":     {Type: "object", Description: "a signed receipt"},
	"amount_usd":     amountSchema("the amount"),
}

// docAny is the schema of a property the answers declare as any Go
// value, by its name ("name[]" for a list's items), or nil. For derives
// the empty schema for such a property, which JSON Schema writes as the
// boolean true and which generators of clients refuse (oapi-codegen:
// "cannot unmarshal bool").
func docAny(name string) *jsonschema.Schema {
	switch name {
	case "matter", "matters[]":
		return matterSchema()
	}
	return nil
}

// matterSchema is a Matter as one caller may see it (matters.View): the
// private record, or the redacted projection.
func matterSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: "the Matter: its private record for a caller with economic:private, else its redacted projection (redacted: true)",
		AnyOf:       []*jsonschema.Schema{schemaFn[matters.Matter](), schemaFn[matters.Public]()},
	}
}

func resolveDocRaw(s *jsonschema.Schema, where string) {
	if s == nil {
		return
	}
	raw := func(name string) *jsonschema.Schema {
		if r, ok := docRaw[name]; ok {
			return r
		}
		if r := rawSchemas[name]; r != nil {
			return r
		}
		panic(fmt.Sprintf("api: %s.%s is raw JSON with no schema in docRaw or rawSchemas", where, name))
	}
	anyValue := func(name string) *jsonschema.Schema {
		if a := docAny(name); a != nil {
			return a
		}
		panic(fmt.Sprintf("api: %s.%s is any Go value with no schema in docAny", where, name))
	}
	for name, p := range s.Properties {
		switch {
		case isRaw(p):
			s.Properties[name] = raw(name)
			continue
		case isEmpty(p):
			s.Properties[name] = anyValue(name)
			continue
		case p.Items != nil && isRaw(p.Items):
			p.Items = raw(name + "[]")
		case isEmpty(p.Items):
			p.Items = anyValue(name + "[]")
		}
		resolveDocRaw(p, where+"."+name)
	}
	if isEmpty(s.Items) {
		panic(fmt.Sprintf("api: %s[] is any Go value with no schema", where))
	}
	resolveDocRaw(s.Items, where+"[]")
	if isRaw(s.AdditionalProperties) || isEmpty(s.AdditionalProperties) {
		panic(fmt.Sprintf("api: %s{} is raw JSON or any Go value with no schema", where))
	}
	resolveDocRaw(s.AdditionalProperties, where+"{}")
	for _, b := range s.AnyOf {
		resolveDocRaw(b, where)
	}
}

// isNull reports whether s is {"type": "null"} and nothing more.
func isNull(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == `{"type":"null"}`
}

// isEmpty reports whether s is the empty schema, which encodes as true:
// what For derives for an interface type.
func isEmpty(s *jsonschema.Schema) bool {
	if s == nil || s.Type != "" || len(s.Types) > 0 || len(s.Properties) > 0 || s.Items != nil || len(s.AnyOf) > 0 {
		return false
	}
	b, err := json.Marshal(s)
	return err == nil && string(b) == "true"
}

func textSchema() *jsonschema.Schema  { return &jsonschema.Schema{Type: "string"} }
func looseObject() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }
func receiptFn() *jsonschema.Schema   { return receiptSchema }

func jsonRPCSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "a JSON-RPC 2.0 message: initialize, tools/list, tools/call, ping, or a notification; " +
		"the tools' own schemas are in tools/list", Required: []string{"jsonrpc"},
		Properties: map[string]*jsonschema.Schema{"jsonrpc": {Type: "string", Const: ptr[any]("2.0")}}}
}

func verifyBodySchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: `a receipt, bare or as {"receipt": …}; a body that is neither answers 422 not_a_receipt`}
}

func usageSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"detail", "method", "path", "docs"},
		Description: "a usage note: detail, and how_to_<verb> {method, path, body, returns}",
		Properties:  map[string]*jsonschema.Schema{"detail": {Type: "string"}, "method": {Type: "string"}, "path": {Type: "string"}, "docs": {Type: "string"}}}
}

func healthSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"status", "court_public_key", "court_did", "receipt_suite"},
		Properties: map[string]*jsonschema.Schema{
			"status": {Type: "string"}, "court_public_key": {Type: "string"}, "court_did": {Type: "string"},
			"receipt_suite": {Type: "string"}, "tier1_juror": {Type: "string"}, "tier1_juror_model": {Type: "string"},
			"operator_resolve": {Type: "boolean"}, "version": {Type: "string"}, "uptime_seconds": {Type: "integer"},
			"judgment_matters": {Description: `"off", or where the judgment routes are and how they authenticate`,
				AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object"}}},
		}}
}

func agentFactsSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"agent_name", "endpoints", "capabilities", "certification"},
		Properties: map[string]*jsonschema.Schema{
			"agent_name": {Type: "string"}, "label": {Type: "string"}, "description": {Type: "string"}, "version": {Type: "string"},
			"endpoints":    {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
			"routes":       {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			"capabilities": {Type: "object"}, "certification": {Type: "object"}, "provider": {Type: "object"},
			"judgment_matters": {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object"}}},
		}}
}

// docSchema is s as the document spells it: a copy in which each nullable
// type that splitNullable spelled as anyOf a null branch and a typed one
// (for the MCP tools, whose clients want one type to a schema) is one
// schema again, with the type array OpenAPI 3.1 takes: {"type": ["array",
// "null"], "items": …}. Generators of clients read the type array, where
// anyOf may lose the type (oapi-codegen makes a nullable list of objects
// one object, which no answer decodes into).
func docSchema(s *jsonschema.Schema) *jsonschema.Schema {
	s = s.CloneSchemas()
	joinNullable(s)
	return s
}

// joinNullable undoes splitNullable under s, in place, where the typed
// branch has no enum or const (which null would have to join).
func joinNullable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, p := range s.Properties {
		joinNullable(p)
	}
	joinNullable(s.Items)
	joinNullable(s.AdditionalProperties)
	for _, b := range s.AnyOf {
		joinNullable(b)
	}
	if len(s.AnyOf) != 2 {
		return
	}
	null, typed := s.AnyOf[0], s.AnyOf[1]
	rest := *s
	rest.Description, rest.AnyOf = "", nil
	if !isEmpty(&rest) || !isNull(null) || typed.Type == "" || typed.Type == "null" || typed.Enum != nil || typed.Const != nil {
		return
	}
	joined := *typed
	joined.Types, joined.Type = []string{typed.Type, "null"}, ""
	if s.Description != "" {
		joined.Description = s.Description
	}
	*s = joined
}

// matterReq is a judgment body's schema: its idempotency_key may come
// from the Idempotency-Key header instead, and requester_id and solver_id
// from the signature.
func matterReq[T any]() *jsonschema.Schema {
	s := schemaFn[T]()
	s.Required = slices.DeleteFunc(s.Required, func(n string) bool {
		return n == "idempotency_key" || n == "requester_id" || n == "solver_id"
	})
	return s
}

// errorSchema is every error's shape, its code one of codes.
func errorSchema(codes []string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"detail", "error"}, Properties: map[string]*jsonschema.Schema{
		"detail": {Type: "string", Description: "what went wrong, for a person"},
		"error": {Type: "object", Required: []string{"code", "message"}, Properties: map[string]*jsonschema.Schema{
			"code":    {Type: "string", Enum: anys(codes), Description: "the error's code: what a program acts on"},
			"message": {Type: "string"},
		}},
	}}
}

// openAPI builds the document of t for a server whose matters routes
// authenticate with auth; routes a page of another origin may call have
// their CORS preflight when t.cors.
func openAPI(t *table, version string, matters MattersAuth) map[string]any {
	paths := map[string]map[string]any{}
	for _, r := range t.routes {
		item := paths[r.path]
		if item == nil {
			item = map[string]any{}
			paths[r.path] = item
		}
		item[strings.ToLower(r.method)] = openAPIOperation(r, matters)
		if t.cors && corsRoute(r) && item["options"] == nil {
			item["options"] = preflightOperation(r)
		}
	}
	tags := []map[string]any{}
	for _, svc := range services {
		if slices.ContainsFunc(t.routes, func(r *route) bool { return r.service == svc.name }) {
			tags = append(tags, map[string]any{"name": svc.name, "description": svc.desc})
		}
	}
	if version == "" {
		version = "dev"
	}
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":       "Assay",
			"version":     version,
			"summary":     "Escrow with a deterministic court, an artifact market and judgment matters, for agents",
			"description": "Derived from the server's route table: every route this server serves, what it takes and answers, who may call it, and every error code it can answer (error.code). A method a path does not take answers 405 method_not_allowed with Allow; a path that is not here answers 404 route_not_found. The manual is at /skill.md.",
			"license":     map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers":    []map[string]any{{"url": "/", "description": "this server"}},
		"tags":       tags,
		"paths":      paths,
		"components": map[string]any{"securitySchemes": usedSchemes(paths)},
	}
}

// securitySchemes are how the auth column's values read in OpenAPI, by
// the scheme's name: the ones the document's operations use are listed.
var securitySchemes = map[string]map[string]any{
	"operator": {"type": "http", "scheme": "bearer",
		"description": "the operator's token (ASSAY_OPERATOR_TOKEN): Authorization: Bearer <token>"},
	"signature": {"type": "apiKey", "in": "header", "name": "Signature",
		"description": `RFC 9421 HTTP Message Signatures, Ed25519, by a principal an operator registered: Signature and Signature-Input covering ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce; Content-Digest: sha-256=:<base64>: (RFC 9530)`},
	"agentSignature": {"type": "apiKey", "in": "header", "name": "Signature",
		"description": "the acting agent's own signature over the request (RFC 9421, Ed25519; keyid its did:key or a registered principal's key id), or Authorization: Bearer <API key> issued for the agent"},
}

// schemeOf is the security scheme of an auth value ("" for none).
func schemeOf(a RouteAuth, matters MattersAuth) string {
	switch {
	case a == RouteOperator:
		return "operator"
	case a == RoutePrincipal && matters != MattersOpen:
		return "signature"
	case a == RouteAgent, a == RouteParty, a == RouteAgentOrOperator:
		return "agentSignature"
	}
	return ""
}

func usedSchemes(paths map[string]map[string]any) map[string]any {
	used := map[string]any{}
	for _, item := range paths {
		for _, op := range item {
			for _, req := range op.(map[string]any)["security"].([]map[string][]string) {
				for name := range req {
					used[name] = securitySchemes[name]
				}
			}
		}
	}
	return used
}

func openAPIOperation(r *route, matters MattersAuth) map[string]any {
	op := map[string]any{
		"operationId":  operationID(r),
		"summary":      r.summary,
		"tags":         []string{r.service},
		"x-assay-auth": r.auth,
	}
	op["security"] = []map[string][]string{}
	if scheme := schemeOf(r.auth, matters); scheme != "" {
		op["security"] = []map[string][]string{{scheme: {}}}
	}
	var params []map[string]any
	for _, name := range r.params() {
		desc := "the " + name
		if name == "id" && r.service == svcCourt {
			desc = idParam.desc
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range r.query {
		params = append(params, map[string]any{"name": q.name, "in": "query", "required": false, "description": q.desc, "schema": q.schema})
	}
	if slices.Contains(r.codes, codeIdemConflict) { // a mutation that reads the header

		params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "retries with the same key and body answer the first call's result (1 to 256 printable characters)", "schema": map[string]any{"type": "string"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch {
	case len(r.reqTypes) > 0:
		content := map[string]any{}
		for _, t := range r.reqTypes {
			content[t] = map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": t}}
		}
		op["requestBody"] = map[string]any{"required": true, "content": content}
	case r.req != nil:
		op["requestBody"] = map[string]any{"required": !r.bodyOptional, "content": map[string]any{"application/json": map[string]any{"schema": docSchema(r.req())}}}
	}
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	ok := map[string]any{"description": "success"}
	if r.resp != nil {
		content := map[string]any{}
		types := r.respTypes
		if len(types) == 0 {
			types = []string{fiber.MIMEApplicationJSON}
		}
		for _, t := range types {
			t, _, _ = strings.Cut(t, ";")
			content[t] = map[string]any{"schema": docSchema(r.resp())}
		}
		ok["content"] = content
	}
	codes := r.allCodes()
	errBody := map[string]any{"application/json": map[string]any{"schema": errorSchema(codes)}}
	if status >= 400 { // a route that only refuses
		op["responses"] = map[string]any{fmt.Sprint(status): map[string]any{"description": r.summary, "content": errBody}}
		op["x-error-codes"] = codes
		return op
	}
	responses := map[string]any{fmt.Sprint(status): ok}
	if r.created {
		responses["201"] = map[string]any{"description": "created (a retry with the same Idempotency-Key answers 200 and the same body)", "content": ok["content"]}
	}
	if r.path == MCPPath {
		responses["202"] = map[string]any{"description": "a notification, accepted"}
	}
	responses["4XX"] = map[string]any{"description": "refused: error.code is one of " + strings.Join(codes, ", "), "content": errBody}
	responses["5XX"] = map[string]any{"description": "the server could not answer: internal, or a dependency unavailable", "content": errBody}
	op["responses"] = responses
	op["x-error-codes"] = codes
	return op
}

// preflightOperation documents the CORS preflight of a route that a page
// of another origin may call (cors.go).
func preflightOperation(r *route) map[string]any {
	op := map[string]any{
		"operationId": "preflight" + strings.TrimPrefix(operationID(r), strings.ToLower(r.method)),
		"summary":     "CORS preflight of " + r.path,
		"tags":        []string{r.service},
		"security":    []map[string][]string{},
		"responses": map[string]any{
			"204": map[string]any{"description": "the methods, headers and origins allowed (Access-Control-Allow-*)"},
			"4XX": map[string]any{"description": "refused", "content": map[string]any{"application/json": map[string]any{"schema": errorSchema(commonCodes)}}},
		},
	}
	var ps []map[string]any
	for _, name := range r.params() {
		ps = append(ps, map[string]any{"name": name, "in": "path", "required": true, "description": "the " + name, "schema": map[string]any{"type": "string"}})
	}
	if ps != nil {
		op["parameters"] = ps
	}
	return op
}

// operationID is the route's method and path in camel case:
// postContractsIdFund.
func operationID(r *route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.method))
	up := true
	for _, c := range r.path {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			up = true
			continue
		}
		if up {
			c = unicode.ToUpper(c)
			up = false
		}
		b.WriteRune(c)
	}
	if r.of != nil {
		b.WriteString("Usage")
	}
	if r.path == "/" {
		b.WriteString("Root")
	}
	return b.String()
}

// openAPIDoc serves the route table's document, built on the first
// request.
func (s *server) openAPIDoc(c *fiber.Ctx, _ principal.Actor) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(s.openapi())
}
