package api_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assayhq/assay/api"
)

const mBase = "/api/v1/economic/matters"

// key returns an idempotency key not used before in the env.
func (e *mEnv) key() string { return fmt.Sprintf("key-%d", e.nonce.Add(1)) }

// post sends a signed POST to a matters route and wants 2xx.
func (e *mEnv) post(tb testing.TB, keyID, route, body string) resp {
	tb.Helper()
	r := e.do(tb, keyID, "POST", mBase+route, body, sigOpt{})
	if r.status/100 != 2 {
		tb.Fatalf("%s %s: %d %s", keyID, route, r.status, r.body)
	}
	return r
}

// at brings a new Matter to state over HTTP and returns its id.
func (e *mEnv) at(tb testing.TB, state string) string {
	tb.Helper()
	id := e.post(tb, "alice", "/open", mOpenBody(e.key())).json(tb)["matter"].(map[string]any)["matter_id"].(string)
	steps := map[string][]string{
		"open":     nil,
		"invited":  {"assign"},
		"accepted": {"assign", "accept"},
		"judged":   {"assign", "accept", "verdict"},
		"settled":  {"assign", "accept", "verdict", "settle"},
		"disputed": {"assign", "accept", "dispute"},
	}[state]
	for _, s := range steps {
		k := e.key()
		switch s {
		case "assign":
			e.post(tb, "alice", "/assign", `{"matter_id":"`+id+`","solver_id":"bob","solver_kind":"human","conflict_free":true,"idempotency_key":"`+k+`"}`)
		case "accept":
			e.post(tb, "bob", "/accept", `{"matter_id":"`+id+`","idempotency_key":"`+k+`"}`)
		case "verdict":
			e.post(tb, "bob", "/verdict", `{"matter_id":"`+id+`","solver_kind":"human","action_digest":"`+mDigest+`","verdict":{"approve":true},"idempotency_key":"`+k+`"}`)
		case "settle":
			e.post(tb, "alice", "/settle", `{"matter_id":"`+id+`","idempotency_key":"`+k+`"}`)
		case "dispute":
			e.post(tb, "alice", "/dispute", `{"matter_id":"`+id+`","reason":"r","action_digest":"`+mDigest+`","idempotency_key":"`+k+`"}`)
		}
	}
	return id
}

// Every error code of the seed's list, over HTTP, with its status.
func TestMatters_SeedErrorCodes(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	open := func(from, to string) string { return strings.Replace(mOpenBody("K"), from, to, 1) }
	for _, tc := range []struct {
		code, state, as, route, body string
		status                       int
	}{
		{"invalid_risk_class", "", "alice", "/open", open(`"spend"`, `"fun"`), 400},
		{"invalid_schema", "", "alice", "/open", open(`"required":["approve"]`, `"required":[]`), 400},
		{"invalid_action_digest", "", "alice", "/open", open(mDigest, "abc"), 400},
		{"invalid_solver_kind", "open", "alice", "/assign", `{"matter_id":"ID","solver_id":"bob","solver_kind":"robot","conflict_free":true,"idempotency_key":"K"}`, 400},
		{"invalid_qualification", "open", "alice", "/assign", `{"matter_id":"ID","solver_id":"bob","solver_kind":"human","qualification":"` + strings.Repeat("q", 1025) + `","conflict_free":true,"idempotency_key":"K"}`, 400},
		{"solver_conflict", "open", "alice", "/assign", `{"matter_id":"ID","solver_id":"bob","solver_kind":"human","conflict_free":false,"idempotency_key":"K"}`, 409},
		{"solver_already_assigned", "invited", "olga", "/assign", `{"matter_id":"ID","solver_id":"bob","solver_kind":"human","conflict_free":true,"idempotency_key":"K"}`, 409},
		{"solver_not_assigned", "open", "bob", "/accept", `{"matter_id":"ID","idempotency_key":"K"}`, 409},
		{"solver_not_accepting", "accepted", "bob", "/accept", `{"matter_id":"ID","idempotency_key":"K"}`, 409},
		{"solver_not_accepted", "invited", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":{"approve":true},"idempotency_key":"K"}`, 409},
		{"solver_kind_mismatch", "accepted", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"model","action_digest":"` + mDigest + `","verdict":{"approve":true},"idempotency_key":"K"}`, 409},
		{"invalid_verdict", "accepted", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":[true],"idempotency_key":"K"}`, 400},
		{"invalid_action_digest", "accepted", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"human","verdict":{"approve":true},"idempotency_key":"K"}`, 400},
		{"verdict_schema_mismatch", "accepted", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":{"approve":1},"idempotency_key":"K"}`, 422},
		{"matter_not_open", "judged", "bob", "/verdict", `{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":{"approve":true},"idempotency_key":"K"}`, 409},
		{"matter_not_settleable", "accepted", "alice", "/settle", `{"matter_id":"ID","idempotency_key":"K"}`, 409},
		{"matter_not_disputable", "settled", "alice", "/dispute", `{"matter_id":"ID","reason":"r","action_digest":"` + mDigest + `","idempotency_key":"K"}`, 409},
		{"matter_not_found", "judged", "eve", "/settle", `{"matter_id":"ID","idempotency_key":"K"}`, 404},
		{"matter_not_found", "", "alice", "/settle", `{"matter_id":"mat-none","idempotency_key":"K"}`, 404},
	} {
		t.Run(tc.code+"/"+tc.route, func(t *testing.T) {
			body := strings.ReplaceAll(tc.body, `"K"`, `"`+e.key()+`"`)
			if tc.state != "" {
				body = strings.ReplaceAll(body, `"ID"`, `"`+e.at(t, tc.state)+`"`)
			}
			wantStatus(t, e.do(t, tc.as, "POST", mBase+tc.route, body, sigOpt{}), tc.status, tc.code)
		})
	}
	t.Run("matter_not_found/get", func(t *testing.T) {
		id := e.at(t, "open")
		wantStatus(t, e.do(t, "eve", "GET", mBase+"/"+id, "", sigOpt{}), 404, "matter_not_found")
		wantStatus(t, e.do(t, "eve", "GET", mBase+"/"+id+"/receipts", "", sigOpt{}), 404, "matter_not_found")
	})
}

