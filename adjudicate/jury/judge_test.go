package jury_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/adjudicate/jury"
)

// countingServer answers every chat completion with vote and counts them.
func countingServer(tb testing.TB, vote string) (*httptest.Server, *atomic.Int64) {
	tb.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		content := fmt.Sprintf(`{"vote":%q,"rationale":"scripted"}`, vote)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	}))
	tb.Cleanup(srv.Close)
	return srv, &n
}

func TestJudge_withPanel(t *testing.T) {
	criteria := []byte(`{"assertions":[{"path":"rows","op":"gte","value":100},
		{"path":"summary","semantic":true,"description":"a faithful summary"}]}`)
	p, err := adjudicate.Compile(criteria)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, deliverable, vote string
		verdict                 string
		requests                int64
	}{
		// A deterministic failure decides before any juror is paid for.
		{"ErrAssertionNeverAsksJury", `{"rows":99,"summary":"s"}`, "pass", adjudicate.VerdictRefund, 0},
		{"OKRelease", `{"rows":100,"summary":"s"}`, "pass", adjudicate.VerdictRelease, 3},
		{"ErrRefund", `{"rows":100,"summary":"s"}`, "fail", adjudicate.VerdictRefund, 3},
		{"ErrAbstainEscalates", `{"rows":100,"summary":"s"}`, "abstain", adjudicate.VerdictEscalated, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := countingServer(t, tc.vote)
			panel, err := jury.New(jury.Config{BaseURL: srv.URL + "/v1", Models: []string{"a", "b", "a"}})
			if err != nil {
				t.Fatal(err)
			}
			d, err := adjudicate.ParseDeliverable([]byte(tc.deliverable))
			if err != nil {
				t.Fatal(err)
			}
			r, rec, err := adjudicate.Judge(context.Background(), p, d, nil, panel)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.verdict || n.Load() != tc.requests {
				t.Fatalf("%s with %d requests, want %s with %d: %s", r.Verdict, n.Load(), tc.verdict, tc.requests, r.JSON())
			}
			// The record replays to the same bytes with no jury at all.
			if again := p.Decide(d, rec).JSON(); string(again) != string(r.JSON()) {
				t.Errorf("replay differs:\n%s\n%s", again, r.JSON())
			}
			if tc.requests > 0 {
				sem := r.Checks[1]
				if len(sem.Jurors) != 3 || sem.Jurors[1].Model != "b" || sem.Jurors[1].Vote != tc.vote {
					t.Errorf("semantic check %+v", sem)
				}
				if tc.verdict != adjudicate.VerdictEscalated && !strings.HasPrefix(sem.Detail, "jury -> ") {
					t.Errorf("detail %q", sem.Detail)
				}
			}
		})
	}
}
