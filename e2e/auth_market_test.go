package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAuth_marketREST runs the market signed, as assay serve starts it by
// default: every route that spends, lists, withdraws, deactivates,
// challenges or deposits succeeds when made by the agent it names (signed
// by its did:key, by a registered principal, or with its bearer API key)
// and is refused, changing nothing, when unsigned, signed by another
// agent, replayed, stale, tampered, by a revoked key or API key, or by a
// principal without the write scope. Reads stay open.
func TestAuth_marketREST(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	seller, buyer := newDIDKey(t), newDIDKey(t)
	acme := newPrincipalKey(t, "acme-seller")
	reader := newPrincipalKey(t, "acme-reader")
	registerPrincipal(t, data, acme, "economic:read,economic:write")
	registerPrincipal(t, data, reader, "economic:read")
	keyID, token := issueKey(t, data, "key-buyer")
	env := []string{"ASSAY_OPERATOR_TOKEN=op"}
	s := startServe(t, data, nil, env, 30*time.Second)
	if !s.logged("market auth=signed") {
		t.Errorf("the start-up log does not say the market is signed:\n%s", s.log())
	}

	wallets := func(extra ...string) []string {
		ps := []string{"/market/wallets/" + seller.id(), "/market/wallets/" + buyer.id(), "/market/wallets/acme-seller", "/market/wallets/key-buyer", "/market/stats"}
		return append(ps, extra...)
	}
	ok := func(what string, r response, status int) map[string]any {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s; want %d", what, r.status, r.body, status)
		}
		return r.obj(t)
	}

	// Deposits on the dev rail: the operator's, or the agent's own.
	before := s.snapshot(t, wallets()...)
	s.wantRefused(t, "an unsigned deposit", s.post(t, "/market/wallets/"+buyer.id()+"/deposit", `{"amount_usd":"20"}`), 401, "signature_missing", before, wallets()...)
	s.wantRefused(t, "a deposit signed by another agent", s.signedAs(t, seller, "POST", "/market/wallets/"+buyer.id()+"/deposit", `{"amount_usd":"20"}`), 403, "agent_mismatch", before, wallets()...)
	s.wantRefused(t, "a deposit with a wrong operator token", s.bearer(t, "not-op", "POST", "/market/wallets/"+buyer.id()+"/deposit", `{"amount_usd":"20"}`), 401, "signature_missing", before, wallets()...)
	ok("the operator's deposit", s.bearer(t, "op", "POST", "/market/wallets/"+buyer.id()+"/deposit", `{"amount_usd":"20"}`), 201)
	ok("the operator's deposit", s.bearer(t, "op", "POST", "/market/wallets/key-buyer/deposit", `{"amount_usd":"20"}`), 201)
	ok("the operator's deposit", s.bearer(t, "op", "POST", "/market/wallets/acme-seller/deposit", `{"amount_usd":"5"}`), 201)
	ok("a did:key's own deposit", s.signedAs(t, seller, "POST", "/market/wallets/"+seller.id()+"/deposit", `{"amount_usd":"3"}`), 201)

	// Publish: level 2, a bond from the seller's wallet.
	publish := func(agent, title string) string {
		return fmt.Sprintf(`{"agent":%q,"title":%q,"problem_statement":"schedule %s across three shifts for auth checks","artifact":{"ok":true},"artifact_type":"solution","price_usd":"1"}`, agent, title, title)
	}
	before = s.snapshot(t, wallets()...)
	s.wantRefused(t, "an unsigned publish", s.post(t, "/market/listings", publish(seller.id(), "unsigned")), 401, "signature_missing", before, wallets()...)
	s.wantRefused(t, "a publish signed by another agent", s.signedAs(t, buyer, "POST", "/market/listings", publish(seller.id(), "forged")), 403, "agent_mismatch", before, wallets()...)
	s.wantRefused(t, "a publish by a principal without economic:write", s.signedAs(t, reader, "POST", "/market/listings", publish("acme-reader", "reader")), 403, "insufficient_scope", before, wallets()...)
	s.wantRefused(t, "a publish with an API key for another agent", s.bearer(t, token, "POST", "/market/listings", publish(seller.id(), "keyed")), 403, "agent_mismatch", before, wallets()...)
	stale := seller.signHeaders(t, "POST", s.base, "/market/listings", []byte(publish(seller.id(), "stale")), signOpts{created: time.Now().Add(-10 * time.Minute)})
	s.wantRefused(t, "a stale signature", s.do(t, "POST", "/market/listings", []byte(publish(seller.id(), "stale")), stale...), 401, "signature_expired", before, wallets()...)
	tampered := seller.signHeaders(t, "POST", s.base, "/market/listings", []byte(publish(seller.id(), "one")), signOpts{})
	s.wantRefused(t, "a body changed after signing", s.do(t, "POST", "/market/listings", []byte(publish(seller.id(), "two")), tampered...), 401, "content_digest_mismatch", before, wallets()...)
	forged := seller.signHeaders(t, "POST", s.base, "/market/listings", []byte(publish(seller.id(), "forged")), signOpts{})
	forged[5] = "sig1=:" + strings.Repeat("A", 86) + "==:"
	s.wantRefused(t, "a forged signature", s.do(t, "POST", "/market/listings", []byte(publish(seller.id(), "forged")), forged...), 401, "signature_invalid", before, wallets()...)
	unknown := newPrincipalKey(t, "nobody")
	s.wantRefused(t, "an unregistered keyid", s.signedAs(t, unknown, "POST", "/market/listings", publish("nobody", "nobody")), 401, "unknown_key", before, wallets()...)
	s.wantRefused(t, "a bearer token that is no API key", s.bearer(t, "assay_ak_000000000000_"+strings.Repeat("0", 64), "POST", "/market/listings", publish("key-buyer", "k")), 401, "api_key_invalid", before, wallets()...)

	byDID := ok("a did:key's publish", s.signedAs(t, seller, "POST", "/market/listings", publish(seller.id(), "did rota")), 201)
	didListing := byDID["listing"].(map[string]any)["listing_id"].(string)
	byPrincipal := ok("a registered principal's publish", s.signedAs(t, acme, "POST", "/market/listings", publish("acme-seller", "acme rota")), 201)
	acmeListing := byPrincipal["listing"].(map[string]any)["listing_id"].(string)
	listings := wallets("/market/listings/"+didListing, "/market/listings/"+acmeListing)
	// The receipts name the authenticated actor.
	if a := subjectOf(t, byDID["receipt"].(map[string]any))["actor"]; a != seller.id() {
		t.Errorf("the did:key's listing receipt names actor %v", a)
	}
	if a := subjectOf(t, byPrincipal["receipt"].(map[string]any))["actor"]; a != "principal:acme-seller" {
		t.Errorf("the principal's listing receipt names actor %v", a)
	}

	// Reads stay open.
	ok("an unsigned read", s.get(t, "/market/listings/"+didListing), 200)
	ok("an unsigned search", s.post(t, "/market/search", `{"query":"schedule did rota"}`), 200)

	// Purchase.
	buy := func(agent string) string { return fmt.Sprintf(`{"agent":%q,"purpose":"auth checks"}`, agent) }
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "an unsigned purchase", s.post(t, "/market/listings/"+didListing+"/purchase", buy(buyer.id())), 401, "signature_missing", before, listings...)
	s.wantRefused(t, "a purchase signed by the seller for the buyer", s.signedAs(t, seller, "POST", "/market/listings/"+didListing+"/purchase", buy(buyer.id())), 403, "agent_mismatch", before, listings...)
	s.wantRefused(t, "a purchase with the operator's token", s.bearer(t, "op", "POST", "/market/listings/"+didListing+"/purchase", buy(buyer.id())), 401, "signature_missing", before, listings...)
	ok("a did:key's purchase", s.signedAs(t, buyer, "POST", "/market/listings/"+didListing+"/purchase", buy(buyer.id())), 201)
	bought := ok("an API key's purchase", s.bearer(t, token, "POST", "/market/listings/"+acmeListing+"/purchase", buy("key-buyer")), 201)
	if a := subjectOf(t, bought["receipt"].(map[string]any))["actor"]; a != "api_key:"+keyID {
		t.Errorf("the API key's purchase receipt names actor %v", a)
	}

	// Challenge.
	challenge := func(agent string) string {
		return fmt.Sprintf(`{"agent":%q,"evidence":{"unstaffed":[3]},"reason":"a shift is empty"}`, agent)
	}
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "an unsigned challenge", s.post(t, "/market/listings/"+didListing+"/challenge", challenge(buyer.id())), 401, "signature_missing", before, listings...)
	s.wantRefused(t, "a challenge in another buyer's name", s.bearer(t, token, "POST", "/market/listings/"+didListing+"/challenge", challenge(buyer.id())), 403, "agent_mismatch", before, listings...)
	ch := ok("a did:key's challenge", s.signedAs(t, buyer, "POST", "/market/listings/"+didListing+"/challenge", challenge(buyer.id())), 201)
	if ch["challenge"].(map[string]any)["status"] != "open" || subjectOf(t, ch["receipt"].(map[string]any))["actor"] != buyer.id() {
		t.Fatalf("challenge %v", ch)
	}

	// Withdraw; a replayed request is refused, once its nonce is used.
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "an unsigned withdrawal", s.post(t, "/market/wallets/"+buyer.id()+"/withdraw", `{"amount_usd":"1"}`), 401, "signature_missing", before, listings...)
	s.wantRefused(t, "a withdrawal by the operator", s.bearer(t, "op", "POST", "/market/wallets/"+buyer.id()+"/withdraw", `{"amount_usd":"1"}`), 401, "signature_missing", before, listings...)
	s.wantRefused(t, "a withdrawal from another's wallet", s.signedAs(t, seller, "POST", "/market/wallets/"+buyer.id()+"/withdraw", `{"amount_usd":"1"}`), 403, "agent_mismatch", before, listings...)
	w := buyer.signHeaders(t, "POST", s.base, "/market/wallets/"+buyer.id()+"/withdraw", []byte(`{"amount_usd":"1"}`), signOpts{})
	ok("a did:key's withdrawal", s.do(t, "POST", "/market/wallets/"+buyer.id()+"/withdraw", []byte(`{"amount_usd":"1"}`), w...), 200)
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "a replayed withdrawal", s.do(t, "POST", "/market/wallets/"+buyer.id()+"/withdraw", []byte(`{"amount_usd":"1"}`), w...), 401, "nonce_replayed", before, listings...)
	ok("an API key's withdrawal", s.bearer(t, token, "POST", "/market/wallets/key-buyer/withdraw", `{"amount_usd":"1"}`), 200)

	// Deactivate.
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "an unsigned deactivation", s.post(t, "/market/listings/"+acmeListing+"/deactivate", `{"agent":"acme-seller"}`), 401, "signature_missing", before, listings...)
	s.wantRefused(t, "another seller's deactivation", s.signedAs(t, seller, "POST", "/market/listings/"+acmeListing+"/deactivate", `{"agent":"acme-seller"}`), 403, "agent_mismatch", before, listings...)

	// Revoked: the registered key and the API key, revoked while the
	// server is stopped (badger holds one process), are refused.
	s = s.restart(t, func() {
		assay(t, nil, "principals", "revoke", "--data", data, "--key-id", "acme-seller")
		assay(t, nil, "principals", "revoke-key", "--data", data, "--id", keyID)
	}, nil, env)
	before = s.snapshot(t, listings...)
	s.wantRefused(t, "a revoked principal's deactivation", s.signedAs(t, acme, "POST", "/market/listings/"+acmeListing+"/deactivate", `{"agent":"acme-seller"}`), 401, "unknown_key", before, listings...)
	s.wantRefused(t, "a revoked API key's withdrawal", s.bearer(t, token, "POST", "/market/wallets/key-buyer/withdraw", `{"amount_usd":"1"}`), 401, "api_key_invalid", before, listings...)
	ok("a did:key seller's deactivation", s.signedAs(t, seller, "POST", "/market/listings/"+didListing+"/deactivate", fmt.Sprintf(`{"agent":%q}`, seller.id())), 200)

	if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
}

