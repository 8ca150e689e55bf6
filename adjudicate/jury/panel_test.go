package jury

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
)

func newPanel(tb testing.TB, f *fakeOpenAI, models ...string) *Panel {
	tb.Helper()
	p, err := New(Config{BaseURL: f.BaseURL(), APIKey: "sk-test", Models: models,
		Timeout: 500 * time.Millisecond, Backoff: 5 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func question() adjudicate.SemanticQuestion {
	return adjudicate.SemanticQuestion{
		Spec:        json.RawMessage(`{"description":"a faithful summary","path":"summary","semantic":true}`),
		Description: "a faithful summary", Path: "summary",
		Found: true, Excerpt: json.RawMessage(`"rows grew by 4%"`),
		Artifact: []byte(`{"source":"rows grew by 4% in May","summary":"rows grew by 4%"}`),
	}
}

func TestPanel_Vote(t *testing.T) {
	pass := answerWith("pass", "faithful")
	fail := answerWith("fail", "contradicts the source")
	abstain := answerWith("abstain", "cannot tell")
	slow := func(int, string) reply {
		return reply{wait: 5 * time.Second, content: `{"vote":"pass","rationale":"late"}`}
	}
	tooMany := func(n int, _ string) reply {
		if n == 0 {
			return reply{status: http.StatusTooManyRequests}
		}
		return pass(n, "")
	}
	unavailable := func(n int, _ string) reply {
		if n < 2 {
			return reply{status: http.StatusServiceUnavailable}
		}
		return fail(n, "")
	}
	for _, tc := range []struct {
		name     string
		scripts  map[string]script
		models   []string
		decided  bool // a majority was reached
		pass     bool
		votes    []string // each juror's vote, "" for none
		errLike  []string // each juror's error contains this ("" for no error)
		requests int
	}{
		{"OKUnanimousPass", map[string]script{"a": pass, "b": pass, "c": pass}, []string{"a", "b", "c"},
			true, true, []string{"pass", "pass", "pass"}, []string{"", "", ""}, 3},
		{"OKUnanimousFail", map[string]script{"a": fail, "b": fail, "c": fail}, []string{"a", "b", "c"},
			true, false, []string{"fail", "fail", "fail"}, []string{"", "", ""}, 3},
		{"OKSplitTwoOne", map[string]script{"a": pass, "b": fail, "c": pass}, []string{"a", "b", "c"},
			true, true, []string{"pass", "fail", "pass"}, []string{"", "", ""}, 3},
		{"OKSplitOneTwo", map[string]script{"a": pass, "b": fail}, []string{"a", "b", "b"},
			true, false, []string{"pass", "fail", "fail"}, []string{"", "", ""}, 3},
		{"ErrTieWithAbstention", map[string]script{"a": pass, "b": fail, "c": abstain}, []string{"a", "b", "c"},
			false, false, []string{"pass", "fail", "abstain"}, []string{"", "", ""}, 3},
		{"ErrEvenTie", map[string]script{"a": pass, "b": fail}, []string{"a", "a", "b", "b"},
			false, false, []string{"pass", "pass", "fail", "fail"}, []string{"", "", "", ""}, 4},
		{"ErrAbstentionsAreNoMajority", map[string]script{"a": pass, "c": abstain}, []string{"a", "c", "c"},
			false, false, []string{"pass", "abstain", "abstain"}, []string{"", "", ""}, 3},
		{"ErrGarbageJuror", map[string]script{"a": pass, "b": fail, "g": raw("Sure! The vote is pass.")}, []string{"a", "b", "g"},
			false, false, []string{"pass", "fail", ""}, []string{"", "", "unparsable answer"}, 3},
		{"OKGarbageOutvoted", map[string]script{"a": pass, "g": raw(`{"vote":"pass","rationale":"x","confidence":1}`)}, []string{"a", "a", "g"},
			true, true, []string{"pass", "pass", ""}, []string{"", "", `unknown member "confidence"`}, 3},
		{"ErrTimeoutJuror", map[string]script{"a": pass, "b": fail, "s": slow}, []string{"a", "s", "b"},
			false, false, []string{"pass", "", "fail"}, []string{"", "timed out after 500ms", ""}, 3},
		{"OKTimeoutOutvoted", map[string]script{"a": pass, "s": slow}, []string{"a", "s", "a"},
			true, true, []string{"pass", "", "pass"}, []string{"", "timed out", ""}, 3},
		{"OK429ThenSuccess", map[string]script{"a": pass, "r": tooMany}, []string{"a", "r", "a"},
			true, true, []string{"pass", "pass", "pass"}, []string{"", "", ""}, 4},
		{"OK503TwiceThenSuccess", map[string]script{"b": fail, "u": unavailable}, []string{"u", "b", "b"},
			true, false, []string{"fail", "fail", "fail"}, []string{"", "", ""}, 5},
		{"ErrUnknownModelIsNoVote", map[string]script{"a": pass}, []string{"a", "missing"},
			false, false, []string{"pass", ""}, []string{"", "not found"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOpenAI(t, tc.scripts)
			p := newPanel(t, f, tc.models...)
			v, err := p.Vote(context.Background(), question())
			jurors := v.Jurors
			var nm *adjudicate.NoMajorityError
			switch {
			case tc.decided && err != nil:
				t.Fatalf("err %v, want a decision", err)
			case tc.decided && v.Pass != tc.pass:
				t.Fatalf("pass %v, want %v: %s", v.Pass, tc.pass, v.Reason)
			case !tc.decided && !errors.As(err, &nm):
				t.Fatalf("err %v (vote %+v), want *NoMajorityError", err, v)
			case !tc.decided:
				jurors = nm.Jurors
				if !strings.HasPrefix(nm.Error(), "no majority of ") {
					t.Errorf("error %q", nm.Error())
				}
			}
			if len(jurors) != len(tc.models) {
				t.Fatalf("%d jurors, want %d", len(jurors), len(tc.models))
			}
			reqs := f.requests()
			for i, j := range jurors {
				if j.Model != tc.models[i] || j.Host != strings.TrimPrefix(f.URL, "http://") {
					t.Errorf("juror %d: model %q host %q", i, j.Model, j.Host)
				}
				if j.Vote != tc.votes[i] {
					t.Errorf("juror %d: vote %q, want %q (%s)", i, j.Vote, tc.votes[i], j.Error)
				}
				if (tc.errLike[i] == "") != (j.Error == "") || !strings.Contains(j.Error, tc.errLike[i]) {
					t.Errorf("juror %d: error %q, want %q", i, j.Error, tc.errLike[i])
				}
				if len(j.PromptSHA256) != 64 || j.PromptSHA256 != jurors[0].PromptSHA256 {
					t.Errorf("juror %d: prompt hash %q", i, j.PromptSHA256)
				}
				if j.Vote != "" && len(j.AnswerSHA256) != 64 {
					t.Errorf("juror %d: answer hash %q", i, j.AnswerSHA256)
				}
			}
			if len(reqs) != tc.requests {
				t.Errorf("%d requests, want %d", len(reqs), tc.requests)
			}
			for _, r := range reqs {
				checkRequest(t, r)
			}
		})
	}
}

// checkRequest: every request really carries temperature 0, asks for the
// JSON-schema response format, and frames the data.
func checkRequest(t *testing.T, r seenRequest) {
	t.Helper()
	if string(r.Temperature) != "0" {
		t.Errorf("temperature %q, want 0 in the body", r.Temperature)
	}
	if r.Format != "json_schema" {
		t.Errorf("response_format.type %q", r.Format)
	}
	var js struct {
		Name   string          `json:"name"`
		Strict bool            `json:"strict"`
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(r.Schema, &js); err != nil || js.Name != "juror_vote" || !js.Strict ||
		!bytes.Contains(js.Schema, []byte(`"enum":["pass","fail","abstain"]`)) {
		t.Errorf("json_schema %s (%v)", r.Schema, err)
	}
	if r.Auth != "Bearer sk-test" {
		t.Errorf("authorization %q", r.Auth)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" ||
		!strings.Contains(r.Messages[0].Content, "untrusted data") || !strings.Contains(r.Messages[1].Content, "rows grew by 4%") {
		t.Errorf("messages %+v", r.Messages)
	}
}

func TestPanel_Vote_jsonModeFallback(t *testing.T) {
	// A server that rejects json_schema with a 400 and takes json_object.
	picky := func(_ int, format string) reply {
		if format != "json_object" {
			return reply{status: http.StatusBadRequest}
		}
		return reply{content: `{"vote":"pass","rationale":"fine"}`}
	}
	f := newFakeOpenAI(t, map[string]script{"m": picky})
	p := newPanel(t, f, "m")
	for range 2 {
		if v, err := p.Vote(context.Background(), question()); err != nil || !v.Pass {
			t.Fatalf("vote %+v err %v", v, err)
		}
	}
	var formats []string
	for _, r := range f.requests() {
		formats = append(formats, r.Format)
		if string(r.Temperature) != "0" {
			t.Errorf("temperature %q", r.Temperature)
		}
	}
	// The first vote learns; the second asks in JSON mode straight away.
	if got := strings.Join(formats, ","); got != "json_schema,json_object,json_object" {
		t.Errorf("formats %s", got)
	}
}

func TestPanel_Vote_ErrRejectedTwice(t *testing.T) {
	f := newFakeOpenAI(t, map[string]script{"m": func(int, string) reply { return reply{status: http.StatusBadRequest} }})
	p := newPanel(t, f, "m")
	_, err := p.Vote(context.Background(), question())
	var nm *adjudicate.NoMajorityError
	if !errors.As(err, &nm) || !strings.Contains(nm.Jurors[0].Error, "400") || len(f.requests()) != 2 {
		t.Errorf("err %v, %d requests", err, len(f.requests()))
	}
}

func TestPanel_Vote_ErrRetriesBoundedByTimeout(t *testing.T) {
	always := func(int, string) reply { return reply{status: http.StatusTooManyRequests} }
	f := newFakeOpenAI(t, map[string]script{"m": always})
	p, err := New(Config{BaseURL: f.BaseURL(), Models: []string{"m"}, Timeout: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Vote(context.Background(), question())
	var nm *adjudicate.NoMajorityError
	if !errors.As(err, &nm) || !strings.Contains(nm.Jurors[0].Error, "429") {
		t.Fatalf("err %v", err)
	}
	// 20+40+80 ms fit in 300 ms, 160 more would not: four attempts.
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d attempts, want 4", n)
	}
	if el := time.Since(start); el > 300*time.Millisecond+200*time.Millisecond {
		t.Errorf("took %s", el)
	}
}

func TestPanel_Vote_ErrContext(t *testing.T) {
	slow := func(int, string) reply { return reply{wait: 5 * time.Second} }
	f := newFakeOpenAI(t, map[string]script{"s": slow})
	p := newPanel(t, f, "s", "s")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Vote(ctx, question()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's", err)
	}
}

func TestPanel_Vote_noAPIKey(t *testing.T) {
	f := newFakeOpenAI(t, map[string]script{"m": answerWith("pass", "ok")})
	p, err := New(Config{BaseURL: f.BaseURL(), Models: []string{"m"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Vote(context.Background(), question()); err != nil {
		t.Fatal(err)
	}
	if a := f.requests()[0].Auth; a != "" {
		t.Errorf("authorization %q, want none", a)
	}
}

func TestPanel_Vote_rationaleBounded(t *testing.T) {
	long := strings.Repeat("é", MaxRationaleBytes)
	f := newFakeOpenAI(t, map[string]script{"m": answerWith("pass", long)})
	p := newPanel(t, f, "m")
	v, err := p.Vote(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Jurors[0].Rationale; len(r) > MaxRationaleBytes+len("…") || !strings.HasSuffix(r, "…") {
		t.Errorf("rationale of %d bytes", len(r))
	}
}
