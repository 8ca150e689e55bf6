package api

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// hint is a route's usage note: what a bare GET of a POST route (or of
// at, for a GET route with an id) answers, with status 200, so that an
// agent that fetched the route finds out how to call it.
type hint struct {
	// verb names the step in the seed's shape: how_to_<verb>.
	verb, detail string
	// at is where the note is served when it is not the route's path.
	at      string
	body    any
	returns string
	// also are further steps the note names: how_to_<key>.
	also map[string]step
}

// step is one how_to_<verb> of a usage note.
type step struct {
	Method  string    `json:"method"`
	Path    string    `json:"path"`
	Body    any       `json:"body,omitempty"`
	Returns string    `json:"returns,omitempty"`
	Auth    RouteAuth `json:"auth,omitempty"`
}

// hintPath is where a route's usage note is served.
func (r *route) hintPath() string {
	if r.hint.at != "" {
		return r.hint.at
	}
	return r.path
}

// usageOf is r's usage note: the seed service's shape (detail, and
// how_to_<verb> with method, path and body), and the same step flat at the
// top level, as the court has always answered it.
func usageOf(r *route) fiber.Map {
	h := r.hint
	path := strings.ReplaceAll(r.path, "/contracts/{id}", "/contracts/{contract_id}")
	s := step{Method: r.method, Path: path, Body: h.body, Returns: h.returns, Auth: r.auth}
	u := fiber.Map{
		"detail":           h.detail,
		"method":           s.Method,
		"path":             s.Path,
		"returns":          s.Returns,
		"auth":             r.auth,
		"docs":             "/skill.md",
		"openapi":          "/openapi.json",
		"how_to_" + h.verb: s,
	}
	if h.body != nil {
		u["body"] = h.body
	}
	for verb, st := range h.also {
		u["how_to_"+verb] = st
	}
	return u
}

// hintRoute is the GET route that serves r's usage note, for the table.
func hintRoute(r *route) *route {
	return &route{method: fiber.MethodGet, path: r.hintPath(), service: r.service, auth: RouteOpen,
		summary: "how to call " + r.method + " " + r.path + ": a usage note", resp: usageSchema, of: r}
}

// hints registers the usage notes of the routes this server serves: the
// note the row gives, or, for a POST route with none whose path has no
// GET route, one derived from the row (derivedHint).
func (s *server) hints(app *fiber.App) {
	for _, r := range slices.Clone(s.routes.routes) {
		if r.hint == nil {
			if r.method != fiber.MethodPost || r.path == MCPPath || s.routes.byKey["GET "+r.path] != nil {
				continue
			}
			d := *r
			d.hint = derivedHint(r)
			r = &d
		}
		u := usageOf(r)
		app.Get(toFiber(r.hintPath()), func(c *fiber.Ctx) error { return c.JSON(u) })
		s.routes.add(hintRoute(r))
	}
}

// derivedHint is the usage note of a route whose row gives none: its
// summary, and its body's fields with what each is.
func derivedHint(r *route) *hint {
	segs := strings.Split(strings.Trim(pathParam.ReplaceAllString(r.path, ""), "/"), "/")
	h := &hint{verb: segs[len(segs)-1], detail: r.summary, returns: "see " + OpenAPIPath + " for the answer's schema"}
	if r.req != nil {
		body := map[string]any{}
		for name, p := range r.req().Properties {
			desc := p.Description
			if desc == "" {
				desc = p.Type
			}
			body[name] = desc
		}
		h.body = body
	}
	return h
}
