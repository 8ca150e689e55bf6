package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
)

// TestMarket drives the artifact market over HTTP against assay serve:
// publish with a passing, a failing and no checker; purchase;
// idempotency; a challenge upheld by a failing replay; one left to the
// operator and rejected; bad input that changes nothing; a double
// purchase raced by many clients; the ledger sums to zero. The market is
// open (agents named in bodies): auth_market_test.go tests the signed one.
func TestMarket(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), "ASSAY_OPERATOR_TOKEN=op", "ASSAY_MARKET_AUTH=open")
	wasmBytes, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasmBytes, "Content-Type", "application/wasm")
	if up.status != http.StatusCreated {
		t.Fatalf("upload %d %s", up.status, up.body)
	}
	sum := up.obj(t)["sha256"].(string)
	want := func(r response, status int) map[string]any {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
		}
		return r.obj(t)
	}
	wantErr := func(r response, status int, code string) {
		t.Helper()
		if r.status != status || r.code(t) != code {
			t.Fatalf("%d %s, want %d %s", r.status, r.body, status, code)
		}
	}
	balanced := func() {
		t.Helper()
		if b := want(s.get(t, "/ledger"), 200); b["balanced"] != true {
			t.Fatalf("ledger %v", b)
		}
	}
	publish := func(seller, artifact, checker string) response {
		return s.post(t, "/market/listings", fmt.Sprintf(`{"agent":%q,"title":"squares 1-3","problem_statement":"table of squares of the integers 1 to 3",
			"artifact":%s,"artifact_type":"dataset","price_usd":"2.50","est_recompute_cost_usd":25%s}`, seller, artifact, checker))
	}
	withChecker := fmt.Sprintf(`,"checker":{"sha256":%q}`, sum)

	want(s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":"10"}`, "Idempotency-Key", "dep-1"), 201)
	r := s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":"10"}`, "Idempotency-Key", "dep-1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed deposit %d %v", r.status, r.header)
	}
	wantErr(s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":"11"}`, "Idempotency-Key", "dep-1"), 409, "idempotency_conflict")
	wantErr(s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":"1.0000001"}`, malformed, "1"), 400, "invalid_amount")
	wantErr(s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":1e3}`), 400, "invalid_amount")
	wantErr(s.post(t, "/market/wallets/buyer/deposit", `{"amount":"1"}`, malformed, "1"), 400, "unknown_field")
	if w := want(s.get(t, "/market/wallets/buyer"), 200); w["balance_usd"] != 10.0 {
		t.Fatalf("wallet %v", w)
	}

	// Publication: a failing replay refuses, no checker needs a bond.
	wantErr(publish("seller", `"1 1\n2 5\n"`, withChecker), 422, "checker_failed")
	wantErr(publish("seller", `"1 1\n"`, ""), 409, "insufficient_funds")
	wantErr(publish("seller", `"1 1\n"`, `,"verification_level":4`), 400, "level_reserved")
	pub := want(publish("seller", `"1 1\n2 4\n3 9\n"`, withChecker), 201)
	listing := pub["listing"].(map[string]any)
	id := listing["listing_id"].(string)
	if listing["verification_level"] != 1.0 || listing["bond_usd"] != 0.0 || pub["replay"].(map[string]any)["kind"] != "pass" {
		t.Fatalf("published %v", pub)
	}
	got := want(s.get(t, "/market/listings/"+id), 200)
	if _, leaked := got["artifact"]; leaked {
		t.Fatal("get_listing shows the artifact")
	}
	res := want(s.get(t, "/market/listings?query=table+of+squares+of+the+integers+1+to+3"), 200)
	if res["results"].([]any)[0].(map[string]any)["match"].(map[string]any)["class"] != "exact" || res["no_reliable_match"] != false {
		t.Fatalf("search %v", res)
	}

	// Many clients race to buy once: one purchase, one debit.
	var wg sync.WaitGroup
	statuses := make(chan int, 10)
	for range 10 {
		wg.Go(func() {
			statuses <- s.post(t, "/market/listings/"+id+"/purchase", `{"agent":"buyer","purpose":"test data"}`).status
		})
	}
	wg.Wait()
	close(statuses)
	won := 0
	for st := range statuses {
		if st == 201 {
			won++
		} else if st != 409 {
			t.Fatalf("purchase status %d", st)
		}
	}
	if won != 1 {
		t.Fatalf("%d purchases won", won)
	}
	if w := want(s.get(t, "/market/wallets/buyer"), 200); w["balance_usd"] != 7.425 {
		t.Fatalf("buyer after purchase %v", w)
	}
	wantErr(s.post(t, "/market/listings/"+id+"/purchase", `{"agent":"poor"}`), 409, "insufficient_funds")
	wantErr(s.post(t, "/market/listings/nope/purchase", `{"agent":"buyer"}`), 404, "listing_not_found")
	wantErr(s.post(t, "/market/listings/"+id+"/challenge", `{"agent":"buyer"}`, malformed, "1"), 400, "missing_field")

	// A counterexample the table does not cover: the replay fails, the
	// challenge is upheld, price and fee come back, the listing is pulled.
	ch := want(s.post(t, "/market/listings/"+id+"/challenge", `{"agent":"buyer","evidence":"4"}`), 201)
	if ch["challenge"].(map[string]any)["status"] != "upheld" {
		t.Fatalf("challenge %v", ch)
	}
	if w := want(s.get(t, "/market/wallets/buyer"), 200); w["balance_usd"] != 10.0 {
		t.Fatalf("buyer after refund %v", w)
	}
	if l := want(s.get(t, "/market/listings/"+id), 200); l["status"] != "pulled" {
		t.Fatalf("listing %v", l)
	}
	rc := ch["receipt"].(map[string]any)
	want(s.post(t, "/verify", string(must(json.Marshal(rc)))), 200)

	// A challenge whose replay passes goes to the operator, who rejects it.
	id2 := want(publish("seller2", `"1 1\n2 4\n3 9\n"`, withChecker), 201)["listing"].(map[string]any)["listing_id"].(string)
	want(s.post(t, "/market/listings/"+id2+"/purchase", `{"agent":"buyer"}`), 201)
	ch = want(s.post(t, "/market/listings/"+id2+"/challenge", `{"agent":"buyer","evidence":"3","reason":"looks off"}`), 201)
	c := ch["challenge"].(map[string]any)
	if c["status"] != "open" {
		t.Fatalf("challenge %v", c)
	}
	cid := c["challenge_id"].(string)
	wantErr(s.post(t, "/market/challenges/"+cid+"/resolve", `{"verdict":"reject"}`), 401, "unauthorized")
	wantErr(s.post(t, "/market/challenges/"+cid+"/resolve", `{"verdict":"maybe"}`, "Authorization", "Bearer op"), 400, "invalid_verdict")
	res2 := want(s.post(t, "/market/challenges/"+cid+"/resolve", `{"verdict":"reject","reason":"the table is right"}`, "Authorization", "Bearer op"), 200)
	if res2["challenge"].(map[string]any)["status"] != "rejected" || res2["purchase"].(map[string]any)["status"] != "held" {
		t.Fatalf("resolved %v", res2)
	}
	wantErr(s.post(t, "/market/challenges/"+cid+"/resolve", `{"verdict":"uphold"}`, "Authorization", "Bearer op"), 409, "challenge_not_open")

	// Level 2: the bond is escrowed and comes back on clean retirement.
	want(s.post(t, "/market/wallets/seller3/deposit", `{"amount_usd":"0.5"}`), 201)
	l3 := want(publish("seller3", `"anything"`, ""), 201)["listing"].(map[string]any)
	if l3["verification_level"] != 2.0 || l3["bond_usd"] != 0.5 {
		t.Fatalf("level 2 %v", l3)
	}
	want(s.post(t, "/market/listings/"+l3["listing_id"].(string)+"/deactivate", `{"agent":"seller3"}`), 200)
	if w := want(s.get(t, "/market/wallets/seller3"), 200); w["balance_usd"] != 0.5 {
		t.Fatalf("bond not returned %v", w)
	}
	st := want(s.get(t, "/market/stats"), 200)
	if st["purchases"] != 2.0 || st["challenges_upheld"] != 1.0 || st["challenges_rejected"] != 1.0 {
		t.Fatalf("stats %v", st)
	}
	balanced()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
