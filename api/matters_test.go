package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

var mNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const mDigest = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"

type mEnv struct {
	app   *fiber.App
	keys  map[string]ed25519.PrivateKey
	nonce atomic.Int64
}

func mustMattersApp(tb testing.TB, mode api.MattersAuth) *mEnv {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return mNow }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{3})})
	if err != nil {
		tb.Fatal(err)
	}
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := matters.New(matters.Config{Store: db, Signer: keys, Now: now, Auth: mode})
	if err != nil {
		tb.Fatal(err)
	}
	e := &mEnv{keys: map[string]ed25519.PrivateKey{}}
	all := []string{matters.ScopeRead, matters.ScopePrivate, matters.ScopeWrite}
	for i, p := range []struct {
		id, tenant string
		roles      []string
		scopes     []string
	}{
		{"alice", "t1", []string{"requester"}, all},
		{"bob", "t1", []string{"solver"}, all},
		{"olga", "t1", []string{"operator"}, all},
		{"rita", "t1", []string{"requester"}, []string{matters.ScopeRead}},
		{"eve", "t2", []string{"requester", "operator"}, all},
		{"oscar", "t1", []string{"operator"}, all},
	} {
		priv := ed25519.NewKeyFromSeed(append(make([]byte, 31), byte(i+1)))
		e.keys[p.id] = priv
		if _, err := ms.AddPrincipal(context.Background(), matters.Principal{KeyID: p.id, Tenant: p.tenant, Roles: p.roles, Scopes: p.scopes,
			PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))}); err != nil {
			tb.Fatal(err)
		}
	}
	e.app = api.New(api.Config{Court: court, Keys: keys, Version: "test", Matters: ms, Identities: ms.Registry(), PublicURLs: []string{"http://assay.test"}})
	return e
}

type sigOpt struct {
	key     ed25519.PrivateKey // overrides the key id's own
	created time.Time
	nonce   string
	comps   []string
	body    *string // the body actually sent, when it differs
	header  map[string]string
}

// do sends a request signed by keyID (none when keyID is "").
func (e *mEnv) do(tb testing.TB, keyID, method, path, body string, o sigOpt) resp {
	tb.Helper()
	sent := body
	if o.body != nil {
		sent = *o.body
	}
	r := httptest.NewRequest(method, "http://assay.test"+path, strings.NewReader(sent))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range o.header {
		r.Header.Set(k, v)
	}
	if keyID != "" {
		priv := e.keys[keyID]
		if o.key != nil {
			priv = o.key
		}
		if o.created.IsZero() {
			o.created = mNow
		}
		if o.nonce == "" {
			o.nonce = fmt.Sprintf("n%d", e.nonce.Add(1))
		}
		if o.comps == nil {
			o.comps = []string{"@method", "@path", "@authority", "content-digest"}
		}
		r.Header.Set("Content-Digest", httpsig.ContentDigest([]byte(body)))
		p := httpsig.Params{Label: "sig1", Components: o.comps, Created: o.created.Unix(), KeyID: keyID, Nonce: o.nonce, Alg: "ed25519"}
		m := httpsig.Message{Method: method, Authority: "assay.test", Path: strings.SplitN(path, "?", 2)[0],
			Header: func(n string) []string { return r.Header.Values(n) }}
		in, sig, err := httpsig.Sign(priv, m, p)
		if err != nil {
			tb.Fatal(err)
		}
		r.Header.Set("Signature-Input", in)
		r.Header.Set("Signature", sig)
	}
	res, err := e.app.Test(r, -1)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func mOpenBody(key string) string {
	return `{"requester_id":"alice","action_digest":"` + mDigest + `","question":"pay invoice 42?","stakes_usdc":"10.25",` +
		`"deadline":"2026-05-01T13:00:00Z","risk_class":"spend","idempotency_key":"` + key + `",` +
		`"verdict_schema":{"type":"object","required":["approve"],"properties":{"approve":{"type":"boolean"}}}}`
}

func wantStatus(tb testing.TB, r resp, status int, code string) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" {
		if got := r.code(tb); got != code {
			tb.Fatalf("code %q, want %q", got, code)
		}
	}
}

