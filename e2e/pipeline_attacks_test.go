package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The attacks on the seams between the services, each a regression test
// against the real binary: every one refused with a coded 4xx, and
// nothing changed.

// variants are the spellings of a path that are no route of the table:
// upper case, mixed case, a trailing slash, a doubled slash; and one that
// is the route itself, a letter percent-encoded, which the route's own
// rule then refuses.
func variants(path string) map[string]string {
	segs := strings.Split(path, "/")
	last := len(segs) - 1
	for last > 0 && !isLiteral(segs[last]) {
		last--
	}
	mixed := append([]string(nil), segs...)
	mixed[last] = swapFirst(mixed[last])
	encoded := append([]string(nil), segs...)
	encoded[last] = fmt.Sprintf("%%%02X", encoded[last][0]) + encoded[last][1:]
	return map[string]string{
		"upper":    strings.ToUpper(path),
		"mixed":    strings.Join(mixed, "/"),
		"trailing": path + "/",
		"doubled":  strings.Replace(path, "/", "//", 2)[1:],
		"encoded":  strings.Join(encoded, "/"),
	}
}

// isLiteral reports whether a path segment is a word of the table's (not
// an id): letters only.
func isLiteral(seg string) bool {
	return seg != "" && strings.IndexFunc(seg, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
}

func swapFirst(s string) string {
	r := []rune(s)
	if unicode.IsUpper(r[0]) {
		r[0] = unicode.ToLower(r[0])
	} else {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// signedRoutes are the operations /openapi.json (the route table) says
// need more than nobody: "METHOD path" by the auth column.
func signedRoutes(tb testing.TB, s *server) map[string]string {
	tb.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Auth string `json:"x-assay-auth"`
			ID   string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(s.get(tb, "/openapi.json").body, &doc); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.Auth != "" && op.Auth != "open" && !strings.HasSuffix(op.ID, "Usage") {
				out[strings.ToUpper(method)+" "+path] = op.Auth
			}
		}
	}
	return out
}

// TestPipeline_PathVariants: every route of every service that needs an
// agent, a party, a principal or the operator, spelled any other way
// (upper or mixed case, a trailing or doubled slash) is no route: 404,
// coded, nothing changed; with a letter percent-encoded it is the route,
// whose rule refuses the unsigned request as it refuses the plain one.
// The signed court's party check was once a middleware that read the
// path's last segment itself and let /contracts/{id}/FUND through.
func TestPipeline_PathVariants(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), []string{"--court-auth", "signed"}, []string{"ASSAY_OPERATOR_TOKEN=op"}, 30*time.Second)
	buyer, seller := newDIDKey(t), newDIDKey(t)
	r := s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":40,"acceptance":%s}`, buyer.id(), seller.id(), rows100))
	if r.status != http.StatusOK {
		t.Fatalf("create %d %s", r.status, r.body)
	}
	id := r.obj(t)["contract_id"].(string)
	ids := strings.NewReplacer("{id}", id, "{agent}", buyer.id(), "{did}", buyer.id())
	bodies := map[string]string{
		"/contracts/{id}/deliver":         `{"deliverable":{"rows":3}}`,
		"/contracts/{id}/dispute":         `{"reason":"short"}`,
		"/contracts/{id}/resolve":         `{"verdict":"refund"}`,
		"/market/challenges/{id}/resolve": `{"verdict":"uphold"}`,
		"/market/wallets/{agent}/deposit": `{"amount_usd":"1"}`,
		"/market/listings":                `{"agent":"` + buyer.id() + `","title":"t","problem_statement":"squares of integers","artifact":"a","artifact_type":"dataset","price_usd":"1"}`,
	}
	state := []string{"/contracts/" + id, "/activity?limit=50", "/market/stats", "/market/wallets/" + buyer.id()}
	before := s.snapshot(t, state...)
	routes := signedRoutes(t, s)
	keys := make([]string, 0, len(routes))
	for k := range routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) < 30 {
		t.Fatalf("%d signed routes in /openapi.json: %v", len(keys), keys)
	}
	for _, route := range keys {
		method, path, _ := strings.Cut(route, " ")
		concrete := ids.Replace(path)
		if strings.HasPrefix(path, "/market/listings/{id}") {
			concrete = strings.Replace(path, "{id}", "lst_000000000000", 1)
		}
		body := bodies[path]
		if body == "" && method == "POST" {
			body = `{"agent":"` + buyer.id() + `","matter_id":"mat-x","idempotency_key":"k"}`
			if strings.HasPrefix(path, "/contracts") {
				body = `{}`
			}
		}
		plain := s.do(t, method, concrete, []byte(body), malformed, "1")
		if plain.status/100 != 4 {
			t.Fatalf("%s %s unsigned: %d %s", method, concrete, plain.status, plain.body)
		}
		plainCode := plain.code(t)
		for name, v := range variants(concrete) {
			t.Run(route+"/"+name, func(t *testing.T) {
				got := s.doDirect(t, method, v, body)
				switch {
				case name == "encoded":
					// the route itself: refused as the plain request is
					if got.status != plain.status || got.code(t) != plainCode {
						t.Fatalf("%s %s: %d %s; want %d %s", method, v, got.status, got.body, plain.status, plainCode)
					}
				case got.status == http.StatusNotFound:
					if got.code(t) != "route_not_found" {
						t.Fatalf("%s %s: %d %s", method, v, got.status, got.body)
					}
				default:
					// Another route's path, {id} taking the word
					// (/api/v1/economic/matters/Open): refused by it.
					if got.status/100 != 4 || got.code(t) == "" {
						t.Fatalf("%s %s: %d %s; want a coded 4xx", method, v, got.status, got.body)
					}
				}
			})
		}
	}
	if after := s.snapshot(t, state...); after != before {
		t.Fatalf("the variants changed the state:\n%s\nnow:\n%s", before, after)
	}

	// The attack itself: the seller delivers junk and accepts in the
	// buyer's name, by any spelling.
	fund := buyer.signHeaders(t, "POST", s.base, "/contracts/"+id+"/fund", []byte(`{}`), signOpts{})
	if r := s.do(t, "POST", "/contracts/"+id+"/fund", []byte(`{}`), fund...); r.status != http.StatusOK {
		t.Fatalf("the buyer's fund: %d %s", r.status, r.body)
	}
	if r := s.signedAs(t, seller, "POST", "/contracts/"+id+"/deliver", `{"deliverable":{"rows":0}}`); r.status != http.StatusOK {
		t.Fatalf("the seller's delivery: %d %s", r.status, r.body)
	}
	state = []string{"/contracts/" + id}
	before = s.snapshot(t, state...)
	for _, p := range []string{"/contracts/" + id + "/Accept", "/contracts/" + id + "/ACCEPT", "/contracts/" + id + "/accept/", "/Contracts/" + id + "/accept", "/contracts//" + id + "/accept"} {
		s.wantRefused(t, "the seller's accept at "+p, s.signedAs(t, seller, "POST", p, `{}`), 404, "route_not_found", before, state...)
	}
	encoded := "/contracts/" + id + "/%61ccept"
	s.wantRefused(t, "the seller's accept at %61ccept", s.doDirect(t, "POST", encoded, `{}`, seller.signHeaders(t, "POST", s.direct, encoded, []byte(`{}`), signOpts{})...), 403, "agent_mismatch", before, state...)
	s.wantRefused(t, "an unsigned accept", s.post(t, "/contracts/"+id+"/accept", `{}`), 401, "signature_missing", before, state...)
}

