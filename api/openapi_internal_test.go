package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
	"github.com/assayhq/assay/storage"
)

// fullServer is a server running every service, so that every row of the
// route table is served.
func fullServer(tb testing.TB) (*fiber.App, *server) {
	tb.Helper()
	return fullServerOf(tb, routeTable)
}

// fullServerOf is fullServer over the route table rows.
func fullServerOf(tb testing.TB, rows []route) (*fiber.App, *server) {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{3})})
	if err != nil {
		tb.Fatal(err)
	}
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	mk, err := market.New(market.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := matters.New(matters.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	lkey, err := receipt.OpenLogKey(receipt.LogKeyConfig{Dir: tb.TempDir(), Rand: rand.NewChaCha8([32]byte{4})})
	if err != nil {
		tb.Fatal(err)
	}
	tlog, err := translog.New(translog.Config{Store: db, Key: lkey})
	if err != nil {
		tb.Fatal(err)
	}
	return newServer(Config{Court: court, Keys: keys, OperatorToken: "op", Version: "test", Market: mk, Matters: ms,
		AdvanceMarketClock: func(time.Duration) {}, Metrics: metrics.New(), Log: tlog}, rows)
}

// TestRouteTable_Registered: a server running every service serves every
// row of the route table, and fiber has no route the table lacks.
func TestRouteTable_Registered(t *testing.T) {
	app, s := fullServer(t)
	for i := range routeTable {
		if r := &routeTable[i]; s.routes.byKey[r.key()] == nil {
			t.Errorf("%s is in the route table but not served", r.key())
		}
	}
	fiberPaths := map[string]string{}
	for _, r := range s.routes.routes {
		fiberPaths[r.method+" "+r.fiberPath()] = r.key()
	}
	for _, fr := range app.GetRoutes(true) {
		if fr.Method == http.MethodHead || fr.Path == MCPPath {
			continue // fiber's HEAD of every GET; MCP takes every method (the SDK answers)
		}
		key := fr.Method + " " + strings.TrimSuffix(fr.Path, "/")
		if fr.Path == "/" {
			key = fr.Method + " /"
		}
		if _, ok := fiberPaths[key]; !ok {
			t.Errorf("fiber serves %s %s, which the route table lacks", fr.Method, fr.Path)
		}
	}
}

// loadDoc fetches and loads the server's /openapi.json.
func loadDoc(tb testing.TB, app *fiber.App) (*openapi3.T, routers.Router) {
	tb.Helper()
	res, err := app.Test(httptest.NewRequest("GET", OpenAPIPath, nil), -1)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		tb.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		tb.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://example.test"}}
	rt, err := gorillamux.NewRouter(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return doc, rt
}

// TestOpenAPI_Document: the document is valid OpenAPI 3.1, has every
// served route with its error codes, and lists each route's usage note.
func TestOpenAPI_Document(t *testing.T) {
	app, s := fullServer(t)
	doc, _ := loadDoc(t, app)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s", doc.OpenAPI)
	}
	for _, r := range s.routes.routes {
		item := doc.Paths.Find(r.path)
		if item == nil || item.GetOperation(r.method) == nil {
			t.Errorf("%s is served but not in the document", r.key())
			continue
		}
		op := item.GetOperation(r.method)
		codes, _ := op.Extensions["x-error-codes"].([]any)
		if len(codes) < len(r.allCodes()) {
			t.Errorf("%s lists %d error codes, the table %d", r.key(), len(codes), len(r.allCodes()))
		}
		if op.Responses.Value("4XX") == nil && r.status < 400 {
			t.Errorf("%s has no 4XX answer", r.key())
		}
	}
	for path, want := range map[string]bool{"/contracts": true, "/market/listings/{id}/purchase": true, "/checkers": true, mattersBase + "/open": true, "/verify": false, "/replays": false} {
		if got := doc.Paths.Find(path).Post.Parameters.GetByInAndName("header", "Idempotency-Key") != nil; got != want {
			t.Errorf("POST %s takes Idempotency-Key: %v, want %v", path, got, want)
		}
	}
	for _, p := range []string{"/contracts", "/verify", "/contracts/{id}/fund", mattersBase + "/open"} {
		if item := doc.Paths.Find(p); item == nil || item.Get == nil {
			t.Errorf("the usage note GET %s is not in the document", p)
		}
	}
}

// TestOpenAPI_NoBooleanSchemas: no schema of the document is a boolean
// (true or false where a schema goes), which JSON Schema allows and OpenAPI
// 3.0 tooling refuses; additionalProperties, a boolean in OpenAPI 3.0 too,
// is the exception.
func TestOpenAPI_NoBooleanSchemas(t *testing.T) {
	app, _ := fullServer(t)
	res, err := app.Test(httptest.NewRequest("GET", OpenAPIPath, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	schemaKeys := map[string]bool{"schema": true, "items": true, "not": true, "contains": true, "if": true, "then": true, "else": true,
		"propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true, "additionalItems": true, "contentSchema": true}
	listKeys := map[string]bool{"anyOf": true, "allOf": true, "oneOf": true, "prefixItems": true}
	mapKeys := map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "dependentSchemas": true}
	seen := 0
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				_, isBool := c.(bool)
				switch {
				case isBool && schemaKeys[k]:
					t.Errorf("%s/%s is the boolean schema %v", at, k, c)
				case listKeys[k]:
					for i, e := range c.([]any) {
						if _, ok := e.(bool); ok {
							t.Errorf("%s/%s/%d is the boolean schema %v", at, k, i, e)
						}
					}
				case mapKeys[k]:
					if m, ok := c.(map[string]any); ok {
						for name, e := range m {
							if _, ok := e.(bool); ok {
								t.Errorf("%s/%s/%s is the boolean schema %v", at, k, name, e)
							}
						}
					}
				}
				if schemaKeys[k] {
					seen++
				}
				walk(c, at+"/"+k)
			}
		case []any:
			for i, e := range v {
				walk(e, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")
	if seen < 100 {
		t.Fatalf("the walk met %d schemas: it did not walk the document", seen)
	}
}

// validate sends req to app and checks the request and the answer, as
// tampered by tamper, against the document.
func validate(tb testing.TB, app *fiber.App, rt routers.Router, req *http.Request, tamper func(status int, body []byte) (int, []byte)) error {
	tb.Helper()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	vreq := req.Clone(context.Background())
	vreq.URL.Scheme, vreq.URL.Host = "http", "example.test"
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := rt.FindRoute(vreq)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	res, err := app.Test(req, -1)
	if err != nil {
		tb.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	status := res.StatusCode
	if tamper != nil {
		status, got = tamper(status, got)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(got)
	return openapi3filter.ValidateResponse(context.Background(), out)
}

func jsonReq(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// TestOpenAPI_ValidationCanFail: real answers validate, and the same
// answers made wrong do not: a field of the wrong type, a missing field,
// an error code the route does not have, a status it never answers.
func TestOpenAPI_ValidationCanFail(t *testing.T) {
	app, _ := fullServer(t)
	_, rt := loadDoc(t, app)
	create := `{"buyer":"did:a:buyer","seller":"did:a:seller","price":5}`
	if err := validate(t, app, rt, jsonReq("POST", "/contracts", create), nil); err != nil {
		t.Fatalf("a real answer: %v", err)
	}
	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		tamper func(int, []byte) (int, []byte)
	}{
		{"WrongType", func() *http.Request { return jsonReq("POST", "/contracts", create) },
			func(s int, b []byte) (int, []byte) {
				return s, bytes.Replace(b, []byte(`"status":"created"`), []byte(`"status":7`), 1)
			}},
		{"MissingField", func() *http.Request { return jsonReq("POST", "/contracts", create) },
			func(s int, b []byte) (int, []byte) { return s, []byte(`{"status":"created"}`) }},
		{"UnknownErrorCode", func() *http.Request { return httptest.NewRequest("GET", "/contracts/esc-0000000000000000", nil) },
			func(s int, b []byte) (int, []byte) {
				return s, bytes.Replace(b, []byte(`"contract_not_found"`), []byte(`"listing_not_found"`), 1)
			}},
		{"UndocumentedStatus", func() *http.Request { return httptest.NewRequest("GET", "/healthz", nil) },
			func(s int, b []byte) (int, []byte) { return http.StatusAccepted, b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validate(t, app, rt, tc.req(), nil); err != nil {
				t.Fatalf("the real answer does not validate: %v", err)
			}
			if err := validate(t, app, rt, tc.req(), tc.tamper); err == nil {
				t.Fatal("a wrong answer validated")
			} else {
				t.Logf("refused as it should be: %.200v", err)
			}
		})
	}
	t.Run("WrongRequest", func(t *testing.T) {
		if err := validate(t, app, rt, jsonReq("POST", "/contracts", `{"buyer":"did:a:b","seller":"did:a:s","price":"5"}`), nil); err == nil {
			t.Fatal("a price given as a string validated")
		}
	})
}

// TestRouteTable_Derived: GET / lists every route, the market's, the
// replays' and MCP's among them; /agentfacts names their endpoints; a
// market mutation's bare GET answers a derived usage note; a refusal of
// an unknown field names the body's fields, from its type.
func TestRouteTable_Derived(t *testing.T) {
	app, s := fullServer(t)
	get := func(path string) string {
		res, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return string(b)
	}
	manual := get("/")
	for _, r := range s.routes.list() {
		method, path, _ := strings.Cut(r, " ")
		if !strings.Contains(manual, "`"+method+" "+path+"`") {
			t.Errorf("GET / does not list %s", r)
		}
	}
	facts := get("/agentfacts")
	for _, want := range []string{`"market":"http://example.com/market"`, `"replays":"http://example.com/replays"`, `"mcp":"http://example.com/mcp"`, `"openapi":`, `"POST /market/listings/{id}/purchase"`} {
		if !strings.Contains(facts, want) {
			t.Errorf("/agentfacts lacks %s", want)
		}
	}
	if u := get("/market/listings/lst_1/purchase"); !strings.Contains(u, `"how_to_purchase":{"method":"POST","path":"/market/listings/{id}/purchase"`) || !strings.Contains(u, `"purpose"`) {
		t.Errorf("GET of the purchase route: %s", u)
	}
	res, _ := app.Test(jsonReq("POST", "/contracts", `{"colour":"red"}`), -1)
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), "this route takes "+fieldsOf[escrow.CreateRequest]()) || !strings.Contains(string(b), "buyer, seller, price, currency, acceptance") {
		t.Errorf("an unknown field: %s", b)
	}
}
