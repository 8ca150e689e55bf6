package adjudicate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/wasm"
)

// Runner runs one checker in the sandbox. checkers.Runner implements it.
type Runner interface {
	// Run runs the checker ref names on in.
	//
	// # Notes
	//
	// The outcome must be a pure function of the checker, its limits and
	// in (apart from wall time): Judge records it and Decide replays it.
	//
	// # Errors
	//
	// An error when the checker could not be run at all (not found, the
	// sandbox failed). Judge records it and the case is escalated; a
	// cancelled context is returned instead.
	Run(ctx context.Context, ref checkers.Ref, in wasm.Input) (wasm.Outcome, error)
}

// Juror answers semantic questions: the LLM jury of adjudicate/jury, or a
// person.
type Juror interface {
	// Vote decides one semantic criterion.
	//
	// # Notes
	//
	// A juror is nondeterministic: Judge records its answer in the Record,
	// and Decide reads only the record, never the juror.
	//
	// # Errors
	//
	// An error when no answer could be had; Judge records it and the case
	// is escalated. A panel that asked its members but reached no majority
	// returns a *NoMajorityError, whose Jurors Judge records too.
	Vote(ctx context.Context, q SemanticQuestion) (Vote, error)
}

// SemanticQuestion is what a juror is asked about one semantic criterion.
type SemanticQuestion struct {
	// Index is the criterion's position among the semantic criteria, the
	// index of its answer in Record.Answers.
	Index int `json:"index"`
	// Assertion is its position in criteria.assertions.
	Assertion int `json:"assertion"`
	// Spec is the criterion as written, in canonical JSON.
	Spec json.RawMessage `json:"spec"`
	// Description is the criterion in plain words.
	Description string `json:"description,omitempty"`
	// Path is the criterion's path into the deliverable, "" for all of it.
	Path string `json:"path,omitempty"`
	// Found reports whether Path resolved; Excerpt is the JSON found there.
	Found   bool            `json:"found"`
	Excerpt json.RawMessage `json:"excerpt,omitempty"`
	// Artifact is the whole deliverable as a checker receives it
	// (Deliverable.Artifact), unbounded and read only: a juror that shows
	// it to a model cuts it short first.
	Artifact []byte `json:"-"`
}

// NoJury is the recorded error of every semantic criterion when Judge is
// given no juror.
const NoJury = "no jury is configured"

// Questions returns the semantic questions of the plan about d, in order.
func (p *Plan) Questions(d *Deliverable) []SemanticQuestion {
	var qs []SemanticQuestion
	for i := range p.checks {
		pc := &p.checks[i]
		if pc.kind != KindSemantic {
			continue
		}
		q := SemanticQuestion{
			Index: pc.sm.index, Assertion: pc.sm.assertion, Spec: pc.spec,
			Description: pc.sm.description, Path: pc.sm.path.text,
			Artifact: d.artifact,
		}
		if v, missing := pc.sm.path.resolve(d.value); missing == "" {
			if b, err := marshalNoEscape(v); err == nil {
				q.Found, q.Excerpt = true, b
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// Judge decides d against p, running what the plan needs in order and
// stopping as soon as the case is decided: tier-0 checks first, within the
// plan's budget, and at most MaxTier0Slots decisions at once in the
// process; checkers only when those passed, one at a time, stopping at the
// first that fails; the juror only when every deterministic check passed
// and semantic criteria remain, stopping at the first failing vote. runner
// and juror may be nil: checkers then do not run, and semantic criteria
// are recorded as unanswered with the error NoJury; the case is escalated.
//
// It returns the result and the record it was decided from:
// p.Decide(d, rec) gives the same result again, byte for byte.
//
// # Errors
//
// Only the context's error when ctx ends while the decision waits for its
// turn at tier 0 or during a run; a checker or juror failure is recorded,
// not returned.
func Judge(ctx context.Context, p *Plan, d *Deliverable, runner Runner, juror Juror) (*Result, Record, error) {
	var rec Record
	if err := tier0Gate.Acquire(ctx, 1); err != nil {
		return nil, rec, err
	}
	t0, failed := p.tier0(d)
	tier0Gate.Release(1)
	decide := func() *Result { return p.decide(rec, slices.Clone(t0), failed) }
	if failed {
		return decide(), rec, nil
	}
	if len(p.checkers) > 0 && runner != nil {
		rec.Checkers = make([]CheckerRun, len(p.checkers))
		in := wasm.Input{Artifact: d.artifact, Criteria: p.canonical}
		for i, ref := range p.checkers {
			o, err := runner.Run(ctx, ref, in)
			if err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return nil, rec, ctxErr
				}
				rec.Checkers[i] = CheckerRun{Error: err.Error()}
				continue
			}
			o.WallNS = 0 // not reproducible; not part of the record
			rec.Checkers[i] = CheckerRun{Outcome: &o}
			if o.Kind.Decides() && o.Kind != wasm.KindPass {
				rec.Checkers = rec.Checkers[:i+1]
				break
			}
		}
	}
	r := decide()
	if p.semantic == 0 || r.Verdict == VerdictRefund || anyUndecided(r) {
		return r, rec, nil
	}
	rec.Answers = make([]Answer, p.semantic)
	if juror == nil {
		for i := range rec.Answers {
			rec.Answers[i] = Answer{Error: NoJury}
		}
		return decide(), rec, nil
	}
	for i, q := range p.Questions(d) {
		v, err := juror.Vote(ctx, q)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, rec, ctxErr
			}
			rec.Answers[i] = Answer{Error: err.Error()}
			var nm *NoMajorityError
			if errors.As(err, &nm) {
				rec.Answers[i].Jurors = nm.Jurors
			}
			continue
		}
		rec.Answers[i] = Answer{Vote: &v}
		if !v.Pass {
			rec.Answers = rec.Answers[:i+1]
			break
		}
	}
	return decide(), rec, nil
}

// anyUndecided reports whether a deterministic check could not decide.
func anyUndecided(r *Result) bool {
	for _, c := range r.Checks {
		if c.Kind != KindSemantic && !c.Passed {
			return true
		}
	}
	return false
}
