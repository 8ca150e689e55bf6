package api

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/runtime/principal"
)

// The route table's auth column is a RouteAuth (auth.go): who may make
// the route's request when its service runs signed. register gives each
// row the column's value for this server: a service that runs open makes
// its agents' and parties' routes open.

// route is one row of the route table: one operation, with everything
// said of it once: its method and path, what it runs (op, or raw), who
// may call it, how it takes an idempotency key, what it takes and
// answers, its codes, its usage note and its MCP tool. The router, the
// MCP tools, /openapi.json, the manual, the usage notes, CORS and 405's
// Allow are all derived from the rows; nothing else declares a route.
// Paths are in OpenAPI's form (/contracts/{id}); register turns them into
// fiber's.
type route struct {
	method, path string
	// op runs the request (pipeline.go), over REST and, with a tool, MCP;
	// raw is a REST handler of its own for what is not JSON in and out
	// (the manual, files, receipts in their signed bytes, POST /replays,
	// MCP's endpoint). The pipeline authenticates and checks auth before
	// either.
	op  operation
	raw func(s *server, c *fiber.Ctx, a principal.Actor) error
	// anyMethod: raw answers every method of the path itself (MCP's
	// endpoint, whose SDK answers 405 with Allow).
	anyMethod bool
	// idem is how the operation takes an idempotency key.
	idem idemRule
	// paid: the request may pay on a rail paid per request (x402):
	// PAYMENT-SIGNATURE read, 402 with PAYMENT-REQUIRED answered.
	paid bool
	// bodyLimit bounds the body when it is not MaxBodyBytes (a checker's
	// bytes, a batch of replays).
	bodyLimit int
	// rate is the class the row's requests are counted in (limit.go);
	// "" is a read for a GET and a write for anything else.
	rate RateClass
	// tool, when set, serves the operation as an MCP tool too.
	tool *toolSpec
	// only, when set, says whether this server serves the row, beyond
	// its service running (the metrics, the test clock).
	only func(s *server) bool
	// service groups the route (OpenAPI's tag, GET /'s sections).
	service string
	summary string
	auth    RouteAuth
	// req is the JSON body's schema (nil: the route takes no body or
	// {}); reqTypes, when set, are the media types of a body that is
	// not JSON, with reqBody their schema.
	req      func() *jsonschema.Schema
	reqTypes []string
	// bodyOptional: an absent or empty body reads as {}.
	bodyOptional bool
	// resp is the success answer's schema; respTypes the media types when
	// it is not JSON. status is the success status (200 when zero);
	// created, when set, is a second success status (201 on a first
	// create, 200 on a retry or a replay).
	resp      func() *jsonschema.Schema
	respTypes []string
	status    int
	created   bool
	query     []param
	// codes are the error codes the route answers beyond every route's
	// (commonCodes); status by code is the fault kind's (errors.go).
	codes []string
	// write marks a mutation; the market's are kept from other origins
	// by default (cors.go).
	write bool
	// hint, when set, is what a bare GET of the route (or of hint.at)
	// answers: a usage note in the seed's shape (hints.go).
	hint *hint
	// of is, for a usage note's GET route, the route it describes.
	of *route
}

type param struct {
	name, desc string
	schema     *jsonschema.Schema
}

// key is how the registrar finds a route: "POST /contracts".
func (r *route) key() string { return r.method + " " + r.path }

// fiberPath is the route's path in fiber's form: /contracts/:id.
func (r *route) fiberPath() string { return toFiber(r.path) }

var pathParam = regexp.MustCompile(`\{([a-z_0-9]+)\}`)

func toFiber(p string) string { return pathParam.ReplaceAllString(p, ":$1") }

// params are the path's parameters, in order.
func (r *route) params() []string {
	var out []string
	for _, m := range pathParam.FindAllStringSubmatch(r.path, -1) {
		out = append(out, m[1])
	}
	return out
}

// commonCodes can be answered by every route: the request's edges and
// fiber's own refusals, a credential that does not verify (every route
// verifies the credentials a request carries), the caller's rate limit,
// and an internal error.
var commonCodes = []string{codeRouteNotFound, codeMethodNotAllowed, codeHTTPError, codeBodyTooLarge, codeHeadersTooLarge,
	codeURITooLong, codeUnsupportedMediaType, codeInvalidUTF8, codeInvalidHeader, codeInternal, codeRateLimited,
	codeSignatureMissing, codeSignatureMalformed, codeSignatureExpired, codeSignatureInvalid, codeUnknownKey, codeDigestMismatch,
	codeNonceReplayed, codeAPIKeyInvalid, codeWrongAuthority}

// bodyCodes are a JSON body's refusals (decode.go).
var bodyCodes = []string{codeInvalidJSON, codeUnknownField, codeInvalidType}

