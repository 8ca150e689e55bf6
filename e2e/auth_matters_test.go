package e2e

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// TestAuth_matters runs the judgment routes through the shared
// verification layer on the real binary: a registered principal's
// signature is taken; an unsigned request, a bearer API key, a did:key
// (which has no tenant or roles), a replayed nonce, a stale signature, a
// revoked key and another tenant are refused, and the tenant's matters are
// the same before and after.
func TestAuth_matters(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	alice := agentKey{priv: addPrincipal(t, data, "alice", "acme", "requester", 21), keyID: "alice"}
	rita := agentKey{priv: addPrincipal(t, data, "rita", "acme", "requester,operator", 22), keyID: "rita"}
	eve := agentKey{priv: addPrincipal(t, data, "eve", "other", "requester,operator", 23), keyID: "eve"}
	_, token := issueKey(t, data, "alice")
	s := startServe(t, data, nil, nil, 30*time.Second)
	const base = "/api/v1/economic/matters"

	r := s.signedAs(t, alice, "POST", base+"/open", matterOpen(time.Now().Add(time.Hour), "m1"))
	wantResp(t, r, 201, "")
	id := r.obj(t)["matter"].(map[string]any)["matter_id"].(string)
	// state is the tenant's matters as rita reads them, signed.
	state := func() string {
		t.Helper()
		l := s.signedAs(t, rita, "GET", base+"/all", "")
		m := s.signedAs(t, rita, "GET", base+"/"+id, "")
		if l.status != 200 || m.status != 200 {
			t.Fatalf("read: %d %s; %d %s", l.status, l.body, m.status, m.body)
		}
		return string(l.body) + "\n" + string(m.body)
	}
	refused := func(what string, r response, status int, code string, before string) {
		t.Helper()
		if r.status != status || r.code(t) != code {
			t.Fatalf("%s: %d %s; want %d %s", what, r.status, r.body, status, code)
		}
		if after := state(); after != before {
			t.Fatalf("%s changed the matters:\n%s\nnow:\n%s", what, before, after)
		}
	}
	open := func(key string) string { return matterOpen(time.Now().Add(time.Hour), key) }
	before := state()
	refused("an unsigned open", s.post(t, base+"/open", open("u")), 401, "signature_missing", before)
	refused("an open with a bearer API key", s.bearer(t, token, "POST", base+"/open", open("k")), 401, "signature_missing", before)
	refused("an open signed by a did:key", s.signedAs(t, newDIDKey(t), "POST", base+"/open", open("d")), 401, "unknown_key", before)
	stale := alice.signHeaders(t, "POST", s.base, base+"/open", []byte(open("s")), signOpts{created: time.Now().Add(-10 * time.Minute)})
	refused("a stale open", s.do(t, "POST", base+"/open", []byte(open("s")), stale...), 401, "signature_expired", before)
	refused("another tenant's settle", s.signedAs(t, eve, "POST", base+"/settle", `{"matter_id":"`+id+`","idempotency_key":"e"}`), 404, "matter_not_found", before)
	forged := agentKey{priv: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{99}, 32)), keyID: "alice"}
	refused("alice's keyid with another key", s.signedAs(t, forged, "POST", base+"/open", open("f")), 401, "signature_invalid", before)

	body := []byte(open("m2"))
	h := alice.signHeaders(t, "POST", s.base, base+"/open", body, signOpts{})
	wantResp(t, s.do(t, "POST", base+"/open", body, h...), 201, "")
	before = state()
	refused("a replayed open", s.do(t, "POST", base+"/open", body, h...), 401, "nonce_replayed", before)

	s = s.restart(t, func() { assay(t, nil, "principals", "revoke", "--data", data, "--key-id", "alice") }, nil, nil)
	before = state()
	refused("a revoked principal's open", s.signedAs(t, alice, "POST", base+"/open", open("r")), 401, "unknown_key", before)
	if !strings.Contains(before, id) {
		t.Fatalf("the tenant's matters lack %s: %s", id, before)
	}
}
