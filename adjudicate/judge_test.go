package adjudicate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/wasm"
)

// runnerDouble answers with outcomes by checker hash and counts runs.
type runnerDouble struct {
	kinds map[string]wasm.Kind
	err   error
	runs  int
	input wasm.Input
}

func (r *runnerDouble) Run(ctx context.Context, ref checkers.Ref, in wasm.Input) (wasm.Outcome, error) {
	r.runs++
	r.input = in
	if r.err != nil {
		return wasm.Outcome{}, r.err
	}
	k := r.kinds[ref.SHA256]
	return wasm.Outcome{Kind: k, Pass: k == wasm.KindPass, WallNS: 12345, CheckerSHA256: ref.SHA256}, nil
}

type jurorDouble struct {
	pass  bool
	err   error
	asked []SemanticQuestion
}

func (j *jurorDouble) Vote(ctx context.Context, q SemanticQuestion) (Vote, error) {
	j.asked = append(j.asked, q)
	if j.err != nil {
		return Vote{}, j.err
	}
	return Vote{Pass: j.pass, Reason: "double"}, nil
}

var (
	_ Runner = (*runnerDouble)(nil)
	_ Juror  = (*jurorDouble)(nil)
	_ Runner = (*checkers.Runner)(nil)
)

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("b", 64)
)

func judgeCriteria(extra string) []byte {
	return []byte(`{"assertions":[{"path":"rows","op":"gte","value":100}` + extra + `],
		"checkers":[{"sha256":"` + hashA + `"},{"sha256":"` + hashB + `"}]}`)
}

func TestJudge(t *testing.T) {
	semantic := `,{"path":"summary","semantic":true,"description":"faithful"}`
	tests := []struct {
		name        string
		criteria    []byte
		deliverable string
		runner      *runnerDouble
		juror       *jurorDouble
		verdict     string
		tier        string
		runs, asked int
	}{
		{"OK", judgeCriteria(""), `{"rows":100}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass, hashB: wasm.KindPass}}, nil,
			VerdictRelease, TierZero, 2, 0},
		{"ErrAssertionRefundsBeforeCheckers", judgeCriteria(semantic), `{"rows":99,"summary":"s"}`,
			&runnerDouble{}, &jurorDouble{pass: true},
			VerdictRefund, TierZero, 0, 0},
		{"ErrCheckerStopsAtFirstFailure", judgeCriteria(semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindTrap, hashB: wasm.KindPass}}, &jurorDouble{pass: true},
			VerdictRefund, TierZero, 1, 0},
		{"ErrTimeoutEscalates", judgeCriteria(semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindTimeout, hashB: wasm.KindPass}}, &jurorDouble{pass: true},
			VerdictEscalated, TierZero, 2, 0},
		{"ErrTimeoutThenFailRefunds", judgeCriteria(""), `{"rows":100}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindTimeout, hashB: wasm.KindFail}}, nil,
			VerdictRefund, TierZero, 2, 0},
		{"ErrRunnerErrorEscalates", judgeCriteria(""), `{"rows":100}`,
			&runnerDouble{err: checkers.ErrNotFound}, nil,
			VerdictEscalated, TierZero, 2, 0},
		{"ErrNoRunnerEscalates", judgeCriteria(""), `{"rows":100}`,
			nil, nil, VerdictEscalated, TierZero, 0, 0},
		{"JuryRelease", judgeCriteria(semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass, hashB: wasm.KindPass}}, &jurorDouble{pass: true},
			VerdictRelease, TierJury, 2, 1},
		{"ErrJuryRefund", judgeCriteria(semantic + semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass, hashB: wasm.KindPass}}, &jurorDouble{pass: false},
			VerdictRefund, TierJury, 2, 1},
		{"ErrJurorErrorEscalates", judgeCriteria(semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass, hashB: wasm.KindPass}}, &jurorDouble{err: errors.New("model down")},
			VerdictEscalated, TierJury, 2, 1},
		{"ErrNoJurorEscalates", judgeCriteria(semantic), `{"rows":100,"summary":"s"}`,
			&runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass, hashB: wasm.KindPass}}, nil,
			VerdictEscalated, TierJury, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.criteria)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseDeliverable([]byte(tc.deliverable))
			if err != nil {
				t.Fatal(err)
			}
			var runner Runner
			if tc.runner != nil {
				runner = tc.runner
			}
			var juror Juror
			if tc.juror != nil {
				juror = tc.juror
			}
			r, rec, err := Judge(context.Background(), p, d, runner, juror)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.verdict || r.Tier != tc.tier {
				t.Errorf("%s/%s, want %s/%s: %s", r.Verdict, r.Tier, tc.verdict, tc.tier, r.JSON())
			}
			if tc.runner != nil && tc.runner.runs != tc.runs {
				t.Errorf("%d checker runs, want %d", tc.runner.runs, tc.runs)
			}
			if tc.juror != nil && len(tc.juror.asked) != tc.asked {
				t.Errorf("%d questions, want %d", len(tc.juror.asked), tc.asked)
			}
			// The record replays to the same bytes, with no runner or juror.
			if again := p.Decide(d, rec).JSON(); string(again) != string(r.JSON()) {
				t.Errorf("replay differs:\n%s\n%s", again, r.JSON())
			}
			if strings.Contains(string(r.JSON()), "12345") {
				t.Error("wall time leaked into the result")
			}
		})
	}
}

