package api_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage"
)

// corpus is a whole server (court, checkers, replays, market, MCP and
// judgment matters) on a real loopback listener, with one object of each
// kind to aim bad input at.
type corpus struct {
	base, host string
	app        *fiber.App
	mode       api.MattersAuth
	alice      ed25519.PrivateKey // requester of tenant t1 (signed mode)
	nonce      int
	ids        map[string]string // route parameter -> an id that exists
	client     *http.Client
}

var cNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func mustCorpus(tb testing.TB, mode api.MattersAuth) *corpus {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return cNow }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{5})})
	if err != nil {
		tb.Fatal(err)
	}
	runner := serverRunner(tb, db)
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Runner: runner, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	bazaar, err := market.New(market.Config{Store: db, Signer: keys, Runner: runner, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := matters.New(matters.Config{Store: db, Signer: keys, Now: now, Auth: mode})
	if err != nil {
		tb.Fatal(err)
	}
	c := &corpus{mode: mode, ids: map[string]string{}, client: &http.Client{Timeout: 30 * time.Second}}
	c.alice = ed25519.NewKeyFromSeed(append(make([]byte, 31), 1))
	if _, err := ms.AddPrincipal(context.Background(), matters.Principal{KeyID: "alice", Tenant: "t1",
		Roles: []string{matters.RoleRequester}, Scopes: []string{matters.ScopeRead, matters.ScopePrivate, matters.ScopeWrite},
		PublicKey: base64.StdEncoding.EncodeToString(c.alice.Public().(ed25519.PublicKey))}); err != nil {
		tb.Fatal(err)
	}
	c.app = api.New(api.Config{Court: court, Keys: keys, OperatorToken: token, Version: "test", Replays: replays.NewService(runner),
		Matters: ms, Market: bazaar, Checkers: replays.NewLibrary(db, runner, now), Identities: ms.Registry(), Replies: idem.NewKeeper(db),
		PublicURLs: []string{"http://assay.test", api.Loopback}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go c.app.Listener(ln)
	tb.Cleanup(func() { _ = c.app.Shutdown() })
	c.host = ln.Addr().String()
	c.base = "http://" + c.host
	c.setUp(tb)
	return c
}

// do sends one request: with the operator's token, and, for the judgment
// routes in signed mode, signed by alice, so that bad input reaches the
// validation behind authentication.
func (c *corpus) do(tb testing.TB, method, path, ct string, body []byte) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("%s %.80q: %v", method, path, err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = nil, 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if strings.HasPrefix(path, api.MCPPath) {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if c.mode == api.MattersSigned && strings.HasPrefix(path, "/api/v1/economic/matters") {
		req.Header.Del("Authorization")
		c.nonce++
		req.Header.Set("Content-Digest", httpsig.ContentDigest(body))
		p := httpsig.Params{Label: "sig1", Components: []string{"@method", "@path", "@authority", "content-digest"},
			Created: cNow.Unix(), KeyID: "alice", Nonce: fmt.Sprintf("n%d", c.nonce), Alg: "ed25519"}
		m := httpsig.Message{Method: method, Authority: c.host, Path: req.URL.EscapedPath(),
			Header: func(n string) []string { return req.Header.Values(n) }}
		in, sig, err := httpsig.Sign(c.alice, m, p)
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Signature-Input", in)
		req.Header.Set("Signature", sig)
	}
	res, err := c.client.Do(req)
	if err != nil {
		tb.Fatalf("%s %.80q: no HTTP answer: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func (c *corpus) must(tb testing.TB, method, path, body string, status int) map[string]any {
	tb.Helper()
	got, b := c.do(tb, method, path, "application/json", []byte(body))
	if got != status {
		tb.Fatalf("set-up %s %s: %d %s", method, path, got, b)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// find returns the first string value of key anywhere in v.
func find(v any, key string) string {
	switch v := v.(type) {
	case map[string]any:
		if s, ok := v[key].(string); ok {
			return s
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s := find(v[k], key); s != "" {
				return s
			}
		}
	case []any:
		for _, e := range v {
			if s := find(e, key); s != "" {
				return s
			}
		}
	}
	return ""
}

// setUp makes one object of each kind: a delivered contract, a checker, a
// listing bought by a buyer, a matter.
func (c *corpus) setUp(tb testing.TB) {
	tb.Helper()
	cid := find(c.must(tb, "POST", "/contracts", `{"buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":3}]}}`, 200), "contract_id")
	c.must(tb, "POST", "/contracts/"+cid+"/fund", `{}`, 200)
	c.must(tb, "POST", "/contracts/"+cid+"/deliver", `{"deliverable":{"rows":5},"evidence":{}}`, 200)
	wasmBytes, err := os.ReadFile("../fixtures/checkers/pass.wasm")
	if err != nil {
		tb.Fatal(err)
	}
	st, b := c.do(tb, "POST", "/checkers", "application/wasm", wasmBytes)
	if st != 201 {
		tb.Fatalf("upload: %d %s", st, b)
	}
	sum := sha256.Sum256(wasmBytes)
	c.must(tb, "POST", "/market/wallets/seller/deposit", `{"amount_usd":"100"}`, 201)
	c.must(tb, "POST", "/market/wallets/buyer/deposit", `{"amount_usd":"100"}`, 201)
	lid := find(c.must(tb, "POST", "/market/listings", `{"agent":"seller","title":"squares 1-3","problem_statement":"table of squares of the integers 1 to 3",
		"artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"2.50","est_recompute_cost_usd":25}`, 201), "listing_id")
	pid := find(c.must(tb, "POST", "/market/listings/"+lid+"/purchase", `{"agent":"buyer"}`, 201), "purchase_id")
	requester := `"requester_id":"alice",`
	digest := `"action_digest":"` + mDigest + `",`
	mid := find(c.must(tb, "POST", "/api/v1/economic/matters/open", `{`+requester+digest+`"question":"pay invoice 42?","stakes_usdc":"10.25",
		"deadline":"2026-05-01T13:00:00Z","risk_class":"spend","idempotency_key":"setup",
		"verdict_schema":{"type":"object","required":["approve"],"properties":{"approve":{"type":"boolean"}}}}`, 201), "matter_id")
	if cid == "" || lid == "" || pid == "" || mid == "" {
		tb.Fatalf("set-up ids: contract %q listing %q purchase %q matter %q", cid, lid, pid, mid)
	}
	c.ids = map[string]string{
		"/contracts/:id": cid, "/listings/:id": lid, "/purchases/:id": pid, "/challenges/:id": "chl-none",
		"/matters/:id": mid, "/checkers/:sha256": hex.EncodeToString(sum[:]), "/receipts/:id": "none",
		":did": "did:nanda:seller", ":agent": "buyer", "/accounts/:id": "agent:did:nanda:seller",
	}
}

// state reads everything a bad request might change: the ledger (exact
// audit), the court's activity, each object, wallets, the market's
// statistics and the matters.
func (c *corpus) state(tb testing.TB) string {
	tb.Helper()
	var sb strings.Builder
	for _, p := range []string{
		"/ledger", "/activity?limit=1000", "/contracts/" + c.ids["/contracts/:id"],
		"/checkers/" + c.ids["/checkers/:sha256"], "/agents/did:nanda:seller/reputation", "/agents/did:nanda:buyer/receipts",
		"/market/listings/" + c.ids["/listings/:id"], "/market/purchases/" + c.ids["/purchases/:id"],
		"/market/wallets/buyer", "/market/wallets/seller", "/market/stats", "/market/agents/seller",
		"/api/v1/economic/matters/" + c.ids["/matters/:id"], "/api/v1/economic/matters/" + c.ids["/matters/:id"] + "/receipts",
	} {
		st, b := c.do(tb, "GET", p, "", nil)
		fmt.Fprintf(&sb, "%s %d %s\n", p, st, b)
	}
	return sb.String()
}

// badIDs stand in for a route's parameters, percent-encoded as a client
// sends them.
var badIDs = []string{
	"%00", "a%00b", "%FF%FE", "did:%E2%80%AEx", "%E2%81%A6x", "%2E%2E", "%2E", "*", "a%20b", "%1B%5B2J",
	strings.Repeat("a", 300), strings.Repeat("d", 4000),
}

// badBodies is bad input to any JSON route: none of them may be taken.
func badBodies() map[string][]byte {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return map[string][]byte{
		"truncated":           []byte(`{"reason":`),
		"trailing comma":      []byte(`{"a":1,}`),
		"two objects":         []byte(`{}{}`),
		"array":               []byte(`[]`),
		"string":              []byte(`"x"`),
		"null":                []byte(`null`),
		"number":              []byte(`123`),
		"invalid UTF-8":       []byte("{\"reason\":\"\xff\xfe\"}"),
		"invalid UTF-8 key":   []byte("{\"\xc3\":1}"),
		"raw NUL":             []byte("{\"reason\":\"a\x00b\"}"),
		"lone surrogate":      []byte(`{"reason":"\udead"}`),
		"deep nesting":        []byte(`{"reason":` + deep + `}`),
		"deep object":         []byte(strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000)),
		"huge number field":   []byte(`{"zz_unknown":1e999999}`),
		"huge body":           []byte(`{"reason":"` + strings.Repeat("x", 9<<20) + `"}`),
		"over the route body": []byte(`{"reason":"` + strings.Repeat("x", 2<<20) + `"}`),
	}
}

// fieldBodies are, per route, a valid body and its fields whose bad values
// must be refused, with the class of bad values they get.
var fieldBodies = map[string]struct {
	body   string
	fields map[string]string // field -> "id", "text" or "number"
}{
	"POST /contracts": {`{"buyer":"did:nanda:b2","seller":"did:nanda:s2","price":5}`,
		map[string]string{"buyer": "id", "seller": "id", "price": "number", "deadline_tick": "count", "currency": "id"}},
	"POST /contracts/:id/dispute":          {`{"reason":"too few rows"}`, map[string]string{"reason": "text"}},
	"POST /contracts/:id/resolve":          {`{"verdict":"refund","reason":"x"}`, map[string]string{"reason": "text", "verdict": "id"}},
	"POST /market/wallets/:agent/deposit":  {`{"amount_usd":"1"}`, map[string]string{"amount_usd": "number"}},
	"POST /market/wallets/:agent/withdraw": {`{"amount_usd":"1"}`, map[string]string{"amount_usd": "number"}},
	"POST /market/listings": {`{"agent":"seller","title":"t","problem_statement":"p","artifact":"a","artifact_type":"dataset","price_usd":"1","est_recompute_cost_usd":2}`,
		map[string]string{"agent": "id", "title": "text", "problem_statement": "text", "price_usd": "number", "est_recompute_cost_usd": "number"}},
	"POST /market/listings/:id/purchase":  {`{"agent":"buyer2"}`, map[string]string{"agent": "id"}},
	"POST /market/listings/:id/challenge": {`{"agent":"buyer","reason":"wrong","evidence":"x"}`, map[string]string{"agent": "id", "reason": "text"}},
	"POST /market/tick":                   {`{"samples":1}`, map[string]string{"samples": "count"}},
	"POST /api/v1/economic/matters/open": {`{"requester_id":"alice","action_digest":"` + mDigest + `","question":"q?","stakes_usdc":"1","deadline":"2026-05-01T13:00:00Z","risk_class":"spend","idempotency_key":"k2","verdict_schema":{"type":"object","required":["a"]}}`,
		map[string]string{"requester_id": "id", "question": "text", "stakes_usdc": "decimal", "idempotency_key": "key"}},
	"POST /api/v1/economic/matters/dispute": {`{"matter_id":"MID","reason":"r","idempotency_key":"k3"}`,
		map[string]string{"matter_id": "id", "reason": "text"}},
	"POST /api/v1/economic/matters/assign": {`{"matter_id":"MID","solver_id":"bob","solver_kind":"model","conflict_free":true,"idempotency_key":"k4"}`,
		map[string]string{"matter_id": "id", "solver_id": "id", "qualification": "text"}},
}

// badValues are JSON values that a field of the class must refuse.
var badValues = map[string][]string{
	"id":      {`"a\u0000b"`, `"did:\u202ex"`, `"a\u200fb"`, `".."`, `"*"`, `"a b"`, `"a/b"`, `"` + strings.Repeat("a", 300) + `"`, `"\u001b[2J"`, `1e400`, `[]`, `{}`},
	"key":     {`"a\u0000b"`, `"k\u202e"`, `"\u001b[2J"`, `"a\nb"`, `"` + strings.Repeat("k", 300) + `"`, `1`, `[]`},
	"count":   {`-1`, `1e400`, `1.5`, `123456789012345678901234567890`, `"1"`, `true`, `{}`},
	"decimal": {`"1e3"`, `"-1"`, `"0"`, `"NaN"`, `"1.1234567"`, `"9999999999999999999"`, `1`, `"0x10"`, `" 1"`},
	"text":    {`"a\u0000b"`, `"a\u202eb"`, `"\u2066x"`, `"\u001b[2J"`, `"a\rb"`, `"` + strings.Repeat("t", 70000) + `"`, `1`, `[]`},
	"number": {`1e400`, `-1`, `0`, `123456789012345678901234567890`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775809`,
		`"99999999999999999999"`, `"9007199254740992"`, `"1e3"`, `"NaN"`, `true`, `{}`, `1.5e308`},
}

func withField(tb testing.TB, body, field, value string) []byte {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		tb.Fatal(err)
	}
	m[field] = json.RawMessage(value)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", k, m[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// fill puts id in every parameter of a route path.
func (c *corpus) fill(path, id string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if !strings.HasPrefix(p, ":") {
			continue
		}
		if id == "" {
			key := "/" + parts[i-1] + "/" + p
			if v, ok := c.ids[key]; ok {
				parts[i] = v
			} else {
				parts[i] = c.ids[p]
			}
			continue
		}
		parts[i] = id
	}
	return strings.Join(parts, "/")
}

// answered reports whether a 200 is itself a refusal: a usage hint (a
// bare GET of a POST route, whatever its id), or /verify's stateless
// "valid": false.
func answered(key string, status int, b []byte) bool {
	if status != 200 {
		return false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	if key == "POST /verify" {
		return m["valid"] == false
	}
	return m["docs"] == "/skill.md" && m["method"] != nil
}

// wantRefused checks that a bad request got a coded 4xx JSON error and
// changed nothing. It returns the state after the request, so that one
// failure is reported once.
func (c *corpus) wantRefused(tb testing.TB, what string, status int, b []byte, before string) string {
	tb.Helper()
	after := c.state(tb)
	if answered(strings.SplitN(what, " ", 3)[0]+" "+strings.SplitN(what, " ", 3)[1], status, b) {
		if after != before {
			tb.Errorf("%s: answered %d but the state changed:\n%s", what, status, diffLines(before, after))
		}
		return after
	}
	if status < 400 || status > 499 {
		tb.Errorf("%s: status %d, want a 4xx: %.300s", what, status, b)
		return after
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		tb.Errorf("%s: %d is not a coded JSON error: %.300q", what, status, b)
	}
	if after != before {
		tb.Errorf("%s: refused with %d but the state changed:\n%s", what, status, diffLines(before, after))
	}
	return after
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			out = append(out, fmt.Sprintf("- %.400s\n+ %.400s", al[i], bl[i]))
		}
	}
	return strings.Join(out, "\n")
}

// TestBadInput runs the corpus over every route the app has (its own
// route table, so that a new route cannot be missed), in both matters
// modes: malformed JSON, non-object bodies, invalid UTF-8, NUL, lone
// surrogates, deep nesting, huge numbers, oversized bodies, wrong content
// types, bad ids in every path parameter, and, per route, bad values in
// each id, text and number field of a valid body. Every one gets a coded
// 4xx JSON error and changes nothing.
func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus sends some thousands of requests")
	}
	for _, mode := range []api.MattersAuth{api.MattersOpen, api.MattersSigned} {
		t.Run(string(mode), func(t *testing.T) {
			c := mustCorpus(t, mode)
			before := c.state(t)
			seen := map[string]bool{}
			n := 0
			for _, r := range c.app.GetRoutes(true) {
				if r.Method == fiber.MethodHead || r.Method == fiber.MethodConnect || r.Method == fiber.MethodTrace || r.Method == "USE" {
					continue
				}
				key := r.Method + " " + r.Path
				if seen[key] {
					continue
				}
				seen[key] = true
				// Bad ids in every parameter, with a body the route would
				// otherwise take.
				if strings.Contains(r.Path, ":") {
					for _, id := range badIDs {
						p := c.fill(r.Path, id)
						st, b := c.do(t, r.Method, p, "application/json", []byte(fieldBody(key, c)))
						before = c.wantRefused(t, key+" with id "+id, st, b, before)
						n++
					}
				}
				if r.Method == fiber.MethodGet || r.Method == fiber.MethodDelete || r.Method == fiber.MethodOptions {
					continue
				}
				path := c.fill(r.Path, "")
				ct := "application/json"
				if r.Path == "/checkers" {
					ct = "application/wasm"
				}
				for name, body := range badBodies() {
					st, b := c.do(t, r.Method, path, ct, body)
					before = c.wantRefused(t, key+" "+name, st, b, before)
					n++
				}
				if r.Path != "/checkers" && r.Path != api.MCPPath {
					for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "multipart/form-data; boundary=x"} {
						st, b := c.do(t, r.Method, path, ct, []byte(fieldBody(key, c)))
						before = c.wantRefused(t, fmt.Sprintf("%s Content-Type %q", key, ct), st, b, before)
						n++
					}
				}
				if fb, ok := fieldBodies[key]; ok {
					for field, class := range fb.fields {
						for _, v := range badValues[class] {
							st, b := c.do(t, r.Method, path, "application/json", withField(t, fieldBody(key, c), field, v))
							before = c.wantRefused(t, fmt.Sprintf("%s %s=%.40s", key, field, v), st, b, before)
							n++
						}
					}
				}
			}
			for _, want := range []string{"POST /contracts", "POST /market/listings", "POST /api/v1/economic/matters/open", "POST /replays", "POST " + api.MCPPath} {
				if !seen[want] {
					t.Errorf("the app's routes lack %s: the corpus did not run there", want)
				}
			}
			t.Logf("%d bad requests over %d routes", n, len(seen))
			c.mcpCorpus(t, before)
		})
	}
}

// fieldBody is the route's valid body with the set-up's ids in it, or {}.
func fieldBody(key string, c *corpus) string {
	fb, ok := fieldBodies[key]
	if !ok {
		return `{}`
	}
	return strings.ReplaceAll(fb.body, "MID", c.ids["/matters/:id"])
}

// mcpCorpus calls every MCP tool through the official SDK's client with
// bad arguments: each is refused (a JSON-RPC error or a tool error with a
// coded body) and changes nothing.
func (c *corpus) mcpCorpus(tb testing.TB, before string) {
	tb.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: c.base + api.MCPPath, MaxRetries: -1}
	cl := mcp.NewClient(&mcp.Implementation{Name: "badinput", Version: "test"}, nil)
	cs, err := cl.Connect(context.Background(), tr, nil)
	if err != nil {
		tb.Fatalf("mcp connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	reads := map[string]bool{"search_listings": true, "get_listing": true, "agent_profile": true, "marketplace_stats": true}
	values := []any{"a\x00b", "did:\u202ex", "..", "*", strings.Repeat("a", 70000), 1e300, -1, json.Number("123456789012345678901234567890"),
		map[string]any{"deep": strings.Repeat("[", 50)}, []any{1}, true, nil, "\u001b[2J"}
	n := 0
	for _, tool := range tools.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(b, &schema)
		props := make([]string, 0, len(schema.Properties))
		for p := range schema.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		args := []map[string]any{{"zz_unknown": 1}}
		for _, p := range props {
			for _, v := range values {
				a := map[string]any{p: v}
				for _, q := range props {
					if q != p {
						a[q] = "x"
					}
				}
				args = append(args, a)
			}
		}
		for _, a := range args {
			n++
			what := fmt.Sprintf("mcp %s %.80v", tool.Name, a)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool.Name, Arguments: a})
			switch {
			case err != nil:
				if strings.Contains(err.Error(), "internal") || strings.Contains(err.Error(), "connection") {
					tb.Errorf("%s: %v", what, err)
				}
			case res.IsError:
				text := res.Content[0].(*mcp.TextContent).Text
				var e struct {
					Error struct{ Code, Message string }
				}
				if json.Unmarshal([]byte(text), &e) != nil || e.Error.Code == "" || e.Error.Code == "internal" {
					tb.Errorf("%s: tool error is not a coded 4xx body: %.300s", what, text)
				}
			default:
				if !reads[tool.Name] {
					tb.Errorf("%s: a mutation took bad arguments: %.300v", what, res.StructuredContent)
				}
				continue
			}
			if after := c.state(tb); after != before {
				tb.Errorf("%s: refused but the state changed:\n%s", what, diffLines(before, after))
				before = after
			}
		}
	}
	tb.Logf("%d bad MCP tool calls over %d tools", n, len(tools.Tools))
}
