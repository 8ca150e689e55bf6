package e2e

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// exchangeJury is an OpenAI-compatible chat-completions server, the
// protocol the court's jury speaks to a hosted model: every juror votes
// what vote holds.
func exchangeJury(tb testing.TB, vote *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{
				"role": "assistant", "content": fmt.Sprintf(`{"vote":%q,"rationale":"%s decided"}`, vote.Load(), body.Model)}}}})
	}))
	tb.Cleanup(srv.Close)
	return srv
}

type exchangeRun struct {
	s    *server
	keys map[string]ed25519.PrivateKey
	n    int
}

const xbase = "/api/v1/economic/matters/exchange"

func (x *exchangeRun) call(tb testing.TB, who, path, body string) response {
	tb.Helper()
	method := "POST"
	if body == "" {
		method = "GET"
	}
	return x.s.signed(tb, x.keys[who], who, method, path, body)
}

func (x *exchangeRun) ok(tb testing.TB, who, path, body string) map[string]any {
	tb.Helper()
	r := x.call(tb, who, path, body)
	if r.status != 200 && r.status != 201 {
		tb.Fatalf("%s %s: %d %s", who, path, r.status, r.body)
	}
	return r.obj(tb)
}

func (x *exchangeRun) key() string { x.n++; return fmt.Sprintf("k%d", x.n) }

