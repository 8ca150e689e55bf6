package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage"
)

// marketServer is the court and the market over real HTTP on a loopback
// port, on a badger store, with a test clock.
type marketServer struct {
	reg     *principal.Registry
	base    string
	squares string // sha256 of fixtures/checkers/squares.wasm, uploaded
	mu      sync.Mutex
	now     time.Time
}

func (m *marketServer) clock() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }

func serveMarket(tb testing.TB) *marketServer {
	tb.Helper()
	ctx := context.Background()
	m := &marketServer{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: m.clock, Rand: rand.NewChaCha8([32]byte{5})})
	if err != nil {
		tb.Fatal(err)
	}
	runner := serverRunner(tb, db)
	court, err := escrow.New(ctx, escrow.Config{Store: db, Signer: keys, Runner: runner, Now: m.clock})
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := market.New(market.Config{Store: db, Signer: keys, Runner: runner, Now: m.clock})
	if err != nil {
		tb.Fatal(err)
	}
	m.reg = principal.New(db, m.clock)
	app := api.New(api.Config{Court: court, Market: svc, Keys: keys, OperatorToken: token, Version: "test", Replays: replays.NewService(runner),
		Checkers: replays.NewLibrary(db, runner, m.clock), Replies: idem.NewKeeper(db), Identities: m.reg})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(ln)
	tb.Cleanup(func() { _ = app.Shutdown() })
	m.base = "http://" + ln.Addr().String()
	m.squares = uploadChecker(tb, m.base, "squares.wasm")
	return m
}