// Replay and conflict over HTTP for every route's scope: the same key and
// body answers the stored bytes with Idempotent-Replayed; the same key
// with another body is 409 idempotency_conflict.
func TestMatters_Idempotency(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	for _, tc := range []struct {
		route, as, state string
		body, other      string // with ID, ID2 and K to fill in
	}{
		{"/open", "alice", "", mOpenBody("K"), strings.Replace(mOpenBody("K"), "42", "43", 1)},
		{"/assign", "alice", "open",
			`{"matter_id":"ID","solver_id":"bob","solver_kind":"human","conflict_free":true,"idempotency_key":"K"}`,
			`{"matter_id":"ID2","solver_id":"bob","solver_kind":"human","conflict_free":true,"idempotency_key":"K"}`},
		{"/accept", "bob", "invited", `{"matter_id":"ID","idempotency_key":"K"}`, `{"matter_id":"ID2","idempotency_key":"K"}`},
		{"/verdict", "bob", "accepted",
			`{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":{"approve":true},"idempotency_key":"K"}`,
			`{"matter_id":"ID","solver_kind":"human","action_digest":"` + mDigest + `","verdict":{"approve":false},"idempotency_key":"K"}`},
		{"/settle", "alice", "judged", `{"matter_id":"ID","idempotency_key":"K"}`, `{"matter_id":"ID2","idempotency_key":"K"}`},
		{"/dispute", "alice", "judged",
			`{"matter_id":"ID","reason":"r","action_digest":"` + mDigest + `","idempotency_key":"K"}`,
			`{"matter_id":"ID","reason":"other","action_digest":"` + mDigest + `","idempotency_key":"K"}`},
		{"/tick", "olga", "", `{"idempotency_key":"K"}`, ""},
	} {
		t.Run(tc.route, func(t *testing.T) {
			k := e.key()
			fill := func(s string) string {
				s = strings.ReplaceAll(s, `"K"`, `"`+k+`"`)
				if tc.state != "" {
					s = strings.ReplaceAll(s, `"ID"`, `"`+e.at(t, tc.state)+`"`)
					s = strings.ReplaceAll(s, `"ID2"`, `"`+e.at(t, tc.state)+`"`)
				}
				return s
			}
			body := fill(tc.body)
			r1 := e.do(t, tc.as, "POST", mBase+tc.route, body, sigOpt{})
			if r1.status/100 != 2 || r1.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %s", r1.status, r1.body)
			}
			r2 := e.do(t, tc.as, "POST", mBase+tc.route, body, sigOpt{})
			if r2.status != r1.status || string(r2.body) != string(r1.body) || r2.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d %s", r2.status, r2.body)
			}
			if tc.other == "" {
				// tick's body is only the key, and a key lives in the
				// scope of its actor: another operator reusing it makes
				// its own tick, neither a replay nor a conflict
				r := e.do(t, "oscar", "POST", mBase+tc.route, body, sigOpt{})
				if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("another operator's tick: %d %s", r.status, r.body)
				}
				return
			}
			other := strings.ReplaceAll(fill(tc.other), `"ID"`, `"`+idOf(t, body)+`"`)
			wantStatus(t, e.do(t, tc.as, "POST", mBase+tc.route, other, sigOpt{}), 409, "idempotency_conflict")
		})
	}
}

