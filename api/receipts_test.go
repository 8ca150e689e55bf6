package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/receipt"
)

// servedAsSigned fails tb unless served carries its credentialSubject in
// the signed bytes (receipt.AsSigned hashes them as served), holds want in
// them unescaped, and verifies with runtime/receipt's verifier and the keys
// the server publishes.
func servedAsSigned(tb testing.TB, keySet, served []byte, want string) {
	tb.Helper()
	if err := receipt.AsSigned(served); err != nil {
		tb.Errorf("%v: %s", err, served)
	}
	if !bytes.Contains(served, []byte(want)) {
		tb.Errorf("the served receipt does not hold %q as signed: %s", want, served)
	}
	keys, err := receipt.ParseKeys(keySet)
	if err != nil {
		tb.Fatal(err)
	}
	if res := receipt.NewVerifier(keys).Verify(served); !res.Valid {
		tb.Errorf("the served receipt does not verify: %s", res.Reason)
	}
}

// TestReceipts_SignedBytes: a receipt whose subject holds <, > and & is
// served, by every service and by GET /receipts/{id}, in the bytes that
// were signed: the market and matters used to store and answer them
// HTML-escaped (\u003c), so that the served subject hashed to something
// else than proof.subjectHash.
func TestReceipts_SignedBytes(t *testing.T) {
	const text = "<rows> & more"
	t.Run("Court", func(t *testing.T) {
		app := mustApp(t)
		keySet := do(t, app, call{method: "GET", path: "/.well-known/assay-keys"}).body
		id := deliveredContract(t, app, rows100, `{"rows":3}`)
		r := do(t, app, call{method: "POST", path: "/contracts/" + id + "/dispute", body: `{"reason":"` + text + `"}`})
		if r.status != 200 {
			t.Fatalf("dispute: %d %s", r.status, r.body)
		}
		servedAsSigned(t, keySet, r.body, text)
		rid := strings.TrimPrefix(r.json(t)["id"].(string), receipt.IDPrefix)
		g := do(t, app, call{method: "GET", path: "/receipts/" + rid})
		if g.status != 200 || !bytes.Equal(g.body, r.body) {
			t.Fatalf("GET /receipts/%s: %d %s", rid, g.status, g.body)
		}
		servedAsSigned(t, keySet, g.body, text)
		var page struct{ Receipts []json.RawMessage }
		if err := json.Unmarshal(do(t, app, call{method: "GET", path: "/agents/did:nanda:buyer/receipts"}).body, &page); err != nil || len(page.Receipts) != 1 {
			t.Fatalf("agent receipts: %v %d", err, len(page.Receipts))
		}
		servedAsSigned(t, keySet, page.Receipts[0], text)
	})
	t.Run("Market", func(t *testing.T) {
		m := serveMarket(t)
		keySet := m.send(t, "GET", "/.well-known/assay-keys", nil).body
		m.ok(t, 201, "POST", "/market/wallets/buyer/deposit", `{"amount_usd":"10"}`)
		m.ok(t, 201, "POST", "/market/wallets/seller/deposit", `{"amount_usd":"1"}`)
		l := m.ok(t, 201, "POST", "/market/listings", `{"agent":"seller","title":"t","problem_statement":"squares table","artifact":"x","artifact_type":"dataset","price_usd":"1"}`)
		lid := l["listing"].(map[string]any)["listing_id"].(string)
		r := m.send(t, "POST", "/market/listings/"+lid+"/purchase", []byte(`{"agent":"buyer","purpose":"`+text+`"}`))
		if r.status != 201 {
			t.Fatalf("purchase: %d %s", r.status, r.body)
		}
		var bought struct{ Receipt json.RawMessage }
		if err := json.Unmarshal(r.body, &bought); err != nil {
			t.Fatal(err)
		}
		servedAsSigned(t, keySet, bought.Receipt, text)
		var rc struct{ ID string }
		if err := json.Unmarshal(bought.Receipt, &rc); err != nil {
			t.Fatal(err)
		}
		g := m.send(t, "GET", "/receipts/"+strings.TrimPrefix(rc.ID, receipt.IDPrefix), nil)
		if g.status != 200 || !bytes.Equal(g.body, bought.Receipt) {
			t.Fatalf("GET /receipts: %d %s, want %s", g.status, g.body, bought.Receipt)
		}
		servedAsSigned(t, keySet, g.body, text)
	})
	t.Run("Matters", func(t *testing.T) {
		// A Matter's receipt carries no free text (the question, the
		// verdict and the reason are hashed), so no request puts < > &
		// in its subject; its receipts go through the same repository,
		// and the bytes each route serves are the signed ones.
		e := mustMattersApp(t, api.MattersSigned)
		keySet := e.do(t, "", "GET", "/.well-known/assay-keys", "", sigOpt{}).body
		r := e.do(t, "alice", "POST", "/api/v1/economic/matters/open", mOpenBody("o1"), sigOpt{})
		wantStatus(t, r, 201, "")
		var opened struct {
			Matter struct {
				MatterID string `json:"matter_id"`
			}
			Receipt json.RawMessage
		}
		if err := json.Unmarshal(r.body, &opened); err != nil {
			t.Fatal(err)
		}
		servedAsSigned(t, keySet, opened.Receipt, `"kind":"matter_opened"`)
		var rc struct{ ID string }
		if err := json.Unmarshal(opened.Receipt, &rc); err != nil {
			t.Fatal(err)
		}
		g := e.do(t, "", "GET", "/receipts/"+strings.TrimPrefix(rc.ID, receipt.IDPrefix), "", sigOpt{})
		if g.status != 200 || !bytes.Equal(g.body, opened.Receipt) {
			t.Fatalf("GET /receipts: %d %s, want %s", g.status, g.body, opened.Receipt)
		}
		var list struct{ Receipts []json.RawMessage }
		l := e.do(t, "alice", "GET", "/api/v1/economic/matters/"+opened.Matter.MatterID+"/receipts", "", sigOpt{})
		if err := json.Unmarshal(l.body, &list); err != nil || len(list.Receipts) != 1 || !bytes.Equal(list.Receipts[0], opened.Receipt) {
			t.Fatalf("matter receipts: %v %s", err, l.body)
		}
	})
}
