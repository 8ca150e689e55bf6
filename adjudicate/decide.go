package adjudicate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/assayhq/assay/wasm"
)

// Verdicts.
const (
	// VerdictRelease: every criterion held; the seller is paid.
	VerdictRelease = "release"
	// VerdictRefund: a criterion failed; the buyer is refunded.
	VerdictRefund = "refund"
	// VerdictEscalated: nothing failed, but something could not be decided
	// here: a semantic criterion with no juror answer, or a checker that
	// could not be run or gave an outcome that decides nothing (timeout,
	// invalid_checker). Funds stay held for a person to look.
	VerdictEscalated = "escalated"
)

// Tiers: which stage decided.
const (
	TierZero = "tier0"      // schema, assertions, checkers
	TierJury = "tier1-jury" // the jury, on semantic criteria
)

// MaxDeliverableBytes bounds a deliverable's JSON.
const MaxDeliverableBytes = 64 << 20

// Deliverable is a parsed deliverable, ready to be decided against any
// number of plans. It is immutable and safe for concurrent use.
type Deliverable struct {
	value    any
	env      map[string]any
	artifact []byte
	// envs holds copies of env with a slot for a decision's meter, each
	// used by one decision at a time (exprEnv).
	envs sync.Pool
}

// ParseDeliverable parses a deliverable: one JSON value of any type.
//
// # Errors
//
// An *Error with EInvalidDeliverable when b is not one JSON value, is over
// MaxDeliverableBytes or holds a number out of float64 range.
func ParseDeliverable(b []byte) (*Deliverable, error) {
	if len(b) > MaxDeliverableBytes {
		return nil, errorf(EInvalidDeliverable, fmt.Sprintf("deliverable: larger than %d bytes", MaxDeliverableBytes), nil)
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, errorf(EInvalidDeliverable, "deliverable: "+err.Error(), err)
	}
	d := &Deliverable{value: v}
	if s, ok := v.(string); ok {
		d.artifact = []byte(s)
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return nil, errorf(EInvalidDeliverable, "deliverable: "+err.Error(), err)
		}
		d.artifact = buf.Bytes()
	}
	// An expression sees the deliverable's top-level fields as variables
	// and the whole deliverable as `deliverable` (unless a field has that
	// name).
	if m, ok := v.(map[string]any); ok {
		d.env = make(map[string]any, len(m)+1)
		d.env["deliverable"] = v
		for k, e := range m {
			d.env[k] = e
		}
	} else {
		d.env = map[string]any{"deliverable": v}
	}
	return d, nil
}

// Artifact returns what a checker receives as its artifact: the
// deliverable's compact JSON, or a string deliverable's own bytes.
func (d *Deliverable) Artifact() []byte { return d.artifact }

// Record is everything outside the plan and the deliverable that a verdict
// depends on: the checker outcomes and the juror answers, as they were
// recorded. Decide reads it; it never runs a checker or asks a model.
type Record struct {
	// Checkers holds one entry per criteria checker, in order; a missing
	// or zero entry is a checker that did not run.
	Checkers []CheckerRun `json:"checkers,omitempty"`
	// Answers holds one entry per semantic criterion, in the order they
	// appear among the assertions; a missing or zero entry is no answer.
	Answers []Answer `json:"answers,omitempty"`
}

