package adjudicate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/assayhq/assay/checkers"
)

// Bounds on a criteria object.
const (
	MaxCriteriaBytes = 1 << 20
	MaxAssertions    = 256
	MaxCheckers      = 16
	MaxDescription   = 4096
)

// Criteria is the acceptance criteria object (DESIGN.md, "Acceptance
// criteria"). Compile reads it from JSON; the type documents the shape.
type Criteria struct {
	Schema     json.RawMessage `json:"schema,omitempty"`
	Assertions []Assertion     `json:"assertions,omitempty"`
	Checkers   []checkers.Ref  `json:"checkers,omitempty"`
	// Budget lowers the decision budget of the schema and assertions, in
	// units (DefaultBudget when absent, and never more).
	Budget int64 `json:"budget,omitempty"`
}

// Assertion is one entry of criteria.assertions: either {path, op, value}
// or {expr}, optionally semantic, optionally described.
type Assertion struct {
	Path        *string         `json:"path,omitempty"`
	Op          string          `json:"op,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Expr        string          `json:"expr,omitempty"`
	Semantic    bool            `json:"semantic,omitempty"`
	Description string          `json:"description,omitempty"`
}

// Kinds of check in a Result.
const (
	KindSchema    = "schema"
	KindAssertion = "assertion"
	KindChecker   = "checker"
	KindSemantic  = "semantic"
)

// Plan is compiled criteria: validated, every assertion compiled, ready to
// decide many deliverables. A Plan is immutable and safe for concurrent use.
type Plan struct {
	hash      string
	canonical []byte
	schema    *schema
	checks    []planCheck
	checkers  []checkers.Ref
	semantic  int   // number of semantic checks
	budget    int64 // units per decision
	static    int64 // units a decision costs whatever the deliverable
	exprNodes int   // nodes of every expression, as parsed
	insts     int   // instructions of every regular expression
}

type planCheck struct {
	kind string
	spec json.RawMessage // canonical JSON of the criterion as written

	po *pathOp    // assertion, path/op form
	ex *exprCheck // assertion, expr form
	sm *semantic  // semantic
	ci int        // checker: index into criteria.checkers
}

type semantic struct {
	index       int // among semantic checks
	assertion   int // index in criteria.assertions
	description string
	path        path
}

// Compile validates criteria (JSON) and compiles it into a Plan.
//
// # Errors
//
// An *Error with EInvalidCriteria, EInvalidSchema or EInvalidAssertion,
// whose Message names the offending part.
func Compile(criteria []byte) (*Plan, error) {
	canonical, hash, err := canonicalize(criteria)
	if err != nil {
		return nil, err
	}
	return compileCanonical(canonical, hash)
}

// canonicalize returns the RFC 8785 form of criteria and its SHA-256.
func canonicalize(criteria []byte) ([]byte, string, error) {
	if len(criteria) > MaxCriteriaBytes {
		return nil, "", errorf(EInvalidCriteria, fmt.Sprintf("criteria: larger than %d bytes", MaxCriteriaBytes), nil)
	}
	if !json.Valid(criteria) {
		return nil, "", errorf(EInvalidCriteria, "criteria: not valid JSON", nil)
	}
	canonical, err := jcsTransform(criteria)
	if err != nil {
		return nil, "", errorf(EInvalidCriteria, "criteria: cannot canonicalise (RFC 8785): "+err.Error(), err)
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:]), nil
}

// jcsTransform is jcs.Transform, with a panic on hostile input turned
// into an error.
func jcsTransform(b []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return jcs.Transform(b)
}

func compileCanonical(canonical []byte, hash string) (*Plan, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(canonical, &top); err != nil || top == nil {
		return nil, errorf(EInvalidCriteria, "criteria: must be a JSON object", err)
	}
	for _, k := range sortedRawKeys(top) {
		switch k {
		case "schema", "assertions", "checkers", "budget":
		default:
			return nil, errorf(EInvalidCriteria, fmt.Sprintf("criteria: unknown field %q (fields are schema, assertions, checkers, budget)", k), nil)
		}
	}
	p := &Plan{hash: hash, canonical: canonical, budget: DefaultBudget}
	if raw, ok := top["budget"]; ok && !isNull(raw) {
		v, err := decodeJSON(raw)
		n, isInt := v.(int)
		if err != nil || !isInt || n < 1 || n > DefaultBudget {
			return nil, errorf(EInvalidCriteria, fmt.Sprintf("budget: must be a whole number of units from 1 to %d (DefaultBudget): criteria may lower the budget, not raise it", DefaultBudget), err)
		}
		p.budget = int64(n)
	}

	if raw, ok := top["schema"]; ok && !isNull(raw) {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, errorf(EInvalidSchema, "schema: "+err.Error(), err)
		}
		s, sc, err := compileSchema(v)
		if err != nil {
			return nil, err
		}
		p.schema = s
		p.static += mul(int64(sc.nodes), costNode)
		p.insts += sc.insts
		p.checks = append(p.checks, planCheck{kind: KindSchema, spec: json.RawMessage(raw)})
	}

	if raw, ok := top["assertions"]; ok && !isNull(raw) {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errorf(EInvalidCriteria, "assertions: must be an array", err)
		}
		if len(list) > MaxAssertions {
			return nil, errorf(EInvalidCriteria, fmt.Sprintf("assertions: more than %d", MaxAssertions), nil)
		}
		for i, a := range list {
			c, err := p.compileAssertion(a, i)
			if err != nil {
				return nil, err
			}
			p.checks = append(p.checks, c)
		}
	}

	if raw, ok := top["checkers"]; ok && !isNull(raw) {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errorf(EInvalidCriteria, "checkers: must be an array", err)
		}
		if len(list) > MaxCheckers {
			return nil, errorf(EInvalidCriteria, fmt.Sprintf("checkers: more than %d", MaxCheckers), nil)
		}
		for i, c := range list {
			at := fmt.Sprintf("checkers[%d]", i)
			var ref checkers.Ref
			if err := strictUnmarshal(c, &ref); err != nil {
				return nil, errorf(EInvalidCriteria, at+": "+err.Error(), err)
			}
			if err := ref.Validate(); err != nil {
				return nil, errorf(EInvalidCriteria, at+": "+err.Error(), err)
			}
			p.checks = append(p.checks, planCheck{kind: KindChecker, spec: json.RawMessage(c), ci: len(p.checkers)})
			p.checkers = append(p.checkers, ref)
		}
	}
	if err := p.checkStatic(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkStatic refuses criteria whose static cost is over a limit: their
// expressions' nodes, their regular expressions' programs, and the units
// they cost whatever the deliverable, which must fit their budget.
func (p *Plan) checkStatic() error {
	for _, c := range p.checks {
		switch {
		case c.po != nil:
			p.static += mul(int64(len(c.po.path.segs)+1), costNode)
			p.insts += c.po.insts
		case c.ex != nil:
			p.static += c.ex.static
			p.exprNodes += c.ex.nodes
			p.insts += c.ex.insts
		}
	}
	switch {
	case p.exprNodes > MaxPlanExprNodes:
		return errorf(EInvalidCriteria, fmt.Sprintf("assertions: %d expression nodes in all, over the limit of %d (MaxPlanExprNodes)", p.exprNodes, MaxPlanExprNodes), nil)
	case p.insts > MaxPlanRegexInsts:
		return errorf(EInvalidCriteria, fmt.Sprintf("criteria: regular expressions of %d instructions in all, over the limit of %d (MaxPlanRegexInsts)", p.insts, MaxPlanRegexInsts), nil)
	case p.static > p.budget:
		return errorf(EInvalidCriteria, fmt.Sprintf("criteria: cost at least %d units whatever the deliverable, over their budget of %d", p.static, p.budget), nil)
	}
	return nil
}

// size estimates the bytes the plan holds, from what it was measured to
// hold: its canonical criteria a few times over, and its compiled
// expressions, regular expressions and schema.
func (p *Plan) size() int64 {
	n := 4*int64(len(p.canonical)) + 320*int64(p.exprNodes) + 48*int64(p.insts) + 1024
	if p.schema != nil {
		n += 2 * int64(len(p.canonical))
	}
	return n
}

// Budget returns the units a decision of the plan may spend on its schema
// and assertions.
func (p *Plan) Budget() int64 { return p.budget }

var assertionFields = map[string]bool{
	"path": true, "op": true, "value": true, "expr": true, "semantic": true, "description": true,
}

func (p *Plan) compileAssertion(raw json.RawMessage, i int) (planCheck, error) {
	at := fmt.Sprintf("assertions[%d]", i)
	bad := func(format string, args ...any) error {
		return errorf(EInvalidAssertion, at+": "+fmt.Sprintf(format, args...), nil)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return planCheck{}, bad("must be an object")
	}
	for _, k := range sortedRawKeys(fields) {
		if !assertionFields[k] {
			return planCheck{}, bad("unknown field %q (fields are path, op, value, expr, semantic, description)", k)
		}
	}
	var a Assertion
	if err := json.Unmarshal(raw, &a); err != nil {
		return planCheck{}, errorf(EInvalidAssertion, at+": "+err.Error(), err)
	}
	if v, ok := fields["value"]; ok {
		a.Value = v // keep an explicit null as present
	}
	if len(a.Description) > MaxDescription {
		return planCheck{}, bad("description longer than %d bytes", MaxDescription)
	}
	c := planCheck{kind: KindAssertion, spec: raw}
	hasPathOp := a.Path != nil || a.Op != "" || a.Value != nil
	switch {
	case a.Expr != "" || fields["expr"] != nil:
		if a.Semantic {
			return planCheck{}, bad("an expr assertion cannot be semantic")
		}
		if hasPathOp {
			return planCheck{}, bad("expr cannot be combined with path, op or value")
		}
		ex, err := compileExpr(a.Expr, at+".expr")
		if err != nil {
			return planCheck{}, err
		}
		c.ex = ex
	case a.Semantic:
		if a.Description == "" && a.Path == nil {
			return planCheck{}, bad("a semantic criterion needs a description or a path")
		}
		var pth path
		if a.Op != "" {
			// Checked for sense, then left to the juror: a semantic
			// criterion is not evaluated by the engine.
			value, err := assertionValue(a.Value)
			if err != nil {
				return planCheck{}, bad("value: %v", err)
			}
			po, err := compilePathOp(&a, value, at)
			if err != nil {
				return planCheck{}, err
			}
			pth = po.path
		} else {
			if a.Value != nil {
				return planCheck{}, bad("value needs an op")
			}
			var err error
			if pth, err = compilePath(derefString(a.Path), at+".path"); err != nil {
				return planCheck{}, err
			}
		}
		c.kind = KindSemantic
		c.sm = &semantic{index: p.semantic, assertion: i, description: a.Description, path: pth}
		p.semantic++
	default:
		if a.Op == "" {
			return planCheck{}, bad("needs an op (or an expr)")
		}
		value, err := assertionValue(a.Value)
		if err != nil {
			return planCheck{}, bad("value: %v", err)
		}
		po, err := compilePathOp(&a, value, at)
		if err != nil {
			return planCheck{}, err
		}
		c.po = po
	}
	return c, nil
}

// Hash is the hex SHA-256 of the criteria's RFC 8785 canonical form: the
// plan's identity, the same for every spelling of the same criteria.
func (p *Plan) Hash() string { return p.hash }

// Canonical returns the criteria's RFC 8785 canonical bytes (read only).
func (p *Plan) Canonical() []byte { return p.canonical }

// Checkers returns the criteria's checker references in order.
func (p *Plan) Checkers() []checkers.Ref { return append([]checkers.Ref(nil), p.checkers...) }

// Semantic returns the number of semantic criteria.
func (p *Plan) Semantic() int { return p.semantic }

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// assertionValue decodes an assertion's value, nil when it has none.
func assertionValue(raw json.RawMessage) (any, error) {
	if raw == nil {
		return nil, nil
	}
	return decodeJSON(raw)
}
