package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage"
)

const token = "s3cret"

func mustApp(tb testing.TB) *fiber.App {
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
	runner := serverRunner(tb, db)
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Runner: runner, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return api.New(api.Config{Court: court, Keys: keys, OperatorToken: token, Version: "test", MaxBodyBytes: 4096, Replays: replays.NewService(runner),
		Checkers: replays.NewLibrary(db, runner, now), Replies: idem.NewKeeper(db)})
}

type call struct {
	method, path, body string
	header             map[string]string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func (r resp) code(tb testing.TB) string {
	tb.Helper()
	m := r.json(tb)
	e, _ := m["error"].(map[string]any)
	if e == nil || m["detail"] == nil || e["message"] != m["detail"] {
		tb.Fatalf("not an error body: %s", r.body)
	}
	return e["code"].(string)
}

func do(tb testing.TB, app *fiber.App, c call) resp {
	tb.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req := httptest.NewRequest(c.method, c.path, body)
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	res, err := app.Test(req, -1)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func create(tb testing.TB, app *fiber.App, acceptance string) string {
	tb.Helper()
	r := do(tb, app, call{method: "POST", path: "/contracts", body: `{"buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50,"acceptance":` + acceptance + `}`})
	if r.status != 200 {
		tb.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.json(tb)["contract_id"].(string)
}

func deliveredContract(tb testing.TB, app *fiber.App, acceptance, deliverable string) string {
	tb.Helper()
	id := create(tb, app, acceptance)
	for _, c := range []call{
		{method: "POST", path: "/contracts/" + id + "/fund", body: "{}"},
		{method: "POST", path: "/contracts/" + id + "/deliver", body: `{"deliverable":` + deliverable + `,"evidence":{}}`},
	} {
		if r := do(tb, app, c); r.status != 200 {
			tb.Fatalf("%s: %d %s", c.path, r.status, r.body)
		}
	}
	return id
}

const rows100 = `{"assertions":[{"path":"rows","op":"gte","value":100}]}`

func TestAPI_Errors(t *testing.T) {
	app := mustApp(t)
	id := create(t, app, rows100)
	big := `{"buyer":"did:a","seller":"did:b","price":1,"acceptance":{"assertions":[{"path":"x","op":"eq","value":"` + strings.Repeat("x", 5000) + `"}]}}`
	for _, tc := range []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"UnknownField", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":1,"tip":2}`}, 400, "unknown_field"},
		{"BadJSON", call{method: "POST", path: "/contracts", body: `{"buyer":`}, 400, "invalid_json"},
		{"NotObject", call{method: "POST", path: "/contracts", body: `[1]`}, 400, "invalid_json"},
		{"Trailing", call{method: "POST", path: "/contracts", body: `{} {}`}, 400, "invalid_json"},
		{"WrongType", call{method: "POST", path: "/contracts", body: `{"buyer":5,"seller":"did:b","price":1}`}, 400, "invalid_type"},
		{"FloatPrice", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":1.5}`}, 400, "invalid_price"},
		{"BoolPrice", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":true}`}, 400, "invalid_price"},
		{"ZeroPrice", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":0}`}, 400, "invalid_price"},
		{"NegativePrice", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":-1}`}, 400, "invalid_price"},
		{"BadCriteria", call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":1,"acceptance":{"assertions":[{"path":"a","op":"near"}]}}`}, 400, "invalid_assertion"},
		{"TooLarge", call{method: "POST", path: "/contracts", body: big}, 413, "body_too_large"},
		{"UnknownContract", call{method: "GET", path: "/contracts/esc-nope"}, 404, "contract_not_found"},
		{"FundUnknown", call{method: "POST", path: "/contracts/esc-nope/fund", body: "{}"}, 404, "contract_not_found"},
		{"FundField", call{method: "POST", path: "/contracts/" + id + "/fund", body: `{"amount":5}`}, 400, "unknown_field"},
		{"AcceptOutOfOrder", call{method: "POST", path: "/contracts/" + id + "/accept", body: "{}"}, 409, "invalid_state"},
		{"DisputeOutOfOrder", call{method: "POST", path: "/contracts/" + id + "/dispute", body: "{}"}, 409, "invalid_state"},
		{"DeliverOutOfOrder", call{method: "POST", path: "/contracts/" + id + "/deliver", body: `{"deliverable":{}}`}, 409, "invalid_state"},
		{"DeliverMissing", call{method: "POST", path: "/contracts/" + id + "/deliver", body: `{}`}, 400, "missing_field"},
		{"Route", call{method: "GET", path: "/nowhere"}, 404, "route_not_found"},
		{"Receipt", call{method: "GET", path: "/receipts/0123456789abcdef"}, 404, "receipt_not_found"},
		{"CheckerName", call{method: "GET", path: "/checkers/xyz"}, 400, "invalid_sha256"},
		{"Checker", call{method: "GET", path: "/checkers/" + strings.Repeat("0", 64)}, 404, "checker_not_found"},
		{"CheckerType", call{method: "POST", path: "/checkers", body: `{}`}, 400, "unsupported_checker_kind"},
		{"CheckerInvalid", call{method: "POST", path: "/checkers", body: "not wasm", header: map[string]string{"Content-Type": "application/wasm"}}, 400, "invalid_checker"},
		{"VerifyEmpty", call{method: "POST", path: "/verify"}, 400, "invalid_json"},
		{"Limit", call{method: "GET", path: "/activity?limit=x"}, 400, "invalid_limit"},
		{"IdemKey", call{method: "POST", path: "/contracts/" + id + "/fund", body: "{}", header: map[string]string{"Idempotency-Key": strings.Repeat("k", 300)}}, 400, "invalid_idempotency_key"},
		{"ResolveNoToken", call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"verdict":"refund"}`}, 401, "unauthorized"},
		{"ResolveBadToken", call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"verdict":"refund"}`, header: map[string]string{"Authorization": "Bearer nope"}}, 401, "unauthorized"},
		{"ResolveNotEscalated", call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"verdict":"refund"}`, header: map[string]string{"Authorization": "Bearer " + token}}, 409, "invalid_state"},
		{"ResolveVerdict", call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"verdict":"split"}`, header: map[string]string{"Authorization": "Bearer " + token}}, 400, "invalid_verdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, app, tc.c)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if got := r.code(t); got != tc.code {
				t.Fatalf("code %q, want %q", got, tc.code)
			}
		})
	}
	// Nothing bad changed anything: the one contract is still created.
	if r := do(t, app, call{method: "GET", path: "/contracts/" + id}); r.json(t)["status"] != "created" {
		t.Fatalf("contract %s", r.body)
	}
	if r := do(t, app, call{method: "GET", path: "/activity"}); r.json(t)["count"].(float64) != 1 {
		t.Fatalf("activity %s", r.body)
	}
}

func TestAPI_ResolveDisabled(t *testing.T) {
	db, _ := storage.Open("", storage.Options{InMemory: true})
	defer db.Close()
	keys, _ := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{})})
	court, _ := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys})
	app := api.New(api.Config{Court: court, Keys: keys})
	r := do(t, app, call{method: "POST", path: "/contracts/x/resolve", body: `{}`, header: map[string]string{"Authorization": "Bearer "}})
	if r.status != 403 || r.code(t) != "operator_disabled" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := do(t, app, call{method: "GET", path: "/health"}); r.json(t)["operator_resolve"] != false {
		t.Fatalf("health %s", r.body)
	}
}