// CheckerRun is one checker's recorded run: its outcome, or the error
// that kept it from running.
type CheckerRun struct {
	Outcome *wasm.Outcome `json:"outcome,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// Answer is one juror's recorded answer to a semantic question, or the
// error that kept it from answering. When the juror is a panel that could
// not reach a decision (a *NoMajorityError), Jurors holds how each member
// voted; a decided panel's members are in Vote.Jurors.
type Answer struct {
	Vote   *Vote       `json:"vote,omitempty"`
	Error  string      `json:"error,omitempty"`
	Jurors []JurorVote `json:"jurors,omitempty"`
}

// Vote is a juror's decision on one semantic criterion. A panel of jurors
// (adjudicate/jury) records each member's vote in Jurors.
type Vote struct {
	Pass   bool        `json:"pass"`
	Reason string      `json:"reason,omitempty"`
	Jurors []JurorVote `json:"jurors,omitempty"`
}

// Votes of one member of a jury panel.
const (
	JurorPass    = "pass"
	JurorFail    = "fail"
	JurorAbstain = "abstain"
)

// JurorVote is how one member of a jury panel voted on one semantic
// criterion, as recorded: a model's answer cannot be had again, so the
// record keeps what it said and hashes of what it was asked and answered.
type JurorVote struct {
	// Model is the model asked; Host the host of the server asked.
	Model string `json:"model"`
	Host  string `json:"host"`
	// Vote is JurorPass, JurorFail or JurorAbstain, or "" when the member
	// gave no usable answer (see Error).
	Vote string `json:"vote,omitempty"`
	// Rationale is the member's reason, cut short.
	Rationale string `json:"rationale,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the prompt sent; AnswerSHA256 of
	// the raw answer received, "" when none was.
	PromptSHA256 string `json:"prompt_sha256"`
	AnswerSHA256 string `json:"answer_sha256,omitempty"`
	// LatencyMS is how long the member took, retries included. It is
	// recorded data: Decide copies it and never measures anything.
	LatencyMS int64 `json:"latency_ms"`
	// Error is why the member gave no usable answer: a timeout, a server
	// error, an answer that did not parse.
	Error string `json:"error,omitempty"`
}

// NoMajorityError is a panel's answer when no strict majority of its
// members voted the same way: Judge records the error and Jurors, and the
// case is escalated.
type NoMajorityError struct {
	Reason string      // e.g. "no majority of 3 jurors: pass 1, fail 1, abstain 1"
	Jurors []JurorVote // each member's vote
}

func (e *NoMajorityError) Error() string { return e.Reason }

// Result is a verdict and every check behind it. The same plan,
// deliverable and record give the same Result, and the same JSON, byte
// for byte.
type Result struct {
	Verdict        string  `json:"verdict"`
	Tier           string  `json:"tier"`
	CriteriaSHA256 string  `json:"criteria_sha256"`
	Checks         []Check `json:"checks"`
}

// Check is one criterion's result. Spec is the criterion as written, in
// canonical JSON; it is shared with the Plan and must not be modified.
type Check struct {
	Kind   string          `json:"kind"`
	Spec   json.RawMessage `json:"spec"`
	Passed bool            `json:"passed"`
	// Skipped: the check did not run because the case was decided before
	// it (or, for a checker or semantic criterion, was never recorded).
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
	// Outcome is a checker's sandbox outcome, for kind "checker".
	Outcome *CheckerOutcome `json:"outcome,omitempty"`
	// Jurors is how each member of a jury panel voted, for kind
	// "semantic", when a panel answered; shared with the Record, like
	// Spec with the Plan, and not to be modified.
	Jurors []JurorVote `json:"jurors,omitempty"`
}

// CheckerOutcome is the deterministic part of a wasm.Outcome: wall time
// and the output text are left out (the text is in Detail, cut short).
type CheckerOutcome struct {
	Kind          wasm.Kind `json:"kind"`
	ExitCode      int       `json:"exit_code"`
	FuelUsed      uint64    `json:"fuel_used"`
	FuelLimit     uint64    `json:"fuel_limit"`
	MemoryPages   uint32    `json:"memory_pages"`
	StdoutSHA256  string    `json:"stdout_sha256"`
	StderrSHA256  string    `json:"stderr_sha256"`
	CheckerSHA256 string    `json:"checker_sha256"`
	InputSHA256   string    `json:"input_sha256"`
}

// JSON returns r as JSON: no HTML escaping, no trailing newline.
func (r *Result) JSON() []byte {
	b, err := marshalNoEscape(r)
	if err != nil {
		panic("adjudicate: result does not marshal: " + err.Error()) // impossible: plain types
	}
	return b
}

