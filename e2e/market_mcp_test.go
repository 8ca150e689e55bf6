package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the operator's token to every request of an MCP session.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP opens a go-sdk client session to s's /mcp over the
// streamable HTTP transport.
func connectMCP(tb testing.TB, s *server, token string) *mcp.ClientSession {
	tb.Helper()
	t := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1}
	if token != "" {
		t.HTTPClient = &http.Client{Transport: bearer{token}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "assay-e2e", Version: "test"}, nil)
	cs, err := c.Connect(context.Background(), t, nil)
	if err != nil {
		tb.Fatalf("mcp connect: %v\n%s", err, s.log())
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and answers its structured content, or the error
// code of a tool error.
func call(tb testing.TB, cs *mcp.ClientSession, name string, args any) (map[string]any, string) {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if err := json.Unmarshal([]byte(text), &body); err != nil || body.Error.Code == "" {
			tb.Fatalf("%s: tool error is not a coded body: %s", name, text)
		}
		return nil, body.Error.Code
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return m, ""
}

// TestMarketMCP drives the market through the seed's nine tools over a
// real MCP client session, with wallets, replays and the test clock over
// REST, and checks each outcome on both interfaces: publication with a
// passing, a failing and no checker; search classes; purchase and
// settlement after the window; an upheld challenge by failing replay; an
// operator-resolved one; bond return on clean retirement; level-3
// promotion; insufficient funds; double purchase; a challenge after the
// window closed; the ledger sums to zero. The market is open (agents
// named in arguments): auth_mcp_test.go tests the signed one.
func TestMarketMCP(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), "ASSAY_OPERATOR_TOKEN=op", "ASSAY_TEST_CLOCK=1", "ASSAY_MARKET_AUTH=open")
	cs := connectMCP(t, s, "")
	op := connectMCP(t, s, "op")

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.OutputSchema == nil {
			t.Errorf("%s lacks a schema", tl.Name)
		}
	}
	// Every service's tools are listed; the seed's nine are the market's.
	for _, want := range []string{"agent_profile", "challenge_listing", "deactivate_listing", "get_listing", "marketplace_stats",
		"publish_listing", "purchase", "resolve_challenge", "search_listings"} {
		if !slices.Contains(names, want) {
			t.Fatalf("no tool %s among %q", want, names)
		}
	}

	wasmBytes, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasmBytes, "Content-Type", "application/wasm")
	if up.status != http.StatusCreated {
		t.Fatalf("upload %d %s", up.status, up.body)
	}
	sum := up.obj(t)["sha256"].(string)
	ok := func(m map[string]any, code string) map[string]any {
		t.Helper()
		if code != "" {
			t.Fatalf("tool error %s", code)
		}
		return m
	}
	fails := func(code string) func(map[string]any, string) {
		return func(m map[string]any, got string) {
			t.Helper()
			if got != code {
				t.Fatalf("got %v %q, want error %s", m, got, code)
			}
		}
	}
	balance := func(agent string) float64 {
		t.Helper()
		r := s.get(t, "/market/wallets/"+agent)
		if r.status != 200 {
			t.Fatalf("wallet %d %s", r.status, r.body)
		}
		return r.obj(t)["balance_usd"].(float64)
	}
	deposit := func(agent, amount string) {
		t.Helper()
		if r := s.post(t, "/market/wallets/"+agent+"/deposit", fmt.Sprintf(`{"amount_usd":%q}`, amount)); r.status != 201 {
			t.Fatalf("deposit %d %s", r.status, r.body)
		}
	}
	balanced := func() {
		t.Helper()
		if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
			t.Fatalf("ledger %s", r.body)
		}
	}
	squares := "a table of the squares of the integers 1 to 3 for hospital rota checks"
	publish := func(seller, problem, artifact string, checker any) (map[string]any, string) {
		args := map[string]any{"agent": seller, "title": "squares", "problem_statement": problem, "artifact": artifact,
			"artifact_type": "dataset", "price_usd": "2.50", "est_recompute_cost_usd": 25}
		if checker != nil {
			args["checker"] = checker
		}
		return call(t, cs, "publish_listing", args)
	}
	table := "1 1\n2 4\n3 9\n"
	withChecker := map[string]any{"sha256": sum}

	// Publication: a passing checker is level 1; a failing one refuses;
	// none is level 2 with a bond, refused when the wallet is short.
	pub := ok(publish("seller", squares, table, withChecker))
	l1 := pub["listing"].(map[string]any)
	id := l1["listing_id"].(string)
	if l1["verification_level"] != 1.0 || l1["bond_usd"] != 0.0 || pub["replay"].(map[string]any)["kind"] != "pass" {
		t.Fatalf("published %v", pub)
	}
	fails("checker_failed")(publish("seller", squares, "1 1\n2 5\n", withChecker))
	fails("insufficient_funds")(publish("seller-b", "schedule 12 workers across shift=3 nurses hospital rota", "rota", nil))
	deposit("seller-b", "1")
	l2 := ok(publish("seller-b", "schedule 12 workers across shift=3 nurses hospital rota", "rota", nil))["listing"].(map[string]any)
	if l2["verification_level"] != 2.0 || l2["bond_usd"] != 0.5 || balance("seller-b") != 0.5 {
		t.Fatalf("level 2 %v, wallet %v", l2, balance("seller-b"))
	}
	got := ok(call(t, cs, "get_listing", map[string]any{"listing_id": id}))
	if _, leaked := got["artifact"]; leaked || got["has_checker"] != true {
		t.Fatalf("get_listing %v", got)
	}

	// Search: each class, a conflict capped at weak, and
	// no_reliable_match when nothing reaches strong.
	rota := l2["listing_id"].(string)
	classOf := func(args map[string]any) (string, map[string]any) {
		t.Helper()
		r := ok(call(t, cs, "search_listings", args))
		for _, x := range r["results"].([]any) {
			x := x.(map[string]any)
			if x["listing_id"] == rota {
				return x["match"].(map[string]any)["class"].(string), r
			}
		}
		t.Fatalf("search %v did not find %s: %v", args, rota, r)
		return "", nil
	}
	for _, tc := range []struct {
		query, class string
		reliable     bool
	}{
		{"schedule 12 workers across shift=3 nurses hospital rota", "exact", true},
		{"hospital rota schedule nurses 12 workers shift=3 weekly", "strong", true},
		{"hospital rota schedule nurses with a $5 budget", "partial", false},
		{"hospital parking fees for visitors", "weak", false},
	} {
		class, r := classOf(map[string]any{"query": tc.query})
		if class != tc.class || r["no_reliable_match"] == tc.reliable {
			t.Errorf("%q: class %s, response %v; want %s", tc.query, class, r, tc.class)
		}
	}
	class, r := classOf(map[string]any{"query": "hospital rota schedule nurses 15 workers shift=3"})
	m := r["results"].([]any)[0].(map[string]any)["match"].(map[string]any)
	if class != "weak" || r["no_reliable_match"] != true || !strings.HasPrefix(m["warning"].(string), "CONSTRAINT CONFLICT") ||
		m["constraint_diff"].(map[string]any)["conflicting"].([]any)[0] != "worker: you need 15, listing has 12" {
		t.Fatalf("conflict %s %v", class, r)
	}
	byFP := ok(s.get(t, "/market/fingerprint?text=schedule+12+workers+across+shift%3D3+nurses+hospital+rota").obj(t), "")
	if c, _ := classOf(map[string]any{"query_fingerprint": byFP["fingerprint"]}); c != "exact" {
		t.Fatalf("by fingerprint: %s", c)
	}

	// Purchase: insufficient funds, then one purchase; a second is refused.
	fails("insufficient_funds")(call(t, cs, "purchase", map[string]any{"listing_id": id, "agent": "buyer"}))
	deposit("buyer", "20")
	b := ok(call(t, cs, "purchase", map[string]any{"listing_id": id, "agent": "buyer", "purpose": "rota checks", "idempotency_key": "buy-1"}))
	if b["artifact"] != table || b["total_usd"] != 2.575 || b["purchase"].(map[string]any)["status"] != "held" {
		t.Fatalf("bought %v", b)
	}
	again := ok(call(t, cs, "purchase", map[string]any{"listing_id": id, "agent": "buyer", "purpose": "rota checks", "idempotency_key": "buy-1"}))
	if again["purchase"].(map[string]any)["purchase_id"] != b["purchase"].(map[string]any)["purchase_id"] {
		t.Fatalf("idempotent retry bought again: %v", again)
	}
	fails("already_purchased")(call(t, cs, "purchase", map[string]any{"listing_id": id, "agent": "buyer"}))
	if balance("buyer") != 17.425 || balance("seller") != 0 {
		t.Fatalf("after purchase buyer %v seller %v", balance("buyer"), balance("seller"))
	}

	// Level 3: three distinct buyers whose replays pass, with no failure.
	// One buyer asking three times confirms the listing once.
	for range 3 {
		if r := s.post(t, "/market/listings/"+id+"/replay", `{"agent":"buyer"}`); r.status != 200 {
			t.Fatalf("replay %d %s", r.status, r.body)
		}
	}
	if l := ok(call(t, cs, "get_listing", map[string]any{"listing_id": id})); l["verification_level"] != 1.0 || l["confirmed_buyers"] != 1.0 {
		t.Fatalf("one buyer promoted it: %v", l)
	}
	for _, b := range []string{"buyer-2", "buyer-3"} {
		deposit(b, "20")
		ok(call(t, cs, "purchase", map[string]any{"listing_id": id, "agent": b}))
		if r := s.post(t, "/market/listings/"+id+"/replay", `{"agent":"`+b+`"}`); r.status != 200 {
			t.Fatalf("replay %d %s", r.status, r.body)
		}
	}
	if l := ok(call(t, cs, "get_listing", map[string]any{"listing_id": id})); l["verification_level"] != 3.0 || l["confirmed_buyers"] != 3.0 {
		t.Fatalf("not promoted: %v", l)
	}

	// Settlement after the window (1 h at level 1), by the server's test
	// clock; a challenge after it is refused.
	if r := s.post(t, "/market/clock", `{"advance":"61m"}`, "Authorization", "Bearer op"); r.status != 200 {
		t.Fatalf("clock %d %s", r.status, r.body)
	}
	if balance("seller") != 7.5 {
		t.Fatalf("seller after the window %v", balance("seller"))
	}
	p := s.get(t, "/market/purchases/"+b["purchase"].(map[string]any)["purchase_id"].(string)).obj(t)
	if p["status"] != "settled" {
		t.Fatalf("purchase %v", p)
	}
	_, code := call(t, cs, "challenge_listing", map[string]any{"listing_id": id, "agent": "buyer", "evidence": "4"})
	if code != "challenge_window_closed" && code != "purchase_closed" {
		t.Fatalf("late challenge: %q", code)
	}
	prof := ok(call(t, cs, "agent_profile", map[string]any{"agent_id": "seller"}))
	if prof["trades_sold"] != 3.0 || prof["challenges_lost"] != 0.0 {
		t.Fatalf("profile %v", prof)
	}

	// An upheld challenge by failing replay: refund, listing pulled.
	id3 := ok(publish("seller3", "squares of 1 to 3 for the second table", table, withChecker))["listing"].(map[string]any)["listing_id"].(string)
	ok(call(t, cs, "purchase", map[string]any{"listing_id": id3, "agent": "buyer"}))
	ch := ok(call(t, cs, "challenge_listing", map[string]any{"listing_id": id3, "agent": "buyer", "evidence": "4", "reason": "4 is missing"}))
	if c := ch["challenge"].(map[string]any); c["status"] != "upheld" || c["basis"] != "checker_replay" {
		t.Fatalf("challenge %v", ch)
	}
	if balance("buyer") != 17.425 {
		t.Fatalf("buyer after refund %v", balance("buyer"))
	}
	if l := ok(call(t, cs, "get_listing", map[string]any{"listing_id": id3})); l["status"] != "pulled" {
		t.Fatalf("listing %v", l)
	}

	// A level-2 challenge goes to the operator, who upholds it over MCP:
	// refund and the bond to the challenger.
	ok(call(t, cs, "purchase", map[string]any{"listing_id": rota, "agent": "buyer"}))
	ch = ok(call(t, cs, "challenge_listing", map[string]any{"listing_id": rota, "agent": "buyer", "evidence": "shift 3 is unstaffed"}))
	cid := ch["challenge"].(map[string]any)["challenge_id"].(string)
	if ch["challenge"].(map[string]any)["status"] != "open" {
		t.Fatalf("challenge %v", ch)
	}
	fails("unauthorized")(call(t, cs, "resolve_challenge", map[string]any{"challenge_id": cid, "verdict": "uphold"}))
	res := ok(call(t, op, "resolve_challenge", map[string]any{"challenge_id": cid, "verdict": "uphold", "reason": "confirmed"}))
	if res["challenge"].(map[string]any)["status"] != "upheld" || res["purchase"].(map[string]any)["status"] != "refunded" {
		t.Fatalf("resolved %v", res)
	}
	if balance("buyer") != 17.925 {
		t.Fatalf("buyer after the bond %v", balance("buyer"))
	}
	if prof := ok(call(t, cs, "agent_profile", map[string]any{"agent_id": "seller-b"})); prof["challenges_lost"] != 1.0 || prof["stake_forfeited_usd"] != 0.5 {
		t.Fatalf("profile %v", prof)
	}

	// Clean retirement returns a level-2 bond.
	deposit("seller-c", "0.5")
	lc := ok(publish("seller-c", "anything at all", "x", nil))["listing"].(map[string]any)["listing_id"].(string)
	fails("not_seller")(call(t, cs, "deactivate_listing", map[string]any{"listing_id": lc, "agent": "buyer"}))
	d := ok(call(t, cs, "deactivate_listing", map[string]any{"listing_id": lc, "agent": "seller-c"}))
	if d["bond_returned_usd"] != 0.5 || balance("seller-c") != 0.5 {
		t.Fatalf("retired %v, wallet %v", d, balance("seller-c"))
	}

	st := ok(call(t, cs, "marketplace_stats", map[string]any{}))
	if st["purchases"] != 5.0 || st["challenges_upheld"] != 2.0 || st["buyer_confirmations"] != 3.0 {
		t.Fatalf("stats %v", st)
	}
	balanced()
}
