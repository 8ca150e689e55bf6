package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestAuth_courtSigned runs the court with --court-auth signed: a contract
// whose buyer and seller can prove who they are (did:key ids, registered
// principals, an API key's agent) is funded, accepted and disputed only by
// the buyer and delivered only by the seller; every other caller is
// refused and nothing changes. A contract between ids that cannot sign
// stays the seed's open court.
func TestAuth_courtSigned(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	buyer, seller := newDIDKey(t), newDIDKey(t)
	acme := newPrincipalKey(t, "acme-buyer")
	registerPrincipal(t, data, acme, "economic:read,economic:write")
	keyID, token := issueKey(t, data, "acme-buyer")
	args := []string{"--court-auth", "signed"}
	s := startServe(t, data, args, nil, 30*time.Second)
	if !s.logged(`"escrow court" auth=signed`) {
		t.Errorf("the start-up log does not say the court is signed:\n%s", s.log())
	}

	create := func(b, sl string) string {
		t.Helper()
		r := s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":40,"acceptance":%s}`, b, sl, rows100))
		if r.status != http.StatusOK {
			t.Fatalf("create %d %s", r.status, r.body)
		}
		return r.obj(t)["contract_id"].(string)
	}
	ok := func(what string, r response) map[string]any {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
		return r.obj(t)
	}

	// did:key parties: a dispute the court decides.
	id := create(buyer.id(), seller.id())
	at := func(action string) string { return "/contracts/" + id + "/" + action }
	state := []string{"/contracts/" + id, "/agents/" + buyer.id() + "/receipts", "/agents/" + seller.id() + "/receipts"}
	before := s.snapshot(t, state...)
	s.wantRefused(t, "an unsigned fund", s.post(t, at("fund"), `{}`), 401, "signature_missing", before, state...)
	s.wantRefused(t, "a fund signed by the seller", s.signedAs(t, seller, "POST", at("fund"), `{}`), 403, "agent_mismatch", before, state...)
	stale := buyer.signHeaders(t, "POST", s.base, at("fund"), []byte(`{}`), signOpts{created: time.Now().Add(-6 * time.Minute)})
	s.wantRefused(t, "a stale fund", s.do(t, "POST", at("fund"), []byte(`{}`), stale...), 401, "signature_expired", before, state...)
	fund := buyer.signHeaders(t, "POST", s.base, at("fund"), []byte(`{}`), signOpts{})
	ok("the buyer's fund", s.do(t, "POST", at("fund"), []byte(`{}`), fund...))
	before = s.snapshot(t, state...)
	s.wantRefused(t, "a replayed fund", s.do(t, "POST", at("fund"), []byte(`{}`), fund...), 401, "nonce_replayed", before, state...)
	s.wantRefused(t, "an unsigned delivery", s.post(t, at("deliver"), `{"deliverable":{"rows":3}}`), 401, "signature_missing", before, state...)
	s.wantRefused(t, "a delivery signed by the buyer", s.signedAs(t, buyer, "POST", at("deliver"), `{"deliverable":{"rows":3}}`), 403, "agent_mismatch", before, state...)
	ok("the seller's delivery", s.signedAs(t, seller, "POST", at("deliver"), `{"deliverable":{"rows":3}}`))
	before = s.snapshot(t, state...)
	s.wantRefused(t, "an unsigned dispute", s.post(t, at("dispute"), `{"reason":"short"}`), 401, "signature_missing", before, state...)
	s.wantRefused(t, "a dispute signed by the seller", s.signedAs(t, seller, "POST", at("dispute"), `{"reason":"short"}`), 403, "agent_mismatch", before, state...)
	s.wantRefused(t, "an accept signed by the seller", s.signedAs(t, seller, "POST", at("accept"), `{}`), 403, "agent_mismatch", before, state...)
	d := ok("the buyer's dispute", s.signedAs(t, buyer, "POST", at("dispute"), `{"reason":"short"}`))
	if subjectOf(t, d)["verdict"] != "refund" || subjectOf(t, d)["actor"] != buyer.id() {
		t.Fatalf("dispute %v", d)
	}

	// A registered principal as buyer, with its API key too: accepted.
	id = create("acme-buyer", seller.id())
	state = []string{"/contracts/" + id}
	ok("the registered buyer's fund", s.signedAs(t, acme, "POST", at("fund"), `{}`))
	ok("the seller's delivery", s.signedAs(t, seller, "POST", at("deliver"), `{"deliverable":{"rows":300}}`))
	before = s.snapshot(t, state...)
	s.wantRefused(t, "an accept with the buyer's key id but another key", s.signedAs(t, newPrincipalKey(t, "acme-buyer"), "POST", at("accept"), `{}`), 401, "signature_invalid", before, state...)
	if a := subjectOf(t, ok("the buyer's accept with its API key", s.bearer(t, token, "POST", at("accept"), `{}`)))["actor"]; a != "api_key:"+keyID {
		t.Errorf("the accept's receipt names actor %v", a)
	}

	// Revoked: the principal's contracts are not opened to anyone.
	id = create("acme-buyer", seller.id())
	s = s.restart(t, func() {
		assay(t, nil, "principals", "revoke", "--data", data, "--key-id", "acme-buyer")
		assay(t, nil, "principals", "revoke-key", "--data", data, "--id", keyID)
	}, args, nil)
	state = []string{"/contracts/" + id}
	before = s.snapshot(t, state...)
	s.wantRefused(t, "a revoked principal's fund", s.signedAs(t, acme, "POST", at("fund"), `{}`), 401, "unknown_key", before, state...)
	s.wantRefused(t, "a revoked API key's fund", s.bearer(t, token, "POST", at("fund"), `{}`), 401, "api_key_invalid", before, state...)
	s.wantRefused(t, "an unsigned fund of a revoked principal's contract", s.post(t, at("fund"), `{}`), 401, "signature_missing", before, state...)

	// Parties that cannot sign: the seed's open court.
	id = create("did:e2e:buyer", "did:e2e:seller")
	ok("an open fund", s.post(t, at("fund"), `{}`))
	ok("an open delivery", s.post(t, at("deliver"), `{"deliverable":{"rows":300}}`))
	if a, ok := subjectOf(t, ok("an open accept", s.post(t, at("accept"), `{}`)))["actor"]; ok {
		t.Errorf("an open court's receipt names actor %v", a)
	}

	if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
}

// TestAuth_courtOpenByDefault: the default court takes a did:key's contract
// unsigned, as the seed's does (its walkthroughs run in e2e_test.go).
func TestAuth_courtOpenByDefault(t *testing.T) {
	t.Parallel()
	s := shared(t, plainServer)
	buyer, seller := newDIDKey(t), newDIDKey(t)
	r := s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":5}`, buyer.id(), seller.id()))
	if r.status != http.StatusOK {
		t.Fatalf("create %d %s", r.status, r.body)
	}
	if r := s.post(t, "/contracts/"+r.obj(t)["contract_id"].(string)+"/fund", `{}`); r.status != http.StatusOK {
		t.Fatalf("an unsigned fund on the default court: %d %s", r.status, r.body)
	}
}