// Decide decides d against the plan, given the recorded checker outcomes
// and juror answers. It is pure: it runs nothing and reads no clock.
//
// The verdict is refund when any deterministic check failed (schema,
// assertion, or a checker whose outcome decides); otherwise escalated when
// a checker did not run or its outcome decides nothing; otherwise release
// when there is no semantic criterion; otherwise the jury's: refund on any
// failing vote, escalated when an answer is missing, release when all pass.
// The schema and assertions are decided within the plan's budget: a check
// during which it runs out fails (and the checks after it do not run), as
// any failed deterministic check does.
func (p *Plan) Decide(d *Deliverable, rec Record) *Result {
	checks, failed := p.tier0(d)
	return p.decide(rec, checks, failed)
}

// decide is Decide given the tier-0 checks, which it completes and keeps.
func (p *Plan) decide(rec Record, checks []Check, failed bool) *Result {
	r := &Result{CriteriaSHA256: p.hash, Checks: checks}
	undecided := false

	for i := range p.checks {
		pc := &p.checks[i]
		if pc.kind != KindChecker {
			continue
		}
		c := &r.Checks[i]
		var run CheckerRun
		if pc.ci < len(rec.Checkers) {
			run = rec.Checkers[pc.ci]
		}
		switch res := p.checkerCheck(pc, run, c, failed); res {
		case checkFailed:
			failed = true
		case checkUndecided:
			undecided = true
		}
	}

	if failed {
		r.Verdict, r.Tier = VerdictRefund, TierZero
	} else if undecided {
		r.Verdict, r.Tier = VerdictEscalated, TierZero
	} else if p.semantic == 0 {
		r.Verdict, r.Tier = VerdictRelease, TierZero
	} else {
		r.Verdict, r.Tier = VerdictRelease, TierJury
	}
	deterministicOK := !failed && !undecided

	// The jury: a failing vote decides refund, so answers after it were
	// never asked for.
	juryFailed := false
	for _, a := range rec.Answers {
		if a.Vote != nil && !a.Vote.Pass {
			juryFailed = true
		}
	}
	juryMissing := false
	for i := range p.checks {
		pc := &p.checks[i]
		if pc.kind != KindSemantic {
			continue
		}
		c := &r.Checks[i]
		c.Kind, c.Spec = pc.kind, pc.spec
		if !deterministicOK {
			c.Skipped = true
			c.Detail = "not asked: the jury sits only when every deterministic check passed"
			continue
		}
		var a Answer
		if pc.sm.index < len(rec.Answers) {
			a = rec.Answers[pc.sm.index]
		}
		switch {
		case a.Vote != nil:
			c.Passed = a.Vote.Pass
			c.Jurors = a.Vote.Jurors
			who := "juror"
			if len(c.Jurors) > 0 {
				who = "jury"
			}
			c.Detail = who + " -> " + passFail(a.Vote.Pass)
			if a.Vote.Reason != "" {
				c.Detail += ": " + a.Vote.Reason
			}
		case juryFailed:
			c.Skipped = true
			c.Detail = "not asked: another semantic criterion already failed"
		case a.Error != "":
			c.Jurors = a.Jurors
			c.Detail = "no juror answer: " + a.Error + " (escalated)"
			juryMissing = true
		default:
			c.Skipped = true
			c.Detail = "no juror answer (escalated)"
			juryMissing = true
		}
	}
	if deterministicOK && p.semantic > 0 {
		switch {
		case juryFailed:
			r.Verdict = VerdictRefund
		case juryMissing:
			r.Verdict = VerdictEscalated
		}
	}
	return r
}

// tier0 evaluates the schema and the path/op and expr assertions into
// checks, all of them while the budget lasts, and reports whether any
// failed. The checks it returns have every entry's kind and spec set.
func (p *Plan) tier0(d *Deliverable) (checks []Check, failed bool) {
	return p.tier0Metered(d, newMeter(p.budget))
}