func TestMatters_SignedLifecycle(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	r := e.do(t, "alice", "POST", "/api/v1/economic/matters/open", mOpenBody("o1"), sigOpt{})
	wantStatus(t, r, 201, "")
	id := r.json(t)["matter"].(map[string]any)["matter_id"].(string)
	// replay: same bytes, other content: 409
	r2 := e.do(t, "alice", "POST", "/api/v1/economic/matters/open", mOpenBody("o1"), sigOpt{})
	if r2.status != 201 || string(r2.body) != string(r.body) || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %d %s", r2.status, r2.body)
	}
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/open", strings.Replace(mOpenBody("o1"), "42", "43", 1), sigOpt{}), 409, "idempotency_conflict")

	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/assign",
		`{"matter_id":"`+id+`","solver_id":"bob","solver_kind":"human","qualification":"AP clerk","conflict_free":true,"idempotency_key":"a"}`, sigOpt{}), 200, "")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/accept", `{"matter_id":"`+id+`","idempotency_key":"c"}`, sigOpt{}), 200, "")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/verdict",
		`{"matter_id":"`+id+`","solver_kind":"human","action_digest":"`+mDigest+`","verdict":{"approve":"yes"},"idempotency_key":"v0"}`, sigOpt{}), 422, "verdict_schema_mismatch")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/verdict",
		`{"matter_id":"`+id+`","solver_kind":"human","verdict":{"approve":true},"idempotency_key":"v1"}`, sigOpt{}), 400, "invalid_action_digest")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/settle", `{"matter_id":"`+id+`","idempotency_key":"s0"}`, sigOpt{}), 409, "matter_not_settleable")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/verdict",
		`{"matter_id":"`+id+`","solver_kind":"human","action_digest":"`+mDigest+`","verdict":{"approve":true},"idempotency_key":"v2"}`, sigOpt{}), 200, "")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/verdict",
		`{"matter_id":"`+id+`","solver_kind":"human","action_digest":"`+mDigest+`","verdict":{"approve":false},"idempotency_key":"v3"}`, sigOpt{}), 409, "matter_not_open")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/settle", `{"matter_id":"`+id+`"}`, sigOpt{}), 400, "invalid_idempotency_key")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/settle", `{"matter_id":"`+id+`","idempotency_key":"s1"}`, sigOpt{}), 200, "")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/dispute",
		`{"matter_id":"`+id+`","reason":"x","action_digest":"`+mDigest+`","idempotency_key":"d"}`, sigOpt{}), 409, "matter_not_disputable")

	// private get shows the verdict; a read-only principal sees hashes
	g := e.do(t, "alice", "GET", "/api/v1/economic/matters/"+id, "", sigOpt{})
	wantStatus(t, g, 200, "")
	if !strings.Contains(string(g.body), `"approve":true`) || !strings.Contains(string(g.body), "invoice 42") {
		t.Fatalf("private get: %s", g.body)
	}
	l := e.do(t, "rita", "GET", "/api/v1/economic/matters/all", "", sigOpt{})
	wantStatus(t, l, 200, "")
	if strings.Contains(string(l.body), "invoice") || strings.Contains(string(l.body), "approve") || !strings.Contains(string(l.body), `"receipt_count":5`) {
		t.Fatalf("redacted list: %s", l.body)
	}
	l = e.do(t, "rita", "GET", "/api/v1/economic/matters", "", sigOpt{})
	if l.json(t)["count"].(float64) != 0 {
		t.Fatalf("open list: %s", l.body)
	}
	rc := e.do(t, "alice", "GET", "/api/v1/economic/matters/"+id+"/receipts", "", sigOpt{})
	if rc.json(t)["count"].(float64) != 5 {
		t.Fatalf("receipts: %s", rc.body)
	}
	// another tenant's principal: not found, not forbidden
	wantStatus(t, e.do(t, "eve", "GET", "/api/v1/economic/matters/"+id, "", sigOpt{}), 404, "matter_not_found")
	wantStatus(t, e.do(t, "eve", "POST", "/api/v1/economic/matters/dispute",
		`{"matter_id":"`+id+`","reason":"x","action_digest":"`+mDigest+`","idempotency_key":"d"}`, sigOpt{}), 404, "matter_not_found")
	// binding: alice cannot open as someone else, bob cannot open at all
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/open", strings.Replace(mOpenBody("o2"), `"alice"`, `"mallory"`, 1), sigOpt{}), 403, "requester_mismatch")
	wantStatus(t, e.do(t, "bob", "POST", "/api/v1/economic/matters/open", mOpenBody("o3"), sigOpt{}), 403, "forbidden")
	wantStatus(t, e.do(t, "rita", "POST", "/api/v1/economic/matters/open", mOpenBody("o4"), sigOpt{}), 403, "insufficient_scope")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/open", `{"bogus":1}`, sigOpt{}), 400, "unknown_field")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/open", strings.Replace(mOpenBody("o5"), `"spend"`, `"fun"`, 1), sigOpt{}), 400, "invalid_risk_class")
	wantStatus(t, e.do(t, "olga", "POST", "/api/v1/economic/matters/tick", `{"idempotency_key":"t"}`, sigOpt{}), 200, "")
}