// idOf reads matter_id from a request body ("" when none).
func idOf(tb testing.TB, body string) string {
	tb.Helper()
	_, rest, ok := strings.Cut(body, `"matter_id":"`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// The seed bounds idempotency_key at 256 bytes, in the body or the
// Idempotency-Key header (the escrow court's routes keep 255).
func TestMatters_IdempotencyKeyHeader(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	withHeader := func(key, body string) resp {
		return e.do(t, "alice", "POST", mBase+"/open", body, sigOpt{header: map[string]string{"Idempotency-Key": key}})
	}
	noKey := strings.Replace(mOpenBody("x"), `"idempotency_key":"x",`, "", 1)
	wantStatus(t, withHeader(strings.Repeat("k", 256), noKey), 201, "")
	wantStatus(t, withHeader(strings.Repeat("k", 257), noKey), 400, "invalid_idempotency_key")
	wantStatus(t, e.do(t, "alice", "POST", mBase+"/open", mOpenBody(strings.Repeat("b", 256)), sigOpt{}), 201, "")
	wantStatus(t, e.do(t, "alice", "POST", mBase+"/open", mOpenBody(strings.Repeat("b", 257)), sigOpt{}), 400, "invalid_idempotency_key")
	wantStatus(t, withHeader("one", mOpenBody("two")), 400, "invalid_idempotency_key")
	// the header and the body key are the same key
	r1 := withHeader("same", noKey)
	r2 := e.do(t, "alice", "POST", mBase+"/open", mOpenBody("same"), sigOpt{})
	if r1.status != 201 || string(r1.body) != string(r2.body) || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%d %s / %s", r1.status, r1.body, r2.body)
	}
}

// A bare GET of a matters POST route is a usage note, with no signature;
// the rest still wants one. /health and /agentfacts say where the routes
// are and how to sign.
func TestMatters_Discovery(t *testing.T) {
	e := mustMattersApp(t, api.MattersSigned)
	for _, route := range []string{"/open", "/assign", "/accept", "/verdict", "/settle", "/dispute", "/tick"} {
		r := e.do(t, "", "GET", mBase+route, "", sigOpt{})
		wantStatus(t, r, 200, "")
		m := r.json(t)
		if m["method"] != "POST" || m["path"] != mBase+route || m["docs"] != "/skill.md" {
			t.Fatalf("%s: %s", route, r.body)
		}
	}
	wantStatus(t, e.do(t, "", "GET", mBase, "", sigOpt{}), 401, "signature_missing")
	wantStatus(t, e.do(t, "", "GET", mBase+"/mat-x", "", sigOpt{}), 401, "signature_missing")
	for _, path := range []string{"/health", "/agentfacts"} {
		r := e.do(t, "", "GET", path, "", sigOpt{})
		wantStatus(t, r, 200, "")
		jm, _ := r.json(t)["judgment_matters"].(map[string]any)
		if jm == nil || jm["auth"] != "signed" || !strings.HasSuffix(jm["endpoint"].(string), mBase) || !strings.Contains(jm["signature"].(string), "RFC 9421") {
			t.Fatalf("%s: %s", path, r.body)
		}
	}
	o := mustMattersApp(t, api.MattersOpen)
	if jm := o.do(t, "", "GET", "/health", "", sigOpt{}).json(t)["judgment_matters"].(map[string]any); jm["auth"] != "open" || jm["signature"] != nil {
		t.Fatalf("open mode: %v", jm)
	}
	res, err := mustApp(t).Test(httptest.NewRequest("GET", "/health", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), `"judgment_matters":"off"`) {
		t.Fatalf("without matters: %s", b)
	}
}
