package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

// signedRequest is a request to app signed with priv, its Signature-Input
// member written as member (the client's text, its parameters in the
// client's order).
func signedRequest(tb testing.TB, app *fiber.App, priv ed25519.PrivateKey, method, path, body, member string) resp {
	tb.Helper()
	r := httptest.NewRequest(method, "http://assay.test"+path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Content-Digest", httpsig.ContentDigest([]byte(body)))
	p, _, err := httpsig.Parse("sig1="+member, "sig1=:AA==:", "sig1")
	if err != nil {
		tb.Fatal(err)
	}
	in, sig, err := httpsig.Sign(priv, httpsig.Message{Method: method, Authority: "assay.test", Path: path,
		Header: func(n string) []string { return r.Header.Values(n) }}, p)
	if err != nil {
		tb.Fatal(err)
	}
	if in != "sig1="+member {
		tb.Fatalf("signed %s, want the client's text %s", in, member)
	}
	r.Header.Set("Signature-Input", in)
	r.Header.Set("Signature", sig)
	res, err := app.Test(r, -1)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// A client that writes the signature parameters in another order than
// this server would (RFC 9421 section 2.3 writes keyid, alg, created,
// expires) is verified over the text it sent.
func TestAuth_ParameterOrder(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	for i, member := range []string{
		`("@method" "@path" "@authority" "content-digest");keyid="alice";alg="ed25519";created=%d;nonce="o1"`,
		`("content-digest" "@authority" "@path" "@method");nonce="o2";created=%d;keyid="alice"`,
		`("@method" "@path" "@authority" "content-digest");created=%d;expires=` + itoa(mNow.Add(time.Minute).Unix()) + `;keyid="alice";nonce="o3";alg="ed25519"`,
	} {
		member = strings.Replace(member, "%d", itoa(mNow.Unix()), 1)
		r := signedRequest(t, e.app, e.keys["alice"], "POST", "/api/v1/economic/matters/open", mOpenBody("order-"+itoa(int64(i))), member)
		wantStatus(t, r, 201, "")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The judgment routes take registered principals only: a did:key has no
// tenant or roles.
func TestAuth_MattersRefuseDIDKey(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	did := receipt.DIDKey(priv.Public().(ed25519.PublicKey))
	e.keys[did] = priv
	wantStatus(t, e.do(t, did, "POST", "/api/v1/economic/matters/open", mOpenBody("did"), sigOpt{}), 401, "unknown_key")
}

// signedMarket is the court and the market, both signed, in process.
func signedMarket(tb testing.TB) (*fiber.App, *principal.Registry) {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return mNow }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{4})})
	if err != nil {
		tb.Fatal(err)
	}
	reg := principal.New(db, now)
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: now, Auth: principal.Signed, Identities: reg})
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := market.New(market.Config{Store: db, Signer: keys, Runner: serverRunner(tb, db), Now: now, Auth: principal.Signed})
	if err != nil {
		tb.Fatal(err)
	}
	return api.New(api.Config{Court: court, Keys: keys, Market: svc, OperatorToken: token, Version: "test",
		Identities: reg, PublicURLs: []string{"http://assay.test"}, Replies: idem.NewKeeper(db)}), reg
}

