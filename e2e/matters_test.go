package e2e

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/api/httpsig"
)

const mattersDigest = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"

var nonces atomic.Int64

// addPrincipal registers a principal with assay principals add and returns
// its private key.
func addPrincipal(tb testing.TB, dir, id, tenant, roles string, seed byte) ed25519.PrivateKey {
	tb.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
	pub := base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	out, err := exec.Command(binary, "principals", "add", "--data", dir, "--key-id", id, "--public-key", pub,
		"--tenant", tenant, "--roles", roles, "--scopes", "economic:read,economic:private,economic:write").CombinedOutput()
	if err != nil {
		tb.Fatalf("principals add: %v\n%s", err, out)
	}
	return priv
}

// signed sends a request signed as RFC 9421 with keyID's key.
func (s *server) signed(tb testing.TB, priv ed25519.PrivateKey, keyID, method, path, body string) response {
	tb.Helper()
	u, _ := url.Parse(s.base + path)
	req, err := http.NewRequest(method, u.String(), strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Digest", httpsig.ContentDigest([]byte(body)))
	p := httpsig.Params{Label: "sig1", Components: []string{"@method", "@path", "@authority", "content-digest"},
		Created: time.Now().Unix(), KeyID: keyID, Nonce: fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano(), nonces.Add(1)), Alg: "ed25519"}
	in, sig, err := httpsig.Sign(priv, httpsig.Message{Method: method, Authority: u.Host, Path: u.Path,
		Header: func(n string) []string { return req.Header.Values(n) }}, p)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Signature-Input", in)
	req.Header.Set("Signature", sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func wantResp(tb testing.TB, r response, status int, code string) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" && r.code(tb) != code {
		tb.Fatalf("code %s, want %s", r.code(tb), code)
	}
}

func matterOpen(deadline time.Time, key string) string {
	return `{"action_digest":"` + mattersDigest + `","question":"publish the release notes?","stakes_usdc":"1",` +
		`"deadline":"` + deadline.UTC().Format(time.RFC3339Nano) + `","risk_class":"publish","idempotency_key":"` + key + `",` +
		`"verdict_schema":{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}},"additionalProperties":false}}`
}

func TestMatters_Lifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice := addPrincipal(t, dir, "alice", "acme", "requester", 1)
	bob := addPrincipal(t, dir, "bob", "acme", "solver", 2)
	olga := addPrincipal(t, dir, "olga", "acme", "operator", 3)
	eve := addPrincipal(t, dir, "eve", "other", "requester,operator", 4)
	s := start(t, dir)
	if !strings.Contains(s.log(), "auth=signed") {
		t.Errorf("the auth mode is not logged at start:\n%s", s.log())
	}
	const base = "/api/v1/economic/matters"

	// unsigned is refused, but a bare GET of a POST route shows how to
	// call it, and /health says where the routes are and how to sign
	wantResp(t, s.post(t, base+"/open", matterOpen(time.Now().Add(time.Hour), "x")), 401, "signature_missing")
	if h := s.get(t, base+"/verdict"); h.status != 200 || h.obj(t)["method"] != "POST" {
		t.Fatalf("bare GET: %d %s", h.status, h.body)
	}
	if h := s.get(t, "/health"); !strings.Contains(string(h.body), `"auth":"signed"`) {
		t.Fatalf("health: %s", h.body)
	}

	r := s.signed(t, alice, "alice", "POST", base+"/open", matterOpen(time.Now().Add(time.Hour), "o1"))
	wantResp(t, r, 201, "")
	id := r.obj(t)["matter"].(map[string]any)["matter_id"].(string)
	wantResp(t, s.signed(t, alice, "alice", "POST", base+"/assign", `{"matter_id":"`+id+`","solver_id":"bob","solver_kind":"model","conflict_free":true,"idempotency_key":"a"}`), 200, "")
	wantResp(t, s.signed(t, bob, "bob", "POST", base+"/accept", `{"matter_id":"`+id+`","idempotency_key":"c"}`), 200, "")

	// 50 concurrent verdicts from the assigned solver: exactly one wins
	var wins, lost atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			r := s.signed(t, bob, "bob", "POST", base+"/verdict",
				fmt.Sprintf(`{"matter_id":"%s","solver_kind":"model","action_digest":"%s","verdict":{"ok":%v},"idempotency_key":"v%d"}`, id, mattersDigest, i%2 == 0, i))
			switch {
			case r.status == 200:
				wins.Add(1)
			case r.status == 409 && strings.Contains(string(r.body), "matter_not_open"):
				lost.Add(1)
			default:
				t.Errorf("verdict: %d %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != 49 {
		t.Fatalf("wins %d, lost %d", wins.Load(), lost.Load())
	}
	wantResp(t, s.signed(t, eve, "eve", "GET", base+"/"+id, ""), 404, "matter_not_found")
	wantResp(t, s.signed(t, alice, "alice", "POST", base+"/settle", `{"matter_id":"`+id+`","idempotency_key":"s"}`), 200, "")
	rc := s.signed(t, alice, "alice", "GET", base+"/"+id+"/receipts", "")
	wantResp(t, rc, 200, "")
	receipts := rc.obj(t)["receipts"].([]any)
	if len(receipts) != 5 {
		t.Fatalf("%d receipts", len(receipts))
	}
	prev := ""
	for i, x := range receipts {
		rec := x.(map[string]any)
		sub := subjectOf(t, rec)
		if sub["previous_receipt_hash"] != prev || sub["solver_kind"] == nil || sub["risk_class"] != "publish" {
			t.Fatalf("receipt %d: %v", i, sub)
		}
		s.verify(t, rec)
		prev = rec["proof"].(map[string]any)["subjectHash"].(string)
	}

	// expiry: a Matter with a near deadline expires on read, and tick
	// replays its answer. The server's clock is the wall clock: the test
	// reads the first Matter until it has expired (while the package's
	// other tests run), and the second, with the same deadline, has then
	// expired too.
	near := time.Now().Add(time.Second)
	short := s.signed(t, alice, "alice", "POST", base+"/open", matterOpen(near, "o2"))
	wantResp(t, short, 201, "")
	sid := short.obj(t)["matter"].(map[string]any)["matter_id"].(string)
	short2 := s.signed(t, alice, "alice", "POST", base+"/open", matterOpen(near, "o3"))
	wantResp(t, short2, 201, "")
	var g response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		g = s.signed(t, alice, "alice", "GET", base+"/"+sid, "")
		if strings.Contains(string(g.body), `"status":"expired"`) {
			break
		}
		if time.Now().After(deadline) || !strings.Contains(string(g.body), `"status":"open"`) {
			t.Fatalf("a Matter past its deadline: %s", g.body)
		}
	}
	t1 := s.signed(t, olga, "olga", "POST", base+"/tick", `{"idempotency_key":"t1"}`)
	wantResp(t, t1, 200, "")
	t2 := s.signed(t, olga, "olga", "POST", base+"/tick", `{"idempotency_key":"t1"}`)
	if !bytes.Equal(t1.body, t2.body) || t2.header.Get("Idempotent-Replayed") != "true" || len(t1.obj(t)["expired"].([]any)) != 1 {
		t.Fatalf("tick: %s / %s", t1.body, t2.body)
	}
	open := s.signed(t, alice, "alice", "GET", base, "")
	if open.obj(t)["count"].(float64) != 0 {
		t.Fatalf("open list: %s", open.body)
	}
}