// wallet reads an agent's balance from the market's wallet route.
func (x *exchangeRun) wallet(tb testing.TB, id string) string {
	tb.Helper()
	r := x.s.get(tb, "/market/wallets/"+id)
	var w struct {
		Balance json.Number `json:"balance_usd"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &w) != nil {
		tb.Fatalf("wallet %s: %d %s", id, r.status, r.body)
	}
	return w.Balance.String()
}

// commitment is the exchange's commitment, computed here from its
// definition: the SHA-256 of the RFC 8785 form of {matter_id, salt,
// solver_id, verdict}, written out with sorted keys.
func commitment(matter, solver, decision, pLoss, salt string) string {
	c := fmt.Sprintf(`{"matter_id":%q,"salt":%q,"solver_id":%q,"verdict":{"decision":%q,"p_loss":%s}}`, matter, salt, solver, decision, pLoss)
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:])
}

func (x *exchangeRun) open(tb testing.TB, n, m, k int) string {
	tb.Helper()
	body := fmt.Sprintf(`{"action_digest":%q,"question":"may we pay invoice 42 of ACME?","stakes_usdc":"500",
		"deadline":%q,"risk_class":"spend","idempotency_key":%q,
		"verdict_schema":{"type":"object","required":["decision","p_loss"],"properties":{
			"decision":{"type":"string","enum":["approve","deny","escalate"]},"p_loss":{"type":"number","minimum":0,"maximum":1}}},
		"quorum":{"solvers":%d,"agree":%d,"lineages":%d,"agree_on":["decision"],"pay_usdc":"1","bond_usdc":"2"}}`,
		mattersDigest, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), x.key(), n, m, k)
	o := x.ok(tb, "rita", xbase+"/open", body)
	return o["matter"].(map[string]any)["matter_id"].(string)
}

func (x *exchangeRun) seat(tb testing.TB, id string, solvers ...string) {
	tb.Helper()
	for _, s := range solvers {
		x.ok(tb, "rita", xbase+"/assign", fmt.Sprintf(`{"matter_id":%q,"solver_id":%q,"idempotency_key":%q}`, id, s, x.key()))
		x.ok(tb, s, xbase+"/accept", fmt.Sprintf(`{"matter_id":%q,"idempotency_key":%q}`, id, x.key()))
	}
}

func salt(solver string) string { return "0123456789abcdef0123456789abcdef-" + solver }

// decide commits and then reveals each solver's decision.
func (x *exchangeRun) decide(tb testing.TB, id string, solvers, decisions []string) {
	tb.Helper()
	for i, s := range solvers {
		x.ok(tb, s, xbase+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":%q,"idempotency_key":%q}`,
			id, commitment(id, s, decisions[i], "0.25", salt(s)), x.key()))
	}
	for i, s := range solvers {
		x.ok(tb, s, xbase+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"p_loss":0.25,"decision":%q},"salt":%q,"idempotency_key":%q}`,
			id, mattersDigest, decisions[i], salt(s), x.key()))
	}
}

func (x *exchangeRun) matter(tb testing.TB, id string) map[string]any {
	tb.Helper()
	return x.ok(tb, "rita", "/api/v1/economic/matters/"+id, "")["matter"].(map[string]any)
}

func TestExchange_OverLoopback(t *testing.T) {
	dir := t.TempDir()
	x := &exchangeRun{keys: map[string]ed25519.PrivateKey{}}
	x.keys["rita"] = addPrincipal(t, dir, "rita", "acme", "requester", 11)
	x.keys["eve"] = addPrincipal(t, dir, "eve", "other", "requester,solver", 12)
	solvers := []string{"m1", "m2", "m3", "m4", "m5"}
	lineages := [][2]string{{"acme-ai", "atlas-2"}, {"acme-ai", "atlas-2"}, {"globex", "gamma-7"}, {"globex", "gamma-7"}, {"initech", "iris-1"}}
	for i, s := range append(solvers, "h1") {
		x.keys[s] = addPrincipal(t, dir, s, "acme", "solver", byte(20+i))
	}
	var vote atomic.Value
	vote.Store("pass")
	jury := exchangeJury(t, &vote)
	x.s = start(t, dir, "ASSAY_JURY_BASE_URL="+jury.URL+"/v1", "ASSAY_JURY_MODELS=juror-a,juror-b,juror-c", "ASSAY_OPERATOR_TOKEN=court-op")

	// the registry: five models of three lineages, and a human who
	// declared a conflict with rita
	for i, s := range solvers {
		x.ok(t, s, xbase+"/solvers", fmt.Sprintf(`{"solver_kind":"model","lineage":{"provider":%q,"base_model":%q},"qualifications":["payments"],"idempotency_key":"r"}`,
			lineages[i][0], lineages[i][1]))
	}
	x.ok(t, "h1", xbase+"/solvers", `{"solver_kind":"human","conflicts":["rita"],"idempotency_key":"r"}`)
	wantResp(t, x.call(t, "m1", xbase+"/solvers", `{"solver_id":"m2","solver_kind":"human","idempotency_key":"r2"}`), 403, "solver_mismatch")
	wantResp(t, x.call(t, "m1", xbase+"/solvers", `{"solver_kind":"model","idempotency_key":"r3"}`), 400, "invalid_lineage")

	// wallets, funded through the market's dev-rail deposits, which on the
	// signed market are the operator's (or the agent's own)
	for _, a := range append([]string{"rita"}, solvers...) {
		if r := x.s.post(t, "/market/wallets/"+a+"/deposit", `{"amount_usd":"100"}`, "Idempotency-Key", "fund-"+a, "Authorization", "Bearer court-op"); r.status != 201 {
			t.Fatalf("deposit %s: %d %s", a, r.status, r.body)
		}
	}

	t.Run("ThreeOfFiveReachesAVerdict", func(t *testing.T) {
		id := x.open(t, 5, 3, 3)
		wantResp(t, x.call(t, "rita", xbase+"/assign", fmt.Sprintf(`{"matter_id":%q,"solver_id":"h1","idempotency_key":%q}`, id, x.key())), 409, "solver_conflict")
		wantResp(t, x.call(t, "eve", "/api/v1/economic/matters/"+id, ""), 404, "matter_not_found")
		x.seat(t, id, solvers...)
		if got := x.wallet(t, "rita"); got != "95" {
			t.Fatalf("rita holds %s after funding five seats' pay", got)
		}
		// sealed: no reveal before the quorum closes
		x.ok(t, "m1", xbase+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":%q,"idempotency_key":%q}`, id, commitment(id, "m1", "approve", "0.25", salt("m1")), x.key()))
		wantResp(t, x.call(t, "m1", xbase+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"decision":"approve","p_loss":0.25},"salt":%q,"idempotency_key":%q}`,
			id, mattersDigest, salt("m1"), x.key())), 409, "quorum_not_closed")
		for i, s := range solvers[1:] {
			d := []string{"approve", "deny", "approve", "deny"}[i]
			x.ok(t, s, xbase+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":%q,"idempotency_key":%q}`, id, commitment(id, s, d, "0.25", salt(s)), x.key()))
		}
		for i, s := range solvers {
			d := []string{"approve", "approve", "deny", "approve", "deny"}[i]
			x.ok(t, s, xbase+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"decision":%q,"p_loss":0.25},"salt":%q,"idempotency_key":%q}`,
				id, mattersDigest, d, salt(s), x.key()))
		}
		m := x.matter(t, id)
		if m["status"] != "judged" || m["verdict"].(map[string]any)["decision"] != "approve" {
			t.Fatalf("matter %v verdict %v", m["status"], m["verdict"])
		}
		x.ok(t, "rita", "/api/v1/economic/matters/settle", fmt.Sprintf(`{"matter_id":%q,"idempotency_key":%q}`, id, x.key()))
		for i, s := range solvers {
			want := []string{"101", "101", "100", "101", "100"}[i]
			if got := x.wallet(t, s); got != want {
				t.Fatalf("%s holds %s, want %s", s, got, want)
			}
		}
		if got := x.wallet(t, "rita"); got != "97" {
			t.Fatalf("rita holds %s: three solvers paid, two seats' pay returned", got)
		}
		rs := x.ok(t, "rita", "/api/v1/economic/matters/"+id+"/receipts", "")["receipts"].([]any)
		var ks []string
		for _, r := range rs {
			x.s.verify(t, r.(map[string]any))
			ks = append(ks, subjectOf(t, r.(map[string]any))["kind"].(string))
		}
		if n := strings.Count(strings.Join(ks, " "), "verdict_committed"); n != 5 || ks[len(ks)-2] != "verdicts_aggregated" || ks[len(ks)-1] != "matter_settled" {
			t.Fatalf("receipts %v", ks)
		}
	})

	t.Run("SplitEndsNoConsensus", func(t *testing.T) {
		before := x.wallet(t, "rita")
		id := x.open(t, 5, 3, 0)
		x.seat(t, id, solvers...)
		x.decide(t, id, solvers, []string{"approve", "approve", "deny", "deny", "escalate"})
		m := x.matter(t, id)
		if m["status"] != "no_consensus" {
			t.Fatalf("status %v", m["status"])
		}
		if got := x.wallet(t, "rita"); got != before {
			t.Fatalf("rita holds %s, had %s: the pay comes back", got, before)
		}
		wantResp(t, x.call(t, "rita", "/api/v1/economic/matters/settle", fmt.Sprintf(`{"matter_id":%q,"idempotency_key":%q}`, id, x.key())), 409, "matter_not_settleable")
	})

	t.Run("RevealMustMatchCommitment", func(t *testing.T) {
		id := x.open(t, 3, 2, 0)
		x.seat(t, id, solvers[:3]...)
		for _, s := range solvers[:3] {
			x.ok(t, s, xbase+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":%q,"idempotency_key":%q}`, id, commitment(id, s, "deny", "0.25", salt(s)), x.key()))
		}
		wantResp(t, x.call(t, "m1", xbase+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"decision":"approve","p_loss":0.25},"salt":%q,"idempotency_key":%q}`,
			id, mattersDigest, salt("m1"), x.key())), 422, "reveal_mismatch")
		if st := x.matter(t, id)["exchange"].(map[string]any)["seats"].([]any)[0].(map[string]any)["solver_status"]; st != "committed" {
			t.Fatalf("seat is %v after a refused reveal", st)
		}
	})

	t.Run("AppealOverturnsAndMovesBonds", func(t *testing.T) {
		before := map[string]string{}
		for _, s := range append([]string{"rita"}, solvers...) {
			before[s] = x.wallet(t, s)
		}
		id := x.open(t, 5, 3, 3)
		x.seat(t, id, solvers...)
		decisions := []string{"deny", "approve", "deny", "deny", "approve"}
		x.decide(t, id, solvers, decisions)
		vote.Store("fail")
		o := x.ok(t, "rita", xbase+"/appeal", fmt.Sprintf(`{"matter_id":%q,"reason":"ACME shipped nothing","fee_usdc":"0.5","action_digest":%q,"idempotency_key":%q}`, id, mattersDigest, x.key()))
		m := o["matter"].(map[string]any)
		ap := m["exchange"].(map[string]any)["appeal"].(map[string]any)
		if m["status"] != "overturned" || ap["result"] != "overturned" || ap["tier"] != "tier1-jury" {
			t.Fatalf("matter %v appeal %v", m["status"], ap)
		}
		// the court's own verdict receipt, at the court's route
		cr := x.s.get(t, "/contracts/"+ap["case_id"].(string))
		if cr.status != 200 || cr.obj(t)["verdict"] != "refund" {
			t.Fatalf("court case: %d %s", cr.status, cr.body)
		}
		for i, s := range solvers {
			want := before[s]
			if decisions[i] == "deny" { // the overturned majority forfeits its $2 bond
				want = fmt.Sprint(mustInt(t, before[s]) - 2)
			}
			if got := x.wallet(t, s); got != want {
				t.Fatalf("%s holds %s, want %s", s, got, want)
			}
		}
		// all pay back and three forfeited bonds; the appeal fee, taken
		// from rita's wallet when the court funded the case, came back
		// with the overturn (were it never taken, rita would hold 0.5 more)
		if got, want := x.wallet(t, "rita"), fmt.Sprint(mustFloat(t, before["rita"])+6); got != want {
			t.Fatalf("rita holds %s, want %s", got, want)
		}
		x.ok(t, "rita", xbase+"/observe", fmt.Sprintf(`{"matter_id":%q,"outcome":{"decision":"approve","p_loss":0},"idempotency_key":%q}`, id, x.key()))
		wantResp(t, x.call(t, "rita", xbase+"/observe", fmt.Sprintf(`{"matter_id":%q,"outcome":{"decision":"deny","p_loss":1},"idempotency_key":%q}`, id, x.key())), 409, "already_observed")
		p := x.ok(t, "rita", xbase+"/solvers/m1", "")
		c := p["calibration"].(map[string]any)
		if c["appeals_lost"] != 1.0 || c["observed"] != 1.0 || c["correct"] != 0.0 || c["brier"] != 0.0625 {
			t.Fatalf("m1 calibration %v", c)
		}
		if c := x.ok(t, "rita", xbase+"/solvers/m2", "")["calibration"].(map[string]any); c["correct"] != 1.0 || c["appeals_lost"] != 0.0 {
			t.Fatalf("m2 calibration %v", c)
		}
	})

	t.Run("EscalatedAppealResumesAfterTheCourtsOperator", func(t *testing.T) {
		id := x.open(t, 3, 2, 0)
		x.seat(t, id, solvers[:3]...)
		x.decide(t, id, solvers[:3], []string{"approve", "deny", "approve"})
		vote.Store("abstain")
		appeal := fmt.Sprintf(`{"matter_id":%q,"reason":"unclear","fee_usdc":"1","action_digest":%q,"idempotency_key":"appeal-esc"}`, id, mattersDigest)
		o := x.ok(t, "rita", xbase+"/appeal", appeal)
		m := o["matter"].(map[string]any)
		caseID := m["exchange"].(map[string]any)["appeal"].(map[string]any)["case_id"].(string)
		if m["status"] != "appealed" || o["receipt"].(map[string]any)["credentialSubject"].(map[string]any)["kind"] != "matter_appealed" {
			t.Fatalf("escalated appeal: %v", m["status"])
		}
		wantResp(t, x.call(t, "rita", "/api/v1/economic/matters/settle", fmt.Sprintf(`{"matter_id":%q,"idempotency_key":%q}`, id, x.key())), 409, "matter_not_settleable")
		if r := x.s.post(t, "/contracts/"+caseID+"/resolve", `{"verdict":"release","reason":"the verdict stands"}`, "Authorization", "Bearer court-op"); r.status != 200 {
			t.Fatalf("resolve: %d %s", r.status, r.body)
		}
		m = x.ok(t, "rita", xbase+"/appeal", appeal)["matter"].(map[string]any)
		if ap := m["exchange"].(map[string]any)["appeal"].(map[string]any); m["status"] != "upheld" || ap["tier"] != "operator" {
			t.Fatalf("after the operator: %v %v", m["status"], ap)
		}
	})

	// the ledger the three services share sums to zero
	if l := x.s.get(t, "/ledger"); l.status != 200 || l.obj(t)["balanced"] != true {
		t.Fatalf("ledger: %d %s", l.status, l.body)
	}
}

func mustFloat(tb testing.TB, s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		tb.Fatal(err)
	}
	return f
}

func mustInt(tb testing.TB, s string) int64 { return int64(mustFloat(tb, s)) }