// doDirect sends a request to the server itself, past the validating
// proxy: for a path the document has no route for (a percent-encoded
// spelling the server decodes to its route), which the proxy would take
// for an answer to no route.
func (s *server) doDirect(tb testing.TB, method, path, body string, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.direct+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// mcpPost posts one JSON-RPC message to path as a streamable HTTP client
// does.
func mcpPost(tb testing.TB, s *server, path, body string, header ...string) response {
	tb.Helper()
	return s.do(tb, "POST", path, []byte(body), append([]string{"Accept", "application/json, text/event-stream"}, header...)...)
}

// TestPipeline_MCPVariants: the market's MCP tools that act as an agent or
// the operator refuse an unsigned call with a coded error and change
// nothing, at /mcp; the endpoint spelled any other way is no route; a
// tool named another way is no tool.
func TestPipeline_MCPVariants(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), nil, []string{"ASSAY_OPERATOR_TOKEN=op"}, 30*time.Second)
	agent := newDIDKey(t)
	state := []string{"/market/stats", "/market/wallets/" + agent.id()}
	before := s.snapshot(t, state...)
	tools := map[string]string{
		"purchase":           `{"listing_id":"lst_000000000000","agent":%q}`,
		"publish_listing":    `{"agent":%q,"title":"t","problem_statement":"squares of integers","artifact":"a","artifact_type":"dataset","price_usd":"1"}`,
		"deactivate_listing": `{"listing_id":"lst_000000000000","agent":%q}`,
		"challenge_listing":  `{"listing_id":"lst_000000000000","agent":%q,"evidence":"e"}`,
		"resolve_challenge":  `{"challenge_id":"chl_x","verdict":"uphold","reason":%q}`,
	}
	callOf := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, tool := range names {
		args := fmt.Sprintf(tools[tool], agent.id())
		t.Run(tool, func(t *testing.T) {
			want := "signature_missing"
			if tool == "resolve_challenge" {
				want = "unauthorized"
			}
			for _, path := range []string{"/mcp", "/%6Dcp"} {
				r := s.doDirect(t, "POST", path, callOf(tool, args), "Accept", "application/json, text/event-stream")
				var res struct {
					Result struct {
						IsError bool `json:"isError"`
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"result"`
				}
				if r.status != 200 || json.Unmarshal(r.body, &res) != nil || !res.Result.IsError || len(res.Result.Content) != 1 ||
					!strings.Contains(res.Result.Content[0].Text, `"code":"`+want+`"`) {
					t.Fatalf("%s at %s: %d %s; want a tool error %s", tool, path, r.status, r.body, want)
				}
			}
			for _, path := range []string{"/MCP", "/Mcp", "/mcp/", "//mcp"} {
				if r := mcpPost(t, s, path, callOf(tool, args)); r.status != 404 || r.code(t) != "route_not_found" {
					t.Fatalf("%s at %s: %d %s", tool, path, r.status, r.body)
				}
			}
			other := mcpPost(t, s, "/mcp", callOf(strings.ToUpper(tool[:1])+tool[1:], args))
			var rpc struct {
				Error  *struct{ Code int } `json:"error"`
				Result *struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if json.Unmarshal(other.body, &rpc) != nil || (rpc.Error == nil && (rpc.Result == nil || !rpc.Result.IsError)) {
				t.Fatalf("a tool named %s answered %d %s", strings.ToUpper(tool[:1])+tool[1:], other.status, other.body)
			}
		})
	}
	if after := s.snapshot(t, state...); after != before {
		t.Fatalf("the tool calls changed the state:\n%s\nnow:\n%s", before, after)
	}
}

// TestPipeline_MoneyBoundary: the court cannot create money the market's
// rail pays out. A contract in usd-micro is funded from the buyer's own
// wallet, by the buyer, or refused: the seed's attack (an unsigned
// create, fund, deliver and accept of a 40,000,000 usd-micro contract for
// oneself, then a signed withdrawal of another depositor's money) ends at
// the fund. Nor can anyone exhaust the dev rail's mint: notional money is
// minted per currency and buyer, never from the account deposits move
// through.
func TestPipeline_MoneyBoundary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), nil, nil, 30*time.Second)
	buyer, seller, victim := newDIDKey(t), newDIDKey(t), newDIDKey(t)
	ok := func(what string, r response, status int) map[string]any {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
		return r.obj(t)
	}
	ok("the victim's deposit", s.signedAs(t, victim, "POST", "/market/wallets/"+victim.id()+"/deposit", `{"amount_usd":"100"}`), 201)
	create := func(b, sl, price, currency string) string {
		t.Helper()
		return ok("create", s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":%s,"currency":%q,"acceptance":%s}`, b, sl, price, currency, rows100)), 200)["contract_id"].(string)
	}
	id := create(buyer.id(), seller.id(), "40000000", "usd-micro")
	at := func(action string) string { return "/contracts/" + id + "/" + action }
	state := []string{"/contracts/" + id, "/market/wallets/" + buyer.id(), "/market/wallets/" + seller.id(), "/market/stats"}
	before := s.snapshot(t, state...)
	s.wantRefused(t, "an unsigned fund in usd-micro", s.post(t, at("fund"), `{}`), 401, "signature_missing", before, state...)
	s.wantRefused(t, "a fund in usd-micro signed by the seller", s.signedAs(t, seller, "POST", at("fund"), `{}`), 403, "agent_mismatch", before, state...)
	s.wantRefused(t, "a fund from an empty wallet", s.signedAs(t, buyer, "POST", at("fund"), `{}`), 409, "insufficient_funds", before, state...)
	s.wantRefused(t, "the seller's withdrawal", s.signedAs(t, seller, "POST", "/market/wallets/"+seller.id()+"/withdraw", `{"amount_usd":"40"}`), 409, "insufficient_funds", before, state...)
	s.wantRefused(t, "a currency that looks backed", s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":5,"currency":"USD-MICRO"}`, buyer.id(), seller.id())), 400, "invalid_currency", before, state...)

	// Funded from the buyer's own wallet, and paid out of it: nothing more.
	ok("the buyer's deposit", s.signedAs(t, buyer, "POST", "/market/wallets/"+buyer.id()+"/deposit", `{"amount_usd":"50"}`), 201)
	ok("the buyer's fund", s.signedAs(t, buyer, "POST", at("fund"), `{}`), 200)
	ok("the seller's delivery", s.signedAs(t, seller, "POST", at("deliver"), `{"deliverable":{"rows":200}}`), 200)
	before = s.snapshot(t, state...)
	s.wantRefused(t, "the seller's accept", s.signedAs(t, seller, "POST", at("accept"), `{}`), 403, "agent_mismatch", before, state...)
	s.wantRefused(t, "an unsigned accept", s.post(t, at("accept"), `{}`), 401, "signature_missing", before, state...)
	ok("the buyer's accept", s.signedAs(t, buyer, "POST", at("accept"), `{}`), 200)
	wallet := func(k agentKey) string {
		return fmt.Sprint(ok("wallet", s.get(t, "/market/wallets/"+k.id()), 200)["balance_usd"])
	}
	if b, sl := wallet(buyer), wallet(seller); b != "10" || sl != "40" {
		t.Fatalf("buyer holds %s, seller %s; want 10 and 40", b, sl)
	}
	ok("the seller's withdrawal", s.signedAs(t, seller, "POST", "/market/wallets/"+seller.id()+"/withdraw", `{"amount_usd":"40"}`), 200)
	before = s.snapshot(t, state...)
	s.wantRefused(t, "a second withdrawal", s.signedAs(t, seller, "POST", "/market/wallets/"+seller.id()+"/withdraw", `{"amount_usd":"1"}`), 409, "insufficient_funds", before, state...)

	// The dev rail's mint: contracts at the largest price, funded by
	// anyone in the open court, mint credits from their buyer's own mint
	// account, which meets its bound (409 balance_limit) after a few dozen
	// at most; the dev rail's account never moves, and no one else's
	// money depends on the attacker's mint: deposits and other buyers'
	// contracts go on.
	const maxPrice = "9007199254740991"
	minted, exhausted := 0, false
	for i := 0; i < 200 && !exhausted; i++ {
		c := create("did:e2e:attacker", fmt.Sprintf("did:e2e:accomplice-%d", i), maxPrice, "credits")
		switch r := s.post(t, "/contracts/"+c+"/fund", `{}`); {
		case r.status == 200:
			minted++
		case r.status == 409 && r.code(t) == "balance_limit":
			exhausted = true
		default:
			t.Fatalf("an attacker's fund: %d %s", r.status, r.body)
		}
		u := create(buyer.id(), fmt.Sprintf("did:e2e:accomplice-%d", i), maxPrice, "usd-micro")
		if r := s.post(t, "/contracts/"+u+"/fund", `{}`); r.status != 401 {
			t.Fatalf("an unsigned fund of a usd-micro contract at the largest price: %d %s", r.status, r.body)
		}
	}
	if !exhausted {
		t.Fatalf("the attacker's mint took %d contracts at the largest price and met no bound", minted)
	}
	rail := ok("the dev rail's account", s.get(t, "/accounts/rail:dev"), 200)["balances"].(map[string]any)
	if _, moved := rail["credits"]; moved {
		t.Fatalf("the dev rail's account moved credits: %v", rail)
	}
	mint := ok("the attacker's mint", s.get(t, "/accounts/mint:credits:did:e2e:attacker"), 200)["balances"].(map[string]any)
	if mint["credits"] != float64(minted)*-9007199254740991.0 {
		t.Fatalf("the attacker's mint holds %v after %d fundings", mint, minted)
	}
	t.Logf("the attacker's own mint met its bound after %d contracts at the largest price", minted)
	ok("the victim's second deposit", s.signedAs(t, victim, "POST", "/market/wallets/"+victim.id()+"/deposit", `{"amount_usd":"1000000000"}`), 201)
	v := create(victim.id(), seller.id(), "50", "credits")
	ok("the victim's credits fund", s.post(t, "/contracts/"+v+"/fund", `{}`), 200)
	if l := ok("ledger", s.get(t, "/ledger"), 200); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
}

// doAt sends a request with the Host header host, signed by k for that
// authority when k is set.
func (s *server) doAt(tb testing.TB, host string, k *agentKey, method, path, body string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if k != nil {
		h := k.signHeaders(tb, method, "http://"+host, path, []byte(body), signOpts{})
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// TestPipeline_Authority: a signature covers @authority, and the server
// takes only its own origins (--public-url, by default the listen address
// and loopback names): a purchase signed for evil-market.example and
// replayed with that Host is refused with 401 authority_mismatch, and
// charges no one.
func TestPipeline_Authority(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), nil, nil, 30*time.Second)
	agent := newDIDKey(t)
	deposit := "/market/wallets/" + agent.id() + "/deposit"
	state := []string{"/market/wallets/" + agent.id(), "/market/stats"}
	before := s.snapshot(t, state...)
	s.wantRefused(t, "a deposit signed for another server", s.doAt(t, "evil-market.example", &agent, "POST", deposit, `{"amount_usd":"5"}`), 401, "authority_mismatch", before, state...)
	if r := s.signedAs(t, agent, "POST", deposit, `{"amount_usd":"5"}`); r.status != 201 {
		t.Fatalf("a deposit signed for this server (loopback): %d %s", r.status, r.body)
	}

	// A server named by --public-url takes that name, and no other.
	s = s.restart(t, func() {}, []string{"--public-url", "https://assay.example"}, nil)
	before = s.snapshot(t, state...)
	s.wantRefused(t, "a deposit signed for loopback", s.signedAs(t, agent, "POST", deposit, `{"amount_usd":"5"}`), 401, "authority_mismatch", before, state...)
	if r := s.doAt(t, "assay.example", &agent, "POST", deposit, `{"amount_usd":"5"}`); r.status != 201 {
		t.Fatalf("a deposit signed for assay.example: %d %s", r.status, r.body)
	}
}

// TestPipeline_ConfusablePrincipals: ids are compared case folded and by
// their Unicode skeleton, so that an id a person could take for one
// registered already is refused with principal_confusable.
func TestPipeline_ConfusablePrincipals(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: runs assay")
	}
	data := t.TempDir()
	registerPrincipal(t, data, newPrincipalKey(t, "alice"), "economic:write")
	for _, id := range []string{"Alice", "ALICE", "\u0430lice"} {
		k := newPrincipalKey(t, id)
		cmd := exec.Command(binary, "principals", "add", "--data", data, "--key-id", id, "--public-key", k.publicBase64(),
			"--tenant", "acme", "--roles", "requester", "--scopes", "economic:write")
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("can be taken for")) {
			t.Fatalf("principals add %q: %v\n%s", id, err, out)
		}
	}
	list := assay(t, nil, "principals", "list", "--data", data)
	if bytes.Contains(list, []byte("Alice")) || bytes.Contains(list, []byte("\u0430lice")) {
		t.Fatalf("a confusable id was registered: %s", list)
	}
}
