package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// The expectations the seed service's own clients have of it, checked over
// HTTP against assay serve: usage notes in the seed's shape, POST /verify's
// 422 for a body that is not a receipt, and the reputation example.

// TestSeed_UsageNotes: a bare GET of each of the court's POST routes
// answers 200 and a usage note with how_to_<step>: the method, the path
// and an example body (how_to_create for /contracts, how_to_verify for
// /verify).
func TestSeed_UsageNotes(t *testing.T) {
	t.Parallel()
	s := shared(t, plainServer)
	for path, step := range map[string]string{
		"/contracts": "create", "/verify": "verify", "/contracts/esc-1/fund": "fund", "/contracts/esc-1/deliver": "deliver",
		"/contracts/esc-1/accept": "accept", "/contracts/esc-1/dispute": "dispute", "/checkers": "upload", "/replays": "replay",
	} {
		r := s.get(t, path)
		if r.status != 200 {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
			continue
		}
		m := r.obj(t)
		how, ok := m["how_to_"+step].(map[string]any)
		if !ok || how["method"] != "POST" || !strings.HasPrefix(how["path"].(string), strings.Split(path, "/esc-1")[0]) || m["detail"] == "" {
			t.Errorf("GET %s: no how_to_%s with method POST and the path: %s", path, step, r.body)
		}
	}
	m := s.get(t, "/contracts").obj(t)
	body, _ := m["how_to_create"].(map[string]any)["body"].(map[string]any)
	if body["buyer"] == nil || body["seller"] == nil || body["price"] == nil {
		t.Errorf("how_to_create has no example body: %v", m)
	}
	if fetch, _ := m["how_to_fetch"].(map[string]any); fetch["method"] != "GET" || fetch["path"] != "/contracts/{contract_id}" {
		t.Errorf("GET /contracts does not say how to fetch one: %v", m)
	}
}

// TestSeed_VerifyNotAReceipt: JSON that is not a receipt answers 422 with
// a coded error; a receipt that fails answers 200 {"valid": false,
// "reason"}; the receipt as signed {"valid": true}.
func TestSeed_VerifyNotAReceipt(t *testing.T) {
	t.Parallel()
	s := shared(t, plainServer)
	for _, body := range []string{`{"something":"else"}`, `{}`, `[]`, `{"receipt":{}}`, `{"receipt":"text"}`, `7`} {
		r := s.post(t, "/verify", body, malformed, "1")
		if r.status != 422 || r.code(t) != "not_a_receipt" {
			t.Errorf("POST /verify %s: %d %s; want 422 not_a_receipt", body, r.status, r.body)
		}
	}
	id := s.deliveredCase(t, unique("did:e2e:seller"), rows100, `{"rows":300}`)
	accepted := s.post(t, "/contracts/"+id+"/accept", `{}`)
	if accepted.status != 200 {
		t.Fatalf("accept %d %s", accepted.status, accepted.body)
	}
	receipt := accepted.obj(t)
	s.verify(t, receipt)
	subjectOf(t, receipt)["payout"] = map[string]any{"did:e2e:buyer": 40}
	b, _ := json.Marshal(map[string]any{"receipt": receipt})
	r := s.post(t, "/verify", string(b))
	if r.status != 200 || r.obj(t)["valid"] != false || r.obj(t)["reason"] == "" {
		t.Fatalf("a tampered receipt: %d %s; want 200 valid false and a reason", r.status, r.body)
	}
}

// TestSeed_ReputationExample is the seed's example: a seller with one
// accepted contract and one lost dispute has as_seller sample_count 2,
// positive 1, negative 1 (score 0.5, confidence 0.33, WATCH) and the
// top-level standing GOOD; the buyer won its one dispute.
func TestSeed_ReputationExample(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir()) // the buyer's reputation is counted: a server of its own
	seller := "did:nanda:doc-seller"
	accepted := s.deliveredCase(t, seller, rows100, `{"rows":120}`)
	if r := s.post(t, "/contracts/"+accepted+"/accept", `{}`); r.status != 200 {
		t.Fatalf("accept %d %s", r.status, r.body)
	}
	lost := s.deliveredCase(t, seller, rows100, `{"rows":40}`)
	if r := s.post(t, "/contracts/"+lost+"/dispute", `{"reason":"only 40 of 100 rows"}`); r.status != 200 || subjectOf(t, r.obj(t))["verdict"] != "refund" {
		t.Fatalf("dispute %d %s", r.status, r.body)
	}
	rep := s.get(t, "/agents/"+seller+"/reputation").obj(t)
	as := rep["as_seller"].(map[string]any)
	want := map[string]any{"sample_count": 2.0, "positive": 1.0, "negative": 1.0, "score": 0.5, "confidence": 0.33, "standing": "WATCH"}
	for k, v := range want {
		if as[k] != v {
			t.Errorf("as_seller.%s = %v, want %v (%v)", k, as[k], v, as)
		}
	}
	if rep["standing"] != "GOOD" {
		t.Errorf("standing %v, want GOOD as the seed shows", rep["standing"])
	}
	buyer := s.get(t, "/agents/did:e2e:buyer/reputation").obj(t)["as_buyer"].(map[string]any)
	if buyer["sample_count"] != 1.0 || buyer["positive"] != 1.0 {
		t.Errorf("the buyer's accept counts nothing for it, its won dispute one positive: %v", buyer)
	}
}