// send makes one request; header holds name, value pairs.
func (m *marketServer) send(tb testing.TB, method, path string, body []byte, header ...string) httpResp {
	tb.Helper()
	req, err := http.NewRequest(method, m.base+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return httpResp{status: res.StatusCode, header: res.Header, body: b}
}

func (m *marketServer) ok(tb testing.TB, want int, method, path, body string, header ...string) map[string]any {
	tb.Helper()
	r := m.send(tb, method, path, []byte(body), header...)
	if r.status != want {
		tb.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		tb.Fatalf("%s %s answered a body JSON parsers refuse: %q", method, path, r.body)
	}
	return v
}

func (m *marketServer) refused(tb testing.TB, status int, code, method, path string, body []byte) {
	tb.Helper()
	r := m.send(tb, method, path, body)
	if r.status != status || r.code(tb) != code {
		tb.Fatalf("%s %s: %d %s, want %d %s", method, path, r.status, r.body, status, code)
	}
}

func (m *marketServer) balance(tb testing.TB, agent string) float64 {
	tb.Helper()
	return m.ok(tb, 200, "GET", "/market/wallets/"+agent, "")["balance_usd"].(float64)
}

func (m *marketServer) stats(tb testing.TB) map[string]any {
	tb.Helper()
	return m.ok(tb, 200, "GET", "/market/stats", "")
}

func (m *marketServer) balanced(tb testing.TB) {
	tb.Helper()
	if l := m.ok(tb, 200, "GET", "/ledger", ""); l["balanced"] != true {
		tb.Fatalf("ledger %v", l)
	}
}

func (m *marketServer) publish(tb testing.TB, seller, problem string) string {
	tb.Helper()
	body := fmt.Sprintf(`{"agent":%q,"title":"squares","problem_statement":%q,"artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"2.50","checker":{"sha256":%q}}`,
		seller, problem, m.squares)
	return m.ok(tb, 201, "POST", "/market/listings", body)["listing"].(map[string]any)["listing_id"].(string)
}

// TestMarketAPI_Text: the invalid UTF-8 artifact and ids of the attack
// are refused with coded 400s and change nothing; a base64 artifact is
// delivered as base64, in a body every JSON parser takes.
func TestMarketAPI_Text(t *testing.T) {
	m := serveMarket(t)
	m.ok(t, 201, "POST", "/market/wallets/buyer/deposit", `{"amount_usd":"10"}`)
	m.ok(t, 201, "POST", "/market/wallets/seller/deposit", `{"amount_usd":"1"}`)
	t.Run("ErrArtifactNotUTF8", func(t *testing.T) {
		body := []byte("{\"agent\":\"seller\",\"title\":\"t\",\"problem_statement\":\"raw bytes blob\",\"artifact\":\"\xff\xfe\xfd\",\"artifact_type\":\"dataset\",\"price_usd\":\"1\"}")
		m.refused(t, 400, "invalid_utf8", "POST", "/market/listings", body)
		if st := m.stats(t); st["listings_total"] != 0.0 {
			t.Fatalf("stats %v", st)
		}
		if b := m.balance(t, "seller"); b != 1 {
			t.Fatalf("seller %v", b)
		}
	})
	t.Run("ErrText", func(t *testing.T) {
		for _, tc := range []struct{ code, body string }{
			{"invalid_title", `{"agent":"seller","title":"a\u0000b","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_title", `{"agent":"seller","title":"a\u202eb","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_problem_statement", `{"agent":"seller","title":"t","problem_statement":"squares\u0007table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_agent", `{"agent":"..","title":"t","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_agent", `{"agent":"*","title":"t","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_agent", `{"agent":"sel\u2066ler","title":"t","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_encoding", `{"agent":"seller","title":"t","problem_statement":"squares table","artifact":"x","encoding":"hex","artifact_type":"dataset","price_usd":"1"}`},
			{"invalid_artifact", `{"agent":"seller","title":"t","problem_statement":"squares table","artifact":"%%%","encoding":"base64","artifact_type":"dataset","price_usd":"1"}`},
		} {
			m.refused(t, 400, tc.code, "POST", "/market/listings", []byte(tc.body))
		}
		// A lone surrogate escape would decode to U+FFFD: refused, not
		// replaced; a pair and an escaped backslash are text.
		pub := func(title string) []byte {
			return []byte(`{"agent":"seller","title":"` + title + `","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1","verification_level":4}`)
		}
		for _, title := range []string{`a\ud800b`, `\udc00`, `\ud800\u0041`, `\uD83D`} {
			m.refused(t, 400, "invalid_utf8", "POST", "/market/listings", pub(title))
		}
		for _, title := range []string{`\ud83d\ude00`, `\\ud800`, `\u00e9`} {
			// level 4 is refused after the body is read: the title passed
			m.refused(t, 400, "level_reserved", "POST", "/market/listings", pub(title))
		}
		for _, path := range []string{"/market/wallets/*/deposit", "/market/wallets/%2E%2E/deposit", "/market/wallets/a%E2%80%AEb/deposit", "/market/wallets/a%00b/deposit"} {
			m.refused(t, 400, "invalid_agent", "POST", path, []byte(`{"amount_usd":"1"}`))
		}
		m.refused(t, 400, "invalid_utf8", "POST", "/market/wallets/a%FFb/deposit", []byte(`{"amount_usd":"1"}`))
		if st := m.stats(t); st["listings_total"] != 0.0 || st["money_in_market_usd"] != 11.0 {
			t.Fatalf("stats %v", st)
		}
	})
	t.Run("Base64", func(t *testing.T) {
		bin := base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0xfd})
		v := m.ok(t, 201, "POST", "/market/listings", `{"agent":"seller","title":"bytes","problem_statement":"raw bytes blob","artifact":"`+bin+`","encoding":"base64","artifact_type":"dataset","price_usd":"1"}`)
		l := v["listing"].(map[string]any)
		if l["artifact_encoding"] != "base64" || l["artifact_sha256"] != checkers.SHA256([]byte{0xff, 0xfe, 0xfd}) {
			t.Fatalf("listing %v", l)
		}
		b := m.ok(t, 201, "POST", "/market/listings/"+l["listing_id"].(string)+"/purchase", `{"agent":"buyer"}`)
		if b["artifact"] != bin || b["encoding"] != "base64" {
			t.Fatalf("delivered %v as %v", b["artifact"], b["encoding"])
		}
	})
	m.balanced(t)
}

// TestMarketAPI_IdempotencyScoped: a key lives in the scope of its
// operation and its actor, so another agent who uses the owner's
// Idempotency-Key first does not make the owner's request answer 409, nor
// get its answer.
func TestMarketAPI_IdempotencyScoped(t *testing.T) {
	m := serveMarket(t)
	as := func(agent string) []string {
		_, tok, err := m.reg.IssueAPIKey(context.Background(), agent)
		if err != nil {
			t.Fatal(err)
		}
		return []string{"Idempotency-Key", "order-1", "Authorization", "Bearer " + tok}
	}
	squatter, owner := as("squatter"), as("owner")
	m.ok(t, 201, "POST", "/market/wallets/squatter/deposit", `{"amount_usd":"1"}`, squatter...)
	r := m.send(t, "POST", "/market/wallets/owner/deposit", []byte(`{"amount_usd":"20"}`), owner...)
	if r.status != 201 {
		t.Fatalf("owner's deposit: %d %s", r.status, r.body)
	}
	id := m.publish(t, "seller", "table of squares")
	m.ok(t, 201, "POST", "/market/wallets/squatter/deposit", `{"amount_usd":"5"}`)
	m.ok(t, 201, "POST", "/market/listings/"+id+"/purchase", `{"agent":"squatter"}`, squatter...)
	m.ok(t, 201, "POST", "/market/listings/"+id+"/purchase", `{"agent":"owner","purpose":"mine"}`, owner...)
	// The owner's retry replays the owner's answer; another body conflicts.
	r = m.send(t, "POST", "/market/wallets/owner/deposit", []byte(`{"amount_usd":"20"}`), owner...)
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("owner's retry %d replayed=%q", r.status, r.header.Get("Idempotent-Replayed"))
	}
	key := owner
	r = m.send(t, "POST", "/market/wallets/owner/deposit", []byte(`{"amount_usd":"21"}`), key...)
	if r.status != 409 || r.code(t) != "idempotency_conflict" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if b := m.balance(t, "owner"); b != 20-2.575 {
		t.Fatalf("owner %v", b)
	}
	m.balanced(t)
}

// TestMarketAPI_Level3: the seller's second agent buying and asking for
// three replays confirms the listing once; three distinct buyers make it
// level 3, and the listing and stats say how many confirmed it.
func TestMarketAPI_Level3(t *testing.T) {
	m := serveMarket(t)
	id := m.publish(t, "acme", "table of squares")
	for _, a := range []string{"acme-2", "b1", "b2"} {
		m.ok(t, 201, "POST", "/market/wallets/"+a+"/deposit", `{"amount_usd":"10"}`)
		m.ok(t, 201, "POST", "/market/listings/"+id+"/purchase", fmt.Sprintf(`{"agent":%q}`, a))
	}
	for i := range 3 {
		r := m.ok(t, 200, "POST", "/market/listings/"+id+"/replay", `{"agent":"acme-2"}`)
		if r["confirmed"] != (i == 0) || r["memo_hit"] != true || r["verification_level"] != 1.0 {
			t.Fatalf("replay %d %v", i, r)
		}
	}
	if l := m.ok(t, 200, "GET", "/market/listings/"+id, ""); l["verification_level"] != 1.0 || l["confirmed_buyers"] != 1.0 {
		t.Fatalf("after the seller's second agent: %v", l)
	}
	m.refused(t, 404, "purchase_not_found", "POST", "/market/listings/"+id+"/replay", []byte(`{"agent":"acme"}`))
	m.ok(t, 200, "POST", "/market/listings/"+id+"/replay", `{"agent":"b1"}`)
	if r := m.ok(t, 200, "POST", "/market/listings/"+id+"/replay", `{"agent":"b2"}`); r["promoted"] != true {
		t.Fatalf("third buyer %v", r)
	}
	if l := m.ok(t, 200, "GET", "/market/listings/"+id, ""); l["verification_level"] != 3.0 || l["confirmed_buyers"] != 3.0 {
		t.Fatalf("after three buyers: %v", l)
	}
	if st := m.stats(t); st["buyer_confirmations"] != 3.0 {
		t.Fatalf("stats %v", st)
	}
}

// TestMarketAPI_Money: the attack's deposits are refused with
// amount_too_large, the bounds answer coded errors, and the ledger stays
// balanced with nothing changed.
func TestMarketAPI_Money(t *testing.T) {
	m := serveMarket(t)
	for range 1025 {
		m.refused(t, 400, "amount_too_large", "POST", "/market/wallets/whale/deposit", []byte(`{"amount_usd":"9007199254.740991"}`))
	}
	m.refused(t, 400, "amount_too_large", "POST", "/market/wallets/whale/deposit", []byte(`{"amount_usd":99999999999999999999999}`))
	m.refused(t, 400, "amount_too_large", "POST", "/market/listings", []byte(`{"agent":"whale","title":"t","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1000000000.000001"}`))
	if b := m.balance(t, "whale"); b != 0 {
		t.Fatalf("whale %v", b)
	}
	for range 5 {
		m.ok(t, 201, "POST", "/market/wallets/whale/deposit", `{"amount_usd":"1000000000"}`)
	}
	m.refused(t, 409, "wallet_limit_exceeded", "POST", "/market/wallets/whale/deposit", []byte(`{"amount_usd":"0.000001"}`))
	w := m.ok(t, 200, "GET", "/market/wallets/whale", "")
	if w["balance_usd"] != 5e9 {
		t.Fatalf("whale %v", w)
	}
	if st := m.stats(t); st["money_in_market_usd"] != 5e9 {
		t.Fatalf("stats %v", st)
	}
	m.balanced(t)
}
