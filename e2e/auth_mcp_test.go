package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// signingTransport signs every request a client sends (RFC 9421), as an
// agent's MCP client does on the signed market: the same signature as the
// REST routes take, on each HTTP request that carries a JSON-RPC message.
type signingTransport struct {
	tb  testing.TB
	key agentKey
}

func (st signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	base := req.URL.Scheme + "://" + req.URL.Host
	h := st.key.signHeaders(st.tb, req.Method, base, req.URL.Path, body, signOpts{})
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	return http.DefaultTransport.RoundTrip(req)
}

// connectSigned connects an MCP client whose every request k signs.
func connectSigned(tb testing.TB, s *server, k agentKey) *mcp.ClientSession {
	tb.Helper()
	t := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: signingTransport{tb, k}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "assay-e2e-signed", Version: "test"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		tb.Fatalf("mcp connect: %v\n%s", err, s.log())
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// TestAuth_marketMCP runs /mcp on the signed market: the tools that act as
// an agent (publish_listing, purchase, challenge_listing,
// deactivate_listing) succeed when the HTTP request carrying the call is
// signed by that agent's did:key or carries its bearer API key, and are
// refused, changing nothing, when it is unsigned or another agent's; the
// reads stay open; a replayed, stale or revoked credential is refused at
// the HTTP request with a coded 401.
func TestAuth_marketMCP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	keyID, token := issueKey(t, data, "mcp-buyer")
	env := []string{"ASSAY_OPERATOR_TOKEN=op"}
	s := startServe(t, data, nil, env, 30*time.Second)
	seller, buyer := newDIDKey(t), newDIDKey(t)
	for _, agent := range []string{seller.id(), buyer.id(), "mcp-buyer"} {
		if r := s.bearer(t, "op", "POST", "/market/wallets/"+agent+"/deposit", `{"amount_usd":"10"}`); r.status != http.StatusCreated {
			t.Fatalf("deposit %d %s", r.status, r.body)
		}
	}
	anon, asSeller, asBuyer, withKey := connectMCP(t, s, ""), connectSigned(t, s, seller), connectSigned(t, s, buyer), connectMCP(t, s, token)

	publish := func(agent, title string) map[string]any {
		return map[string]any{"agent": agent, "title": title, "problem_statement": "rota of " + title + " for mcp auth checks",
			"artifact": map[string]any{"ok": true}, "artifact_type": "solution", "price_usd": "1"}
	}
	paths := []string{"/market/stats", "/market/wallets/" + seller.id(), "/market/wallets/" + buyer.id(), "/market/wallets/mcp-buyer"}
	refused := func(what string, cs *mcp.ClientSession, tool string, args any, code string, extra ...string) {
		t.Helper()
		before := s.snapshot(t, append(paths, extra...)...)
		if _, got := call(t, cs, tool, args); got != code {
			t.Fatalf("%s: %s %q, want %s", what, tool, got, code)
		}
		if after := s.snapshot(t, append(paths, extra...)...); after != before {
			t.Fatalf("%s changed the state:\n%s\nnow:\n%s", what, before, after)
		}
	}
	succeeds := func(what string, cs *mcp.ClientSession, tool string, args any) map[string]any {
		t.Helper()
		out, code := call(t, cs, tool, args)
		if code != "" {
			t.Fatalf("%s: %s refused: %s", what, tool, code)
		}
		return out
	}

	// Reads are open.
	if _, err := anon.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	succeeds("an anonymous search", anon, "search_listings", map[string]any{"query": "rota"})

	refused("an anonymous publish", anon, "publish_listing", publish(seller.id(), "anon"), "signature_missing")
	refused("a publish signed by another agent", asBuyer, "publish_listing", publish(seller.id(), "forged"), "agent_mismatch")
	refused("a publish with another agent's API key", withKey, "publish_listing", publish(seller.id(), "keyed"), "agent_mismatch")
	one := succeeds("a did:key's publish", asSeller, "publish_listing", publish(seller.id(), "one"))["listing"].(map[string]any)["listing_id"].(string)
	two := succeeds("a did:key's publish", asSeller, "publish_listing", publish(seller.id(), "two"))["listing"].(map[string]any)["listing_id"].(string)
	three := succeeds("a did:key's publish", asSeller, "publish_listing", publish(seller.id(), "three"))["listing"].(map[string]any)["listing_id"].(string)
	listings := []string{"/market/listings/" + one, "/market/listings/" + two, "/market/listings/" + three}

	buy := func(id, agent string) map[string]any { return map[string]any{"listing_id": id, "agent": agent} }
	refused("an anonymous purchase", anon, "purchase", buy(one, buyer.id()), "signature_missing", listings...)
	refused("a purchase signed by the seller for the buyer", asSeller, "purchase", buy(one, buyer.id()), "agent_mismatch", listings...)
	succeeds("a did:key's purchase", asBuyer, "purchase", buy(one, buyer.id()))
	succeeds("an API key's purchase", withKey, "purchase", buy(two, "mcp-buyer"))

	chal := func(id, agent string) map[string]any {
		return map[string]any{"listing_id": id, "agent": agent, "evidence": map[string]any{"unstaffed": []int{3}}, "reason": "empty shift"}
	}
	refused("an anonymous challenge", anon, "challenge_listing", chal(one, buyer.id()), "signature_missing", listings...)
	refused("a challenge in another buyer's name", withKey, "challenge_listing", chal(one, buyer.id()), "agent_mismatch", listings...)
	succeeds("a did:key's challenge", asBuyer, "challenge_listing", chal(one, buyer.id()))

	deact := func(id, agent string) map[string]any { return map[string]any{"listing_id": id, "agent": agent} }
	refused("an anonymous deactivation", anon, "deactivate_listing", deact(three, seller.id()), "signature_missing", listings...)
	refused("a deactivation by another agent", asBuyer, "deactivate_listing", deact(three, seller.id()), "agent_mismatch", listings...)
	succeeds("the seller's deactivation", asSeller, "deactivate_listing", deact(three, seller.id()))

	// The HTTP request itself: a signature used twice, a stale one, a
	// revoked API key are refused before any tool runs.
	rpc := func(id int, tool string, args string) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	}
	accept := []string{"Accept", "application/json, text/event-stream"}
	four := succeeds("a did:key's publish", asSeller, "publish_listing", publish(seller.id(), "four"))["listing"].(map[string]any)["listing_id"].(string)
	listings = append(listings, "/market/listings/"+four)
	body := rpc(7, "purchase", fmt.Sprintf(`{"listing_id":%q,"agent":%q}`, four, buyer.id()))
	h := append(buyer.signHeaders(t, "POST", s.base, "/mcp", body, signOpts{}), accept...)
	if r := s.do(t, "POST", "/mcp", body, h...); r.status != http.StatusOK || bytes.Contains(r.body, []byte(`"isError":true`)) {
		t.Fatalf("a signed tools/call: %d %s", r.status, r.body)
	}
	before := s.snapshot(t, append(paths, listings...)...)
	s.wantRefused(t, "a replayed tools/call", s.do(t, "POST", "/mcp", body, h...), 401, "nonce_replayed", before, append(paths, listings...)...)
	stale := append(buyer.signHeaders(t, "POST", s.base, "/mcp", body, signOpts{created: time.Now().Add(-time.Hour)}), accept...)
	s.wantRefused(t, "a stale tools/call", s.do(t, "POST", "/mcp", body, stale...), 401, "signature_expired", before, append(paths, listings...)...)

	s = s.restart(t, func() { assay(t, nil, "principals", "revoke-key", "--data", data, "--id", keyID) }, nil, env)
	before = s.snapshot(t, append(paths, listings...)...)
	body = rpc(8, "purchase", fmt.Sprintf(`{"listing_id":%q,"agent":"mcp-buyer"}`, four))
	s.wantRefused(t, "a revoked API key's tools/call", s.do(t, "POST", "/mcp", body, append([]string{"Authorization", "Bearer " + token}, accept...)...),
		401, "api_key_invalid", before, append(paths, listings...)...)
	if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
}
