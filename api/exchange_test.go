package api_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/matters"
)

const xPath = "/api/v1/economic/matters/exchange"

func xOpenBody(key, quorum string) string {
	return `{"action_digest":"` + mDigest + `","question":"pay invoice 42?","stakes_usdc":"10",` +
		`"deadline":"2026-05-01T13:00:00Z","risk_class":"spend","idempotency_key":"` + key + `",` +
		`"verdict_schema":{"type":"object","required":["approve"],"properties":{"approve":{"type":"boolean"}}},"quorum":` + quorum + `}`
}

func TestExchange_Routes(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	// unsigned, read-only and unknown fields are refused before anything
	wantStatus(t, e.do(t, "", "POST", xPath+"/solvers", `{}`, sigOpt{}), 401, "signature_missing")
	wantStatus(t, e.do(t, "rita", "POST", xPath+"/open", xOpenBody("o", `{"solvers":1,"agree":1}`), sigOpt{}), 403, "insufficient_scope")
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/solvers", `{"solver_kind":"model","lineage":{"provider":"a","base_model":"b"},"weights":1}`, sigOpt{}), 400, "unknown_field")
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/solvers", `{"solver_kind":"model","lineage":{"provider":"a","base_model":"b"},"idempotency_key":"r"}`, sigOpt{}), 201, "")
	wantStatus(t, e.do(t, "alice", "POST", xPath+"/open", xOpenBody("o", `{"solvers":2,"agree":1}`), sigOpt{}), 400, "invalid_quorum")

	r := e.do(t, "alice", "POST", xPath+"/open", xOpenBody("o", `{"solvers":1,"agree":1}`), sigOpt{})
	wantStatus(t, r, 201, "")
	var c matters.Changed
	if err := json.Unmarshal(r.body, &c); err != nil || c.Matter.Exchange == nil || c.Matter.Exchange.Phase != matters.PhaseCommit {
		t.Fatalf("open: %s", r.body)
	}
	id := c.Matter.ID
	wantStatus(t, e.do(t, "eve", "POST", xPath+"/assign", fmt.Sprintf(`{"matter_id":%q,"solver_id":"bob","idempotency_key":"a"}`, id), sigOpt{}), 404, "matter_not_found")
	wantStatus(t, e.do(t, "alice", "POST", "/api/v1/economic/matters/assign", fmt.Sprintf(`{"matter_id":%q,"solver_id":"bob","solver_kind":"model","conflict_free":true,"idempotency_key":"a"}`, id), sigOpt{}), 409, "quorum_matter")
	// the Idempotency-Key header is the body's key, as on the v1 routes
	assign := fmt.Sprintf(`{"matter_id":%q,"solver_id":"bob"}`, id)
	wantStatus(t, e.do(t, "alice", "POST", xPath+"/assign", assign, sigOpt{header: map[string]string{"Idempotency-Key": "a"}}), 200, "")
	replay := e.do(t, "alice", "POST", xPath+"/assign", assign, sigOpt{header: map[string]string{"Idempotency-Key": "a"}})
	if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v", replay.status, replay.header)
	}
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/accept", fmt.Sprintf(`{"matter_id":%q,"idempotency_key":"c"}`, id), sigOpt{}), 200, "")
	salt := "abcdefghijklmnopqrstuvwxyz012345"
	sum, err := matters.Commitment(id, "bob", json.RawMessage(`{"approve":true}`), salt)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":"XYZ","idempotency_key":"k0"}`, id), sigOpt{}), 400, "invalid_commitment")
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/commit", fmt.Sprintf(`{"matter_id":%q,"commitment":%q,"idempotency_key":"k1"}`, id, sum), sigOpt{}), 200, "")
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"approve":false},"salt":%q,"idempotency_key":"v0"}`, id, mDigest, salt), sigOpt{}), 422, "reveal_mismatch")
	wantStatus(t, e.do(t, "bob", "POST", xPath+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"approve":true},"salt":"short","idempotency_key":"v1"}`, id, mDigest), sigOpt{}), 400, "invalid_salt")
	r = e.do(t, "bob", "POST", xPath+"/reveal", fmt.Sprintf(`{"matter_id":%q,"action_digest":%q,"verdict":{"approve":true},"salt":%q,"idempotency_key":"v2"}`, id, mDigest, salt), sigOpt{})
	wantStatus(t, r, 200, "")
	if err := json.Unmarshal(r.body, &c); err != nil || c.Matter.Status != matters.StatusJudged {
		t.Fatalf("reveal: %s", r.body)
	}
	// no court wired in this app
	wantStatus(t, e.do(t, "alice", "POST", xPath+"/appeal", fmt.Sprintf(`{"matter_id":%q,"reason":"no","fee_usdc":"1","action_digest":%q,"idempotency_key":"p"}`, id, mDigest), sigOpt{}), 503, "appeal_unavailable")
	wantStatus(t, e.do(t, "alice", "POST", xPath+"/observe", fmt.Sprintf(`{"matter_id":%q,"outcome":{"approve":true},"idempotency_key":"ob"}`, id), sigOpt{}), 200, "")
	p := e.do(t, "alice", "GET", xPath+"/solvers/bob", "", sigOpt{})
	wantStatus(t, p, 200, "")
	var prof matters.Profile
	if err := json.Unmarshal(p.body, &prof); err != nil || prof.Solver.Lineage == nil || prof.Calibration.Correct != 1 || *prof.Calibration.Accuracy != 1 {
		t.Fatalf("profile: %s", p.body)
	}
	wantStatus(t, e.do(t, "eve", "GET", xPath+"/solvers/bob", "", sigOpt{}), 404, "solver_not_found")
}