func TestMatters_SignatureRefused(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	const path = "/api/v1/economic/matters/open"
	body := mOpenBody("k")
	tampered := strings.Replace(body, "10.25", "99999", 1)
	for _, tc := range []struct {
		name, key, code string
		o               sigOpt
	}{
		{"ErrMissing", "", "signature_missing", sigOpt{}},
		{"ErrTamperedBody", "alice", "content_digest_mismatch", sigOpt{body: &tampered}},
		{"ErrWrongKey", "alice", "signature_invalid", sigOpt{key: ed25519.NewKeyFromSeed(make([]byte, 32))}},
		{"ErrOtherTenantsKey", "alice", "signature_invalid", sigOpt{key: e.keys["eve"]}},
		{"ErrUnknownKey", "zed", "unknown_key", sigOpt{key: e.keys["alice"]}},
		{"ErrStale", "alice", "signature_expired", sigOpt{created: mNow.Add(-10 * time.Minute)}},
		{"ErrFuture", "alice", "signature_expired", sigOpt{created: mNow.Add(10 * time.Minute)}},
		{"ErrNoDigestCovered", "alice", "signature_malformed", sigOpt{comps: []string{"@method", "@path", "@authority"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.key, "POST", path, body, tc.o)
			wantStatus(t, r, 401, tc.code)
			if r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("no WWW-Authenticate")
			}
		})
	}
	t.Run("ErrReplayedNonce", func(t *testing.T) {
		wantStatus(t, e.do(t, "alice", "GET", "/api/v1/economic/matters", "", sigOpt{nonce: "once"}), 200, "")
		wantStatus(t, e.do(t, "alice", "GET", "/api/v1/economic/matters", "", sigOpt{nonce: "once"}), 401, "nonce_replayed")
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		r := httptest.NewRequest("GET", "http://assay.test/api/v1/economic/matters", nil)
		r.Header.Set("Signature-Input", "sig1=garbage")
		r.Header.Set("Signature", "sig1=:AA==:")
		res, _ := e.app.Test(r, -1)
		b, _ := io.ReadAll(res.Body)
		wantStatus(t, resp{status: res.StatusCode, body: b}, 401, "signature_malformed")
	})
}

func TestMatters_OpenMode(t *testing.T) {
	e := mustMattersApp(t, api.MattersOpen)
	body := strings.Replace(mOpenBody("k"), `"action_digest":"`+mDigest+`",`, "", 1)
	r := e.do(t, "", "POST", "/api/v1/economic/matters/open", body, sigOpt{})
	wantStatus(t, r, 201, "")
	var out struct {
		Matter  matters.Public  `json:"matter"`
		Receipt json.RawMessage `json:"receipt"`
	}
	_ = json.Unmarshal(r.body, &out)
	if out.Matter.Status != "open" || !strings.Contains(string(out.Receipt), "matter_opened") {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, e.do(t, "", "GET", "/api/v1/economic/matters/mat-nope", "", sigOpt{}), 404, "matter_not_found")
	wantStatus(t, e.do(t, "", "POST", "/api/v1/economic/matters/verdict", `{"matter_id":"`+out.Matter.ID+`","solver_id":"s","solver_kind":"model","verdict":{"approve":true},"idempotency_key":"v"}`, sigOpt{}), 200, "")
	_ = http.StatusOK
}