func TestJudge_Input(t *testing.T) {
	p, err := Compile([]byte(`{"checkers":[{"sha256":"` + hashA + `"}],"assertions":[{"semantic":true,"path":"s","description":"d"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ParseDeliverable([]byte(`{ "s" : "text" }`))
	r := &runnerDouble{kinds: map[string]wasm.Kind{hashA: wasm.KindPass}}
	j := &jurorDouble{pass: true}
	if _, _, err := Judge(context.Background(), p, d, r, j); err != nil {
		t.Fatal(err)
	}
	if string(r.input.Artifact) != `{"s":"text"}` || string(r.input.Criteria) != string(p.Canonical()) {
		t.Errorf("input %q %q", r.input.Artifact, r.input.Criteria)
	}
	q := j.asked[0]
	if !q.Found || string(q.Excerpt) != `"text"` || q.Path != "s" || q.Description != "d" {
		t.Errorf("question %+v", q)
	}
}

func TestJudge_ErrContext(t *testing.T) {
	p, _ := Compile(judgeCriteria(""))
	d, _ := ParseDeliverable([]byte(`{"rows":100}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Judge(ctx, p, d, &runnerDouble{err: context.Canceled}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

// panelDouble answers every question with no majority, as a jury panel
// does when its members split.
type panelDouble struct{ jurors []JurorVote }

func (p panelDouble) Vote(ctx context.Context, q SemanticQuestion) (Vote, error) {
	return Vote{}, &NoMajorityError{Reason: "no majority of 2 jurors: pass 1, fail 1", Jurors: p.jurors}
}

func TestJudge_Jury(t *testing.T) {
	p, err := Compile([]byte(`{"assertions":[{"path":"s","semantic":true,"description":"d"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ParseDeliverable([]byte(`{"s":"text"}`))

	t.Run("ErrNoJury", func(t *testing.T) {
		r, rec, err := Judge(context.Background(), p, d, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != VerdictEscalated || len(rec.Answers) != 1 || rec.Answers[0].Error != NoJury ||
			!strings.Contains(r.Checks[0].Detail, "no jury is configured") {
			t.Errorf("%s", r.JSON())
		}
	})
	t.Run("ErrNoMajorityRecordsJurors", func(t *testing.T) {
		jurors := []JurorVote{
			{Model: "a", Host: "h", Vote: JurorPass, PromptSHA256: "p", LatencyMS: 3},
			{Model: "b", Host: "h", Vote: JurorFail, PromptSHA256: "p", LatencyMS: 4},
		}
		r, rec, err := Judge(context.Background(), p, d, nil, panelDouble{jurors})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != VerdictEscalated || len(rec.Answers[0].Jurors) != 2 || len(r.Checks[0].Jurors) != 2 {
			t.Fatalf("%s", r.JSON())
		}
		if again := p.Decide(d, rec).JSON(); string(again) != string(r.JSON()) {
			t.Errorf("replay differs:\n%s\n%s", again, r.JSON())
		}
	})
}
