package e2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/receipt"
)

// This file holds what the auth_*_test.go files share: agents' keys, signed
// requests as a client signs them (RFC 9421 with api/httpsig, the same
// package a Go client would use), and the assay principals command.

// agentKey is an Ed25519 key and the keyid it signs with: its did:key, or
// a registered principal's key id.
type agentKey struct {
	priv  ed25519.PrivateKey
	keyID string
}

// newDIDKey makes an agent whose id is the did:key of a fresh key.
func newDIDKey(tb testing.TB) agentKey {
	tb.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return agentKey{priv: priv, keyID: receipt.DIDKey(pub)}
}

// newPrincipalKey makes a key to register under id.
func newPrincipalKey(tb testing.TB, id string) agentKey {
	k := newDIDKey(tb)
	k.keyID = id
	return k
}

func (k agentKey) id() string { return k.keyID }

func (k agentKey) publicBase64() string {
	return base64.StdEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey))
}

// signOpts change how a request is signed, for the refusals.
type signOpts struct {
	created time.Time // zero: now
	nonce   string    // "": a fresh one
}

// signHeaders signs method base+path with body as a client does, and
// returns the header pairs to send.
func (k agentKey) signHeaders(tb testing.TB, method, base, path string, body []byte, o signOpts) []string {
	tb.Helper()
	u, err := url.Parse(base + path)
	if err != nil {
		tb.Fatal(err)
	}
	if o.created.IsZero() {
		o.created = time.Now()
	}
	if o.nonce == "" {
		var n [12]byte
		_, _ = rand.Read(n[:])
		o.nonce = base64.RawURLEncoding.EncodeToString(n[:])
	}
	digest := httpsig.ContentDigest(body)
	p := httpsig.Params{Label: "sig1", Components: []string{"@method", "@path", "@authority", "content-digest"},
		Created: o.created.Unix(), KeyID: k.keyID, Nonce: o.nonce, Alg: "ed25519"}
	m := httpsig.Message{Method: method, Authority: u.Host, Path: u.EscapedPath(), Scheme: u.Scheme,
		Header: func(n string) []string {
			if n == "content-digest" {
				return []string{digest}
			}
			return nil
		}}
	in, sig, err := httpsig.Sign(k.priv, m, p)
	if err != nil {
		tb.Fatal(err)
	}
	return []string{"Content-Digest", digest, "Signature-Input", in, "Signature", sig}
}

// signedAs sends a request signed by k.
func (s *server) signedAs(tb testing.TB, k agentKey, method, path, body string) response {
	tb.Helper()
	return s.do(tb, method, path, []byte(body), k.signHeaders(tb, method, s.base, path, []byte(body), signOpts{})...)
}

// bearer sends a request with Authorization: Bearer token.
func (s *server) bearer(tb testing.TB, token, method, path, body string) response {
	tb.Helper()
	return s.do(tb, method, path, []byte(body), "Authorization", "Bearer "+token)
}

// registerPrincipal registers k under its key id in the store of data dir
// (the server on it is stopped: badger holds one process).
func registerPrincipal(tb testing.TB, data string, k agentKey, scopes string) {
	tb.Helper()
	assay(tb, nil, "principals", "add", "--data", data, "--key-id", k.keyID, "--public-key", k.publicBase64(),
		"--tenant", "acme", "--roles", "requester,solver", "--scopes", scopes)
}

// issueKey issues an API key for agent and answers its id and token.
func issueKey(tb testing.TB, data, agent string) (id, token string) {
	tb.Helper()
	var out struct {
		APIKey struct {
			ID    string `json:"api_key_id"`
			Agent string `json:"agent"`
			Hash  string `json:"sha256"`
		} `json:"api_key"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(assay(tb, nil, "principals", "issue-key", "--data", data, "--agent", agent), &out); err != nil {
		tb.Fatal(err)
	}
	if out.APIKey.Agent != agent || out.Token == "" || strings.Contains(out.APIKey.Hash, out.Token) {
		tb.Fatalf("issue-key: %+v", out)
	}
	// The store keeps the hash, never the token.
	list := assay(tb, nil, "principals", "list", "--data", data)
	if bytes.Contains(list, []byte(out.Token)) || !bytes.Contains(list, []byte(out.APIKey.ID)) {
		tb.Fatalf("principals list shows the token, or not the key: %s", list)
	}
	return out.APIKey.ID, out.Token
}

// snapshot reads what a refused request must not change: the ledger, the
// wallets and the objects named by paths.
func (s *server) snapshot(tb testing.TB, paths ...string) string {
	tb.Helper()
	var b strings.Builder
	for _, p := range append([]string{"/ledger"}, paths...) {
		r := s.get(tb, p)
		fmt.Fprintf(&b, "%s %d %s\n", p, r.status, r.body)
	}
	return b.String()
}

// wantRefused checks that r is refused with status and code, and that the
// state before is the state now.
func (s *server) wantRefused(tb testing.TB, what string, r response, status int, code, before string, paths ...string) {
	tb.Helper()
	if r.status != status || r.code(tb) != code {
		tb.Fatalf("%s: %d %s; want %d %s", what, r.status, r.body, status, code)
	}
	if status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
		tb.Errorf("%s: a 401 without WWW-Authenticate", what)
	}
	if after := s.snapshot(tb, paths...); after != before {
		tb.Fatalf("%s changed the state:\n%s\nnow:\n%s", what, before, after)
	}
}

// restart stops s and starts a server on the same data directory with
// args and env, for a change made with assay principals in between.
func (s *server) restart(tb testing.TB, change func(), args, env []string) *server {
	tb.Helper()
	s.stop(tb)
	change()
	return startServe(tb, s.data, args, env, 30*time.Second)
}

// logged reports whether s's log says want within a few seconds: its
// stderr is copied in as the process writes it, after the line that says
// where it listens, maybe.
func (s *server) logged(want string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ok := strings.Contains(s.log(), want)
		if ok || time.Now().After(deadline) {
			return ok
		}
	}
}