// allCodes are the route's error codes, sorted, without repeats.
func (r *route) allCodes() []string {
	codes := slices.Clone(commonCodes)
	if r.method == http.MethodPost && len(r.reqTypes) == 0 {
		codes = append(codes, bodyCodes...)
	}
	codes = append(codes, r.codes...)
	if r.rateClass() == RateDecisions {
		codes = append(codes, codeBusy)
	}
	switch r.auth {
	case RouteOperator:
		codes = append(codes, codeOperatorDisabled, codeUnauthorized)
	case RoutePrincipal:
		codes = append(codes, mattersAuthCodes...)
	case RouteAgent, RouteAgentOrOperator, RouteParty:
		codes = append(codes, mattersAuthCodes...)
		codes = append(codes, codeAPIKeyInvalid, codeAgentMismatch, codeInsufficientScope)
		if r.auth == RouteAgentOrOperator {
			codes = append(codes, codeOperatorDisabled, codeUnauthorized)
		}
	}
	sort.Strings(codes)
	return slices.Compact(codes)
}

// table is the server's route table as it was registered: what New
// serves, in registration order. GET /, the usage hints, /agentfacts,
// 405's Allow, CORS and /openapi.json read it.
type table struct {
	routes []*route
	byKey  map[string]*route
	// patterns match a request path to the table's paths, for Allow and
	// CORS, one per path in registration order; byFirst indexes them by
	// their first segment, and wild are those that first segment cannot
	// index (at).
	patterns []*pathPattern
	byFirst  map[string][]*pathPattern
	wild     []*pathPattern
	// cors: the server answers CORS preflights (Config.CORSOrigins is not
	// "none").
	cors bool
}

// pathPattern is a table path as a matcher of request paths: each
// {param} one segment of one or more bytes, the literal parts as they
// are (case and all), a trailing slash allowed. CORS asks it of every
// request, so a path whose parameters are whole segments (every path of
// the table today) is matched by a walk of the two strings; a parameter
// followed by text in its segment would take re (quotedParams).
type pathPattern struct {
	path string
	re   *regexp.Regexp
	// routes are the table's routes of the path.
	routes []*route
	// n is the pattern's index in patterns, so that at answers in the
	// table's order.
	n int
}

func newTable() *table {
	return &table{byKey: map[string]*route{}, byFirst: map[string][]*pathPattern{}}
}

func (t *table) add(r *route) {
	if _, dup := t.byKey[r.key()]; dup {
		panic("api: " + r.key() + " registered twice")
	}
	t.routes = append(t.routes, r)
	t.byKey[r.key()] = r
	for _, p := range t.patterns {
		if p.path == r.path {
			p.routes = append(p.routes, r)
			return
		}
	}
	p := &pathPattern{path: r.path, routes: []*route{r}, n: len(t.patterns)}
	if !wholeSegmentParams(r.path) {
		p.re = regexp.MustCompile(quotedParams(r.path))
	}
	t.patterns = append(t.patterns, p)
	if first, ok := firstSegment(r.path); ok && p.re == nil && !strings.Contains(first, "{") {
		t.byFirst[first] = append(t.byFirst[first], p)
	} else {
		t.wild = append(t.wild, p)
	}
}

