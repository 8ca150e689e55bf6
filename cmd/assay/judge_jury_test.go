package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeJury is an OpenAI-compatible chat-completions server whose models
// answer with the vote named after them ("pass-1" votes pass).
type fakeJury struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
}

func newFakeJury(tb testing.TB) *fakeJury {
	tb.Helper()
	f := &fakeJury{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		var model string
		_ = json.Unmarshal(body["model"], &model)
		vote, _, _ := strings.Cut(model, "-")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{
				"role": "assistant", "content": fmt.Sprintf(`{"vote":%q,"rationale":"%s says so"}`, vote, model)}}}})
	}))
	tb.Cleanup(f.Close)
	return f
}

func (f *fakeJury) requests() []map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), f.bodies...)
}

func TestJudge_jury(t *testing.T) {
	criteria := writeFile(t, "criteria.json", `{"assertions":[{"path":"rows","op":"gte","value":2},
		{"path":"summary","semantic":true,"description":"a faithful summary"}]}`)
	good := writeFile(t, "good.json", `{"rows":2,"summary":"two rows"}`)
	bad := writeFile(t, "bad.json", `{"rows":1,"summary":"two rows"}`)

	type result struct {
		Verdict string
		Checks  []struct {
			Detail string
			Jurors []struct{ Model, Vote string }
		}
	}
	for _, tc := range []struct {
		name        string
		env         map[string]string // over a fake server's base URL
		flags       []string
		deliverable string
		code        int
		verdict     string
		requests    int
		want        string
	}{
		{"OKEnv", map[string]string{"ASSAY_JURY_MODELS": "pass-a,pass-b,fail-c"}, nil, good, exitOK, "release", 3, "2 of 3 jurors voted pass"},
		{"ErrEnvRefund", map[string]string{"ASSAY_JURY_MODELS": "fail-a,fail-a,pass-b"}, nil, good, exitNo, "refund", 3, "2 of 3 jurors voted fail"},
		{"ErrEnvNoMajority", map[string]string{"ASSAY_JURY_MODELS": "pass-a,fail-b,abstain-c"}, nil, good, exitEscalated, "escalated", 3, "no majority of 3 jurors"},
		{"OKFlagsOverEnv", map[string]string{"ASSAY_JURY_MODELS": "fail-a", "ASSAY_JURY_BASE_URL": "http://127.0.0.1:1/v1"},
			[]string{"--jury-models", "pass-a", "--jury-timeout", "10s", "--jury-base-url", "FAKE"}, good, exitOK, "release", 1, "1 of 1 jurors voted pass"},
		{"ErrDeterministicFailureAsksNoJuror", map[string]string{"ASSAY_JURY_MODELS": "pass-a,pass-b,pass-c"}, nil, bad, exitNo, "refund", 0,
			"not asked: the jury sits only when every deterministic check passed"},
		{"ErrNoJury", map[string]string{"ASSAY_JURY_BASE_URL": ""}, nil, good, exitEscalated, "escalated", 0, "no jury is configured"},
		{"ErrBadTimeout", map[string]string{"ASSAY_JURY_MODELS": "pass-a", "ASSAY_JURY_TIMEOUT": "soon"}, nil, good, exitUsage, "", 0, "ASSAY_JURY_TIMEOUT"},
		{"ErrModelsWithoutURL", map[string]string{"ASSAY_JURY_BASE_URL": "", "ASSAY_JURY_MODELS": "pass-a"}, nil, good, exitUsage, "", 0, "no base URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeJury(t)
			t.Setenv("ASSAY_JURY_BASE_URL", f.URL+"/v1")
			t.Setenv("ASSAY_JURY_API_KEY", "")
			t.Setenv("ASSAY_JURY_MODELS", "")
			t.Setenv("ASSAY_JURY_TIMEOUT", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := []string{"judge", "--json", "--criteria", criteria, "--deliverable", tc.deliverable}
			for _, fl := range tc.flags {
				args = append(args, strings.ReplaceAll(fl, "FAKE", f.URL+"/v1"))
			}
			code, stdout, stderr := runAssay(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, stdout, stderr)
			}
			reqs := f.requests()
			if len(reqs) != tc.requests {
				t.Errorf("%d requests to the jury, want %d", len(reqs), tc.requests)
			}
			for _, r := range reqs {
				if string(r["temperature"]) != "0" || !strings.Contains(string(r["response_format"]), `"type":"json_schema"`) {
					t.Errorf("request temperature %s response_format %s", r["temperature"], r["response_format"])
				}
			}
			if tc.verdict == "" {
				return
			}
			var res result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Verdict != tc.verdict {
				t.Fatalf("verdict %q (%v), want %q", res.Verdict, err, tc.verdict)
			}
			if jurors := res.Checks[1].Jurors; len(jurors) != tc.requests {
				t.Errorf("%d jurors in the check, want %d", len(jurors), tc.requests)
			}
		})
	}
}

func TestJudge_juryText(t *testing.T) {
	f := newFakeJury(t)
	t.Setenv("ASSAY_JURY_BASE_URL", f.URL+"/v1")
	t.Setenv("ASSAY_JURY_MODELS", "pass-a,pass-b")
	crit := writeFile(t, "criteria.json", `{"assertions":[{"semantic":true,"description":"polite"}]}`)
	deliv := writeFile(t, "deliverable.json", `"Dear customer, thank you."`)
	code, stdout, stderr := runAssay(t, "judge", "--criteria", crit, "--deliverable", deliv)
	if code != exitOK || !strings.Contains(stdout, "verdict: release (tier1-jury)") ||
		!strings.Contains(stdout, "juror pass-b@"+strings.TrimPrefix(f.URL, "http://")+": pass (") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