// tier0Metered is tier0 with the meter given.
func (p *Plan) tier0Metered(d *Deliverable, m *meter) (checks []Check, failed bool) {
	checks = make([]Check, len(p.checks))
	var env map[string]any
	for i := range p.checks {
		pc := &p.checks[i]
		c := &checks[i]
		c.Kind, c.Spec = pc.kind, pc.spec
		label := ""
		switch {
		case m.exhausted && (pc.kind == KindSchema || pc.po != nil || pc.ex != nil):
			c.Skipped, c.Detail = true, notRunDetail
			continue
		case pc.kind == KindSchema:
			label = "schema"
			var stack [MaxSchemaDepth + 1]loc
			vs := violations{stack: stack[:0]}
			p.schema.validate(d.value, &vs, m)
			if vs.n == 0 {
				c.Passed, c.Detail = true, "schema -> true"
			} else {
				c.Detail = "schema -> false: " + vs.String()
			}
		case pc.po != nil:
			label = pc.po.label
			c.Passed, c.Detail = pc.po.eval(d.value, m)
		case pc.ex != nil:
			label = pc.ex.label
			if env == nil {
				env = exprEnv(d, m)
			}
			if !m.exhausted {
				c.Passed, c.Detail = pc.ex.eval(env, m)
			}
		default:
			continue
		}
		if m.exhausted {
			c.Passed, c.Detail = false, label+" -> "+m.exhaustedDetail()
		}
		if !c.Passed {
			failed = true
		}
	}
	releaseEnv(d, env)
	return checks, failed
}

// exprEnv returns the environment of one decision's expression runs: the
// deliverable's own, with the decision's meter. A decision gives it back
// with releaseEnv. Its copy is charged whether or not one is reused, so
// that a decision costs the same either way.
func exprEnv(d *Deliverable, m *meter) map[string]any {
	m.env = d.env
	if m.charge(mul(int64(len(d.env)), costEntry)) != nil {
		return nil
	}
	env, _ := d.envs.Get().(map[string]any)
	if env == nil {
		env = make(map[string]any, len(d.env)+1)
		for k, v := range d.env {
			env[k] = v
		}
	}
	env[meterIdent] = m
	return env
}

// releaseEnv gives back an environment exprEnv returned, once its
// decision no longer runs expressions.
func releaseEnv(d *Deliverable, env map[string]any) {
	if env != nil {
		env[meterIdent] = nil
		d.envs.Put(env)
	}
}

type checkResult int

const (
	checkPassed checkResult = iota
	checkFailed
	checkUndecided
	checkSkipped
)

func (p *Plan) checkerCheck(pc *planCheck, run CheckerRun, c *Check, decided bool) checkResult {
	c.Kind, c.Spec = pc.kind, pc.spec
	ref := p.checkers[pc.ci]
	name := "checker " + short(ref.SHA256)
	switch {
	case run.Outcome != nil:
		o := run.Outcome
		c.Outcome = &CheckerOutcome{
			Kind: o.Kind, ExitCode: o.ExitCode, FuelUsed: o.FuelUsed, FuelLimit: o.FuelLimit,
			MemoryPages: o.MemoryPages, StdoutSHA256: o.StdoutSHA256, StderrSHA256: o.StderrSHA256,
			CheckerSHA256: o.CheckerSHA256, InputSHA256: o.InputSHA256,
		}
		c.Detail = name + " -> " + string(o.Kind)
		if o.Detail != "" {
			c.Detail += ": " + o.Detail
		}
		if out := outputExcerpt(o); out != "" {
			c.Detail += "; " + out
		}
		if !o.Kind.Decides() {
			c.Detail += " (this outcome decides nothing: escalated)"
			return checkUndecided
		}
		if o.Kind == wasm.KindPass {
			c.Passed = true
			return checkPassed
		}
		return checkFailed
	case run.Error != "":
		c.Detail = name + " could not run: " + run.Error + " (escalated)"
		return checkUndecided
	case decided:
		c.Skipped = true
		c.Detail = name + " not run: an earlier check already failed"
		return checkSkipped
	default:
		c.Skipped = true
		c.Detail = name + " not run (escalated)"
		return checkUndecided
	}
}

func outputExcerpt(o *wasm.Outcome) string {
	cut := func(s string) string { return truncate(s, 240) }
	var parts []string
	if o.Stdout != "" {
		parts = append(parts, "stdout: "+cut(o.Stdout))
	}
	if o.Stderr != "" {
		parts = append(parts, "stderr: "+cut(o.Stderr))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return parts[0] + "; " + parts[1]
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func passFail(b bool) string {
	if b {
		return "pass"
	}
	return "fail"
}
