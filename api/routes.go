package api

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/jsonschema-go/jsonschema"
)

// The route table's auth column is a RouteAuth (auth.go): who may make
// the route's request when its service runs signed. router.add gives each
// row the column's value for this server: a service that runs open makes
// its agents' and parties' routes open.

// route is one row of the route table: what a route takes and answers,
// who may call it, and how a caller learns it. Paths are in OpenAPI's
// form (/contracts/{id}); the registrar turns them into fiber's.
type route struct {
	method, path string
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
	// fiber, when set, is the path in fiber's form of a route whose last
	// parameter spans several segments (a wildcard, tlog.go).
	fiber string
}

type param struct {
	name, desc string
	schema     *jsonschema.Schema
}

// key is how the registrar finds a route: "POST /contracts".
func (r *route) key() string { return r.method + " " + r.path }

// fiberPath is the route's path in fiber's form: /contracts/:id.
func (r *route) fiberPath() string {
	if r.fiber != "" {
		return r.fiber
	}
	return toFiber(r.path)
}

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
// fiber's own refusals, and an internal error.
var commonCodes = []string{codeRouteNotFound, codeMethodNotAllowed, codeHTTPError, codeBodyTooLarge, codeHeadersTooLarge,
	codeURITooLong, codeUnsupportedMediaType, codeInvalidUTF8, codeInvalidHeader, codeInternal}

// bodyCodes are a JSON body's refusals (decode.go).
var bodyCodes = []string{codeInvalidJSON, codeUnknownField, codeInvalidType}

// allCodes are the route's error codes, sorted, without repeats.
func (r *route) allCodes() []string {
	codes := slices.Clone(commonCodes)
	if r.method == http.MethodPost && len(r.reqTypes) == 0 {
		codes = append(codes, bodyCodes...)
	}
	codes = append(codes, r.codes...)
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

// lookup finds a route of the table of every route (routeTable).
func lookup(method, path string) *route {
	r, ok := allRoutes[method+" "+path]
	if !ok {
		panic(fmt.Sprintf("api: %s %s is not in the route table (table.go)", method, path))
	}
	return r
}

// allRoutes indexes routeTable.
var allRoutes = func() map[string]*route {
	m := map[string]*route{}
	for i := range routeTable {
		r := &routeTable[i]
		if _, dup := m[r.key()]; dup {
			panic("api: the route table has " + r.key() + " twice")
		}
		m[r.key()] = r
	}
	return m
}()

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

// router registers routes of the table on a fiber router whose routes
// sit under prefix (a fiber.Group of prefix, or the app with "").
type router struct {
	r      fiber.Router
	prefix string
	t      *table
	s      *server
}

func (s *server) router(r fiber.Router, prefix string) router {
	return router{r: r, prefix: prefix, t: s.routes, s: s}
}

// effective is a row's auth on this server: an agent's route is open when
// the market runs open, a party's when the court does.
func (s *server) effective(a RouteAuth) RouteAuth {
	switch {
	case (a == RouteAgent || a == RouteAgentOrOperator) && s.cfg.MarketAuth != AuthSigned:
		return RouteOpen
	case a == RouteParty && s.cfg.CourtAuth != AuthSigned:
		return RouteOpen
	}
	return a
}

// add registers the route method path (relative to the router's
// prefix) with its handlers; the route must be in the table.
func (r router) add(method, path string, handlers ...fiber.Handler) {
	full := r.prefix + path
	if path == "/" && r.prefix != "" {
		full = r.prefix
	}
	rt := *lookup(method, full)
	rt.auth = r.s.effective(rt.auth)
	r.r.Add(method, toFiber(path), handlers...)
	r.t.add(&rt)
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