// TestAuth_modeFlags: a mode that is neither signed nor open is refused.
func TestAuth_modeFlags(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--market-auth", "--court-auth"} {
		out, err := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), flag, "signd").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), flag+" must be signed or open") {
			t.Errorf("%s signd: %v %s", flag, err, out)
		}
	}
}

// TestAuth_marketOpen: --market-auth open keeps the seed's market, agents
// named in bodies, and says so at start-up.
func TestAuth_marketOpen(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), []string{"--market-auth", "open"}, nil, 30*time.Second)
	if !s.logged("market in open mode") {
		t.Errorf("the start-up log does not warn of open mode:\n%s", s.log())
	}
	if r := s.post(t, "/market/wallets/anyone/deposit", `{"amount_usd":"2"}`); r.status != http.StatusCreated {
		t.Fatalf("open deposit %d %s", r.status, r.body)
	}
	if r := s.post(t, "/market/wallets/anyone/withdraw", `{"amount_usd":"1"}`); r.status != http.StatusOK {
		t.Fatalf("open withdrawal %d %s", r.status, r.body)
	}
	pub := s.post(t, "/market/listings", `{"agent":"anyone","title":"t","problem_statement":"an open listing for auth checks","artifact":"x","artifact_type":"dataset","price_usd":"1"}`)
	if pub.status != http.StatusCreated {
		t.Fatalf("open publish %d %s", pub.status, pub.body)
	}
	if a, ok := subjectOf(t, pub.obj(t)["receipt"].(map[string]any))["actor"]; ok {
		t.Errorf("an open market's receipt names actor %v", a)
	}
}