func TestAuth_MarketSigned(t *testing.T) {
	app, reg := signedMarket(t)
	priv := ed25519.NewKeyFromSeed(append(make([]byte, 31), 9))
	did := receipt.DIDKey(priv.Public().(ed25519.PublicKey))
	sig := func(created int64, extra string) string {
		return `("@method" "@path" "@authority" "content-digest");created=` + itoa(created) + `;keyid="` + did + `";nonce="` + extra + `"`
	}
	deposit := "/market/wallets/" + did + "/deposit"
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`, sig(mNow.Unix(), "d1")), 201, "")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`, sig(mNow.Unix(), "d1")), 401, "nonce_replayed")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`, sig(mNow.Add(-6*time.Minute).Unix(), "d2")), 401, "signature_expired")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`, sig(mNow.Add(6*time.Minute).Unix(), "d3")), 401, "signature_expired")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`, sig(mNow.Unix(), "d4")+`;alg="rsa-pss-sha512"`), 401, "signature_malformed")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`,
		`("@method" "@path");created=`+itoa(mNow.Unix())+`;keyid="`+did+`";nonce="d5"`), 401, "signature_malformed")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"3"}`,
		`("@method" "@path" "@authority" "content-digest");created=`+itoa(mNow.Unix())+`;keyid="did:key:z6MkBogus";nonce="d6"`), 401, "unknown_key")
	// A keyid may be the did:key's verification method (did#fragment).
	vm := did + "#" + strings.TrimPrefix(did, "did:key:")
	wantStatus(t, signedRequest(t, app, priv, "POST", deposit, `{"amount_usd":"1"}`,
		`("@method" "@path" "@authority" "content-digest");created=`+itoa(mNow.Unix())+`;keyid="`+vm+`";nonce="vm1"`), 201, "")
	other := "/market/wallets/someone-else/withdraw"
	wantStatus(t, signedRequest(t, app, priv, "POST", other, `{"amount_usd":"1"}`, sig(mNow.Unix(), "w1")), 403, "agent_mismatch")

	// An API key acts as its agent, and only it.
	k, tok, err := reg.IssueAPIKey(context.Background(), "keyed")
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	wantStatus(t, do(t, app, call{"POST", "/market/wallets/keyed/deposit", `{"amount_usd":"2"}`, bearer}), 201, "")
	wantStatus(t, do(t, app, call{"POST", "/market/wallets/" + did + "/withdraw", `{"amount_usd":"1"}`, bearer}), 403, "agent_mismatch")
	wantStatus(t, do(t, app, call{"POST", "/market/wallets/keyed/withdraw", `{"amount_usd":"1"}`, bearer}), 200, "")
	if _, err := reg.RevokeAPIKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, do(t, app, call{"POST", "/market/wallets/keyed/withdraw", `{"amount_usd":"1"}`, bearer}), 401, "api_key_invalid")
	// The operator deposits; it does not withdraw.
	op := map[string]string{"Authorization": "Bearer " + token}
	wantStatus(t, do(t, app, call{"POST", "/market/wallets/anyone/deposit", `{"amount_usd":"2"}`, op}), 201, "")
	r := do(t, app, call{"POST", "/market/wallets/anyone/withdraw", `{"amount_usd":"1"}`, op})
	wantStatus(t, r, 401, "signature_missing")
	if !strings.Contains(r.header.Get("WWW-Authenticate"), `Signature realm="assay-market"`) {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}
	// Reads are open.
	wantStatus(t, do(t, app, call{"GET", "/market/wallets/anyone", "", nil}), 200, "")
}

// The route table's auth column says what the routes do: every POST
// route /openapi.json (derived from the table) marks as an agent's, a
// party's or the operator's refuses an unsigned request on the signed
// market and court, and every other POST route of the market and the
// court is one of the open ones.
func TestAuth_RouteTable(t *testing.T) {
	app, _ := signedMarket(t)
	priv := ed25519.NewKeyFromSeed(append(make([]byte, 31), 7))
	buyer := receipt.DIDKey(priv.Public().(ed25519.PublicKey))
	seller := receipt.DIDKey(ed25519.NewKeyFromSeed(append(make([]byte, 31), 8)).Public().(ed25519.PublicKey))
	c := do(t, app, call{"POST", "/contracts", `{"buyer":"` + buyer + `","seller":"` + seller + `","price":5}`, nil})
	wantStatus(t, c, 200, "")
	contract := c.json(t)["contract_id"].(string)
	bodies := map[string]string{
		"/market/listings":                 `{"agent":"x","title":"t","problem_statement":"p q","artifact":"a","artifact_type":"dataset","price_usd":"1"}`,
		"/market/listings/{id}/challenge":  `{"agent":"x","evidence":"e"}`,
		"/market/wallets/{agent}/withdraw": `{"amount_usd":"1"}`,
		"/market/wallets/{agent}/deposit":  `{"amount_usd":"1"}`,
		"/contracts/{id}/dispute":          `{"reason":"r"}`,
		"/contracts/{id}/deliver":          `{"deliverable":{}}`,
		"/contracts/{id}/fund":             `{}`,
		"/contracts/{id}/accept":           `{}`,
		"/market/challenges/{id}/resolve":  `{"verdict":"uphold"}`,
		"/contracts/{id}/resolve":          `{"verdict":"refund"}`,
		"/market/tick":                     `{}`,
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Auth string `json:"x-assay-auth"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(do(t, app, call{"GET", "/openapi.json", "", nil}).body, &doc); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{"/market/search": true, "/contracts": true, "/market/listings/{id}/replay": false}
	n := 0
	for path, ops := range doc.Paths {
		op, ok := ops["post"]
		if !ok || !(strings.HasPrefix(path, "/market") || strings.HasPrefix(path, "/contracts")) {
			continue
		}
		if op.Auth == string(api.RouteOpen) {
			if !open[path] {
				t.Errorf("POST %s is open", path)
			}
			continue
		}
		body, ok := bodies[path]
		if !ok {
			body = `{"agent":"x"}`
		}
		p := strings.NewReplacer("{agent}", "someone", "{id}", contract).Replace(path)
		if strings.HasPrefix(path, "/market/listings/{id}") {
			p = strings.Replace(path, "{id}", "lst_000000000000", 1)
		}
		want := "signature_missing"
		if op.Auth == string(api.RouteOperator) {
			want = "unauthorized"
		}
		n++
		t.Run(path, func(t *testing.T) { wantStatus(t, do(t, app, call{"POST", p, body, nil}), 401, want) })
	}
	if n < 12 {
		t.Errorf("%d signed POST routes", n)
	}
}