func TestAPI_Idempotency(t *testing.T) {
	app := mustApp(t)
	body := `{"buyer":"did:a","seller":"did:b","price":7}`
	h := map[string]string{"Idempotency-Key": "order-1"}
	r1 := do(t, app, call{method: "POST", path: "/contracts", body: body, header: h})
	r2 := do(t, app, call{method: "POST", path: "/contracts", body: body, header: h})
	if r1.status != 200 || r2.status != 200 || string(r1.body) != string(r2.body) || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%d %s / %d %s", r1.status, r1.body, r2.status, r2.body)
	}
	r3 := do(t, app, call{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":8}`, header: h})
	if r3.status != 409 || r3.code(t) != "idempotency_conflict" {
		t.Fatalf("%d %s", r3.status, r3.body)
	}
	// The same key on another route is another request.
	id := r1.json(t)["contract_id"].(string)
	r4 := do(t, app, call{method: "POST", path: "/contracts/" + id + "/fund", body: body, header: h})
	if r4.status != 400 {
		t.Fatalf("%d %s", r4.status, r4.body)
	}
	r5 := do(t, app, call{method: "POST", path: "/contracts/" + id + "/fund", body: "{}", header: h})
	if r5.status != 200 || r5.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the key on another operation: %d %s", r5.status, r5.body)
	}
}