// quotedParams is the regular expression of a table path: its literal
// parts quoted, each {param} one segment, a trailing slash allowed.
func quotedParams(p string) string {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range pathParam.FindAllStringIndex(p, -1) {
		b.WriteString(regexp.QuoteMeta(p[last:m[0]]))
		b.WriteString(`[^/]+`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(p[last:]))
	b.WriteString("/?$")
	return b.String()
}

// wholeSegmentParams reports whether each {param} of a table path is
// followed by a slash or the path's end, so that it matches the rest of
// its segment (pathPattern.exact).
func wholeSegmentParams(p string) bool {
	params := pathParam.FindAllStringIndex(p, -1)
	if strings.Count(p, "{") != len(params) || strings.Count(p, "}") != len(params) {
		return false // a brace that is no {param}: the expression knows
	}
	for _, m := range params {
		if m[1] < len(p) && p[m[1]] != '/' {
			return false
		}
	}
	return true
}

// firstSegment is what follows a path's leading slash up to the next
// slash (or the end); false when the path does not start with a slash.
func firstSegment(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	return first, true
}

// match reports whether a request path matches the pattern: what
// quotedParams's expression matches.
func (p *pathPattern) match(path string) bool {
	if p.re != nil {
		return p.re.MatchString(path)
	}
	return p.exact(path) || strings.HasSuffix(path, "/") && p.exact(path[:len(path)-1])
}

// exact reports whether path is the pattern's path with each {param}
// replaced by one or more bytes other than a slash.
func (p *pathPattern) exact(path string) bool {
	pat := p.path
	for {
		i := strings.IndexByte(pat, '{')
		if i < 0 {
			return path == pat
		}
		if len(path) < i || path[:i] != pat[:i] {
			return false
		}
		path, pat = path[i:], pat[i:]
		end := strings.IndexByte(pat, '}')
		pat = pat[end+1:]
		n := strings.IndexByte(path, '/')
		if n < 0 {
			n = len(path)
		}
		if n == 0 {
			return false
		}
		path = path[n:]
	}
}

// eachAt calls fn with the patterns whose path matches a request's path,
// in the table's order, until fn returns false.
func (t *table) eachAt(path string, fn func(*pathPattern) bool) {
	var cands []*pathPattern
	if first, ok := firstSegment(path); ok {
		cands = t.byFirst[first]
	}
	// Merge the indexed candidates with the wild ones, by index.
	i, j := 0, 0
	for i < len(cands) || j < len(t.wild) {
		var p *pathPattern
		if j >= len(t.wild) || i < len(cands) && cands[i].n < t.wild[j].n {
			p, i = cands[i], i+1
		} else {
			p, j = t.wild[j], j+1
		}
		if p.match(path) && !fn(p) {
			return
		}
	}
}

// at is every route whose path matches a request's path.
func (t *table) at(path string) []*route {
	var out []*route
	t.eachAt(path, func(p *pathPattern) bool {
		out = append(out, p.routes...)
		return true
	})
	return out
}

// allow is the Allow header of a path: the methods the table has for it.
func (t *table) allow(path string) string {
	var methods []string
	for _, r := range t.at(path) {
		methods = append(methods, r.method)
		if r.method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		if t.cors && corsRoute(r) {
			methods = append(methods, http.MethodOptions)
		}
	}
	sort.Strings(methods)
	return strings.Join(slices.Compact(methods), ", ")
}

// effective is a row's auth on this server: an agent's route is open when
// the market runs open, a party's when the court does and the principal's
// when the judgment service does.
func (s *server) effective(a RouteAuth) RouteAuth {
	switch {
	case (a == RouteAgent || a == RouteAgentOrOperator) && s.marketMode() != AuthSigned:
		return RouteOpen
	case a == RouteParty && s.courtMode() != AuthSigned:
		return RouteOpen
	case a == RoutePrincipal && s.mattersMode() != AuthSigned:
		return RouteOpen
	}
	return a
}

// serves reports whether this server serves row r: its service runs, and
// what else the row needs is there.
func (s *server) serves(r *route) bool {
	switch r.service {
	case svcCourt, svcReceipts:
		if s.cfg.Court == nil {
			return false
		}
	case svcMarket:
		if s.cfg.Market == nil {
			return false
		}
	case svcMCP, svcA2A:
		// Served with any service whose rows are tools or skills.
		if s.cfg.Court == nil && s.cfg.Market == nil && s.cfg.Matters == nil {
			return false
		}
	case svcMatters:
		if s.cfg.Matters == nil {
			return false
		}
	}
	return r.only == nil || r.only(s)
}

// register serves the rows of the table this server serves, and their
// usage notes, and indexes them (s.routes) for everything derived.
func (s *server) register(app *fiber.App) {
	keys := map[string]bool{}
	for i := range s.rows {
		r := s.rows[i] // a copy: its auth is this server's
		if keys[r.key()] {
			panic("api: the route table has " + r.key() + " twice")
		}
		keys[r.key()] = true
		if !s.serves(&r) {
			continue
		}
		r.auth = s.effective(r.auth)
		if r.op == nil && r.raw == nil {
			panic("api: " + r.key() + " runs nothing")
		}
		if r.tool != nil && r.op == nil {
			panic("api: " + r.key() + " names a tool but is raw: a tool runs the row's op")
		}
		s.routes.add(&r)
	}
	s.mcp = sync.OnceValue(s.mcpHandler)
	// The usage notes first: a note's path is literal, and a route with a
	// parameter in its place (GET /api/v1/economic/matters/{id}) must not
	// take it.
	served := slices.Clone(s.routes.routes)
	s.hints(app)
	for _, r := range served {
		h := s.rest(r)
		switch {
		case r.anyMethod:
			app.All(r.fiberPath(), h)
		case r.method == http.MethodGet:
			// HEAD is GET without the body (RFC 9110): the same
			// operation, its status and header fields, which fasthttp
			// sends without the body it wrote.
			app.Add(http.MethodGet, r.fiberPath(), h)
			app.Add(http.MethodHead, r.fiberPath(), h)
		default:
			app.Add(r.method, r.fiberPath(), h)
		}
	}
}

// fieldsOf names the JSON fields of a body type, for refusals: "buyer,
// seller, price, …", or that it takes none.
func fieldsOf[T any]() string {
	names := jsonFields(reflect.TypeFor[T]())
	if len(names) == 0 {
		return "no fields: send {}"
	}
	return strings.Join(names, ", ")
}

func jsonFields(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			names = append(names, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// list is every route of the table as "METHOD path", usage notes left
// out.
func (t *table) list() []string {
	var out []string
	for _, r := range t.routes {
		if r.of == nil {
			out = append(out, r.key())
		}
	}
	return out
}

// routeList is the manual's list of routes: one table per service, each
// route with who may call it and its summary.
func routeList(t *table) string {
	var b strings.Builder
	for _, svc := range services {
		first := true
		for _, r := range t.routes {
			if r.service != svc.name || r.of != nil {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| route | auth | what it does |\n|---|---|---|\n", svc.name, svc.desc)
				first = false
			}
			fmt.Fprintf(&b, "| `%s %s` | %s | %s |\n", r.method, r.path, r.auth, strings.ReplaceAll(r.summary, "|", `\|`))
		}
	}
	return b.String()
}