func TestAPI_Walkthrough(t *testing.T) {
	app := mustApp(t)
	id := deliveredContract(t, app, rows100, `{"rows":3}`)
	r := do(t, app, call{method: "POST", path: "/contracts/" + id + "/dispute", body: `{"reason":"far fewer rows than agreed"}`})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	rc := r.json(t)
	cs := rc["credentialSubject"].(map[string]any)
	if cs["verdict"] != "refund" || cs["tier"] != "tier0" || cs["payout"].(map[string]any)["did:nanda:buyer"] != 50.0 {
		t.Fatalf("subject %v", cs)
	}
	for _, body := range []string{string(r.body), `{"receipt":` + string(r.body) + `}`} {
		v := do(t, app, call{method: "POST", path: "/verify", body: body})
		if v.json(t)["valid"] != true {
			t.Fatalf("verify %s", v.body)
		}
	}
	tampered := strings.Replace(string(r.body), `"verdict":"refund"`, `"verdict":"release"`, 1)
	if v := do(t, app, call{method: "POST", path: "/verify", body: tampered}); v.json(t)["valid"] != false {
		t.Fatalf("tampered receipt verified: %s", v.body)
	}
	rid := strings.TrimPrefix(rc["id"].(string), receipt.IDPrefix)
	if g := do(t, app, call{method: "GET", path: "/receipts/" + rid}); g.status != 200 || string(g.body) != string(r.body) {
		t.Fatalf("receipt %d %s", g.status, g.body)
	}
	di := do(t, app, call{method: "GET", path: "/receipts/" + rid + "?format=di"})
	if di.status != 200 || di.json(t)["proof"].(map[string]any)["cryptosuite"] != "eddsa-jcs-2022" {
		t.Fatalf("di %d %s", di.status, di.body)
	}
	if v := do(t, app, call{method: "POST", path: "/verify", body: string(di.body)}); v.json(t)["valid"] != true {
		t.Fatalf("verify di %s", v.body)
	}
	for _, path := range []string{"/agents/did:nanda:buyer/receipts", "/agents/did%3Ananda%3Abuyer/receipts"} {
		g := do(t, app, call{method: "GET", path: path})
		if m := g.json(t); m["agent"] != "did:nanda:buyer" || m["count"] != 1.0 {
			t.Fatalf("%s: %s", path, g.body)
		}
	}
	rep := do(t, app, call{method: "GET", path: "/agents/did:nanda:seller/reputation"}).json(t)
	if rep["as_seller"].(map[string]any)["negative"] != 1.0 {
		t.Fatalf("reputation %v", rep)
	}
	acct := do(t, app, call{method: "GET", path: "/accounts/agent:did:nanda:buyer"}).json(t)
	if acct["balances"].(map[string]any)["credits"] != 50.0 {
		t.Fatalf("account %v", acct)
	}
	if l := do(t, app, call{method: "GET", path: "/ledger"}).json(t); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
	act := do(t, app, call{method: "GET", path: "/activity?limit=2"}).json(t)
	if act["count"] != 2.0 || act["total_seq"] != 4.0 || act["court_public_key"] == "" {
		t.Fatalf("activity %v", act)
	}
}

func TestAPI_Escalation(t *testing.T) {
	app := mustApp(t)
	id := deliveredContract(t, app, `{"assertions":[{"path":"summary","op":"nonempty","semantic":true}]}`, `{"summary":"x"}`)
	r := do(t, app, call{method: "POST", path: "/contracts/" + id + "/dispute", body: `{}`})
	if r.status != 200 || r.json(t)["credentialSubject"].(map[string]any)["verdict"] != "escalated" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if g := do(t, app, call{method: "GET", path: "/contracts/" + id}).json(t); g["status"] != "escalated" {
		t.Fatalf("contract %v", g)
	}
	r = do(t, app, call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"verdict":"release","reason":"fine"}`, header: map[string]string{"Authorization": "Bearer " + token}})
	cs := r.json(t)["credentialSubject"].(map[string]any)
	if r.status != 200 || cs["verdict"] != "release" || cs["tier"] != "operator" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestAPI_Checkers(t *testing.T) {
	app := mustApp(t)
	wasmBytes, err := os.ReadFile("../fixtures/checkers/pass.wasm")
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/checkers", bytes.NewReader(wasmBytes))
	req.Header.Set("Content-Type", "application/wasm")
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	_ = json.NewDecoder(res.Body).Decode(&info)
	sum := checkers.SHA256(wasmBytes)
	if res.StatusCode != 201 || info["sha256"] != sum || info["kind"] != "wasm" || info["size"] != float64(len(wasmBytes)) {
		t.Fatalf("%d %v", res.StatusCode, info)
	}
	if g := do(t, app, call{method: "GET", path: "/checkers/" + sum}); g.status != 200 {
		t.Fatalf("%d %s", g.status, g.body)
	}
	create(t, app, `{"checkers":[{"sha256":"`+sum+`"}]}`)
}

func TestAPI_Documents(t *testing.T) {
	app := mustApp(t)
	for _, path := range []string{"/", "/skill.md"} {
		r := do(t, app, call{method: "GET", path: path})
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") || !strings.Contains(string(r.body), "BASE=http://example.com") {
			t.Fatalf("%s: %d %s", path, r.status, r.header)
		}
	}
	h := do(t, app, call{method: "GET", path: "/health"}).json(t)
	if h["status"] != "ok" || len(h["court_public_key"].(string)) != 44 || h["tier1_juror"] != "none" {
		t.Fatalf("health %v", h)
	}
	if do(t, app, call{method: "GET", path: "/healthz"}).status != 200 {
		t.Fatal("healthz")
	}
	k := do(t, app, call{method: "GET", path: "/.well-known/assay-keys"}).json(t)
	if keys := k["keys"].([]any); len(keys) != 1 || keys[0].(map[string]any)["public_key"] != h["court_public_key"] {
		t.Fatalf("keys %v", k)
	}
	for _, path := range []string{"/agentfacts", "/.well-known/agent-facts"} {
		if f := do(t, app, call{method: "GET", path: path}).json(t); f["agent_name"] != "assay-court" {
			t.Fatalf("%s %v", path, f)
		}
	}
	for _, path := range []string{"/contracts", "/verify", "/checkers", "/accounts", "/contracts/x/fund", "/contracts/x/deliver", "/contracts/x/accept", "/contracts/x/dispute", "/contracts/x/resolve"} {
		r := do(t, app, call{method: "GET", path: path})
		if r.status != 200 || r.json(t)["method"] == nil {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
}
