package adjudicate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Ops of a path/op assertion.
const (
	OpEq       = "eq"
	OpNe       = "ne"
	OpGt       = "gt"
	OpGte      = "gte"
	OpLt       = "lt"
	OpLte      = "lte"
	OpContains = "contains"
	OpNonempty = "nonempty"
	OpRegex    = "regex"
)

var ops = map[string]bool{
	OpEq: true, OpNe: true, OpGt: true, OpGte: true, OpLt: true, OpLte: true,
	OpContains: true, OpNonempty: true, OpRegex: true,
}

// Bounds on assertions.
const (
	MaxPathSegments = 64
	MaxPathBytes    = 1024
)

// path is a compiled dotted path: "items.0.id". The empty path is the
// deliverable itself.
type path struct {
	text string
	segs []segment
}

type segment struct {
	key   string
	index int // the key as an array index; -1 when it is not one
}

func compilePath(p, at string) (path, error) {
	if len(p) > MaxPathBytes {
		return path{}, errorf(EInvalidAssertion, fmt.Sprintf("%s: longer than %d bytes", at, MaxPathBytes), nil)
	}
	if p == "" {
		return path{}, nil
	}
	parts := strings.Split(p, ".")
	if len(parts) > MaxPathSegments {
		return path{}, errorf(EInvalidAssertion, fmt.Sprintf("%s: more than %d segments", at, MaxPathSegments), nil)
	}
	segs := make([]segment, len(parts))
	for i, s := range parts {
		if s == "" {
			return path{}, errorf(EInvalidAssertion, fmt.Sprintf("%s: empty segment in %q", at, p), nil)
		}
		segs[i] = segment{key: s, index: -1}
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && strconv.Itoa(n) == s {
			segs[i].index = n
		}
	}
	return path{text: p, segs: segs}, nil
}

// resolve walks the path. When it does not resolve, the detail names the
// segment that was missing and what stood in its place.
func (p *path) resolve(v any) (any, string) {
	for i, s := range p.segs {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[s.key]
			if !ok {
				return nil, fmt.Sprintf("path %s: segment %q not found (%s)", p.text, s.key, p.prefix(i))
			}
			v = e
		case []any:
			if s.index < 0 {
				return nil, fmt.Sprintf("path %s: segment %q is not an index into the array at %s", p.text, s.key, p.prefix(i))
			}
			if s.index >= len(x) {
				return nil, fmt.Sprintf("path %s: segment %q not found (%s has %d items)", p.text, s.key, p.prefix(i), len(x))
			}
			v = x[s.index]
		default:
			return nil, fmt.Sprintf("path %s: segment %q not found (%s is %s, not an object or array)", p.text, s.key, p.prefix(i), typeName(v))
		}
	}
	return v, ""
}

// prefix names the first i segments, or "the deliverable" for none.
func (p *path) prefix(i int) string {
	if i == 0 {
		return "the deliverable"
	}
	parts := make([]string, i)
	for j := range parts {
		parts[j] = p.segs[j].key
	}
	return strings.Join(parts, ".")
}

// pathOp is a compiled {path, op, value} assertion. It is evaluated directly
// rather than through expr: the same semantics with no VM dispatch, no
// allocation on the passing path, and exact integer comparison.
type pathOp struct {
	path  path
	op    string
	value any
	re    *regexp.Regexp
	insts int    // the size of re's program
	label string // "rows gte 100"
	okMsg string // label + " -> true"
}

func compilePathOp(a *Assertion, value any, at string) (*pathOp, error) {
	bad := func(format string, args ...any) error {
		return errorf(EInvalidAssertion, at+": "+fmt.Sprintf(format, args...), nil)
	}
	if !ops[a.Op] {
		return nil, bad("unknown op %q (ops are eq ne gt gte lt lte contains nonempty regex)", a.Op)
	}
	p, err := compilePath(derefString(a.Path), at+".path")
	if err != nil {
		return nil, err
	}
	po := &pathOp{path: p, op: a.Op, value: value}
	hasValue := a.Value != nil
	switch a.Op {
	case OpNonempty:
		if hasValue && value != nil {
			return nil, bad("nonempty takes no value")
		}
	case OpGt, OpGte, OpLt, OpLte:
		if !hasValue {
			return nil, bad("op %s needs a value", a.Op)
		}
		if _, ok := value.(string); !ok && !isNumber(value) {
			return nil, bad("op %s needs a number or a string, got %s", a.Op, typeName(value))
		}
	case OpRegex:
		s, ok := value.(string)
		if !ok {
			return nil, bad("op regex needs a string value (an RE2 pattern), got %s", typeName(value))
		}
		if len(s) > MaxSchemaString {
			return nil, bad("regex longer than %d bytes", MaxSchemaString)
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, errorf(EInvalidAssertion, at+".value: not an RE2 regular expression: "+err.Error(), err)
		}
		if po.insts = regexInsts(s); po.insts > MaxRegexInsts {
			return nil, bad("regex compiles to %d instructions, over the limit of %d (MaxRegexInsts)", po.insts, MaxRegexInsts)
		}
		po.re = re
	default: // eq ne contains
		if !hasValue {
			return nil, bad("op %s needs a value", a.Op)
		}
	}
	name := p.text
	if name == "" {
		name = "$"
	}
	po.label = name + " " + a.Op
	if a.Op != OpNonempty {
		po.label += " " + brief(value)
	}
	po.okMsg = po.label + " -> true"
	return po, nil
}

// eval reports whether the assertion holds on v, with a detail, charging
// its work to m.
func (po *pathOp) eval(root any, m *meter) (bool, string) {
	if m.charge(mul(int64(len(po.path.segs)+1), costNode)) != nil {
		return false, ""
	}
	v, missing := po.path.resolve(root)
	if missing != "" {
		return false, po.label + " -> false: " + missing
	}
	ok, why := po.test(v, m)
	if ok {
		return true, po.okMsg
	}
	if why != "" {
		return false, po.label + " -> false: " + why
	}
	return false, po.label + " -> false (got " + briefMetered(v, m) + ")"
}

func (po *pathOp) test(v any, m *meter) (bool, string) {
	switch po.op {
	case OpEq:
		return equalMetered(v, po.value, m), ""
	case OpNe:
		return !equalMetered(v, po.value, m), ""
	case OpGt, OpGte, OpLt, OpLte:
		if x, ok := v.(string); ok {
			if y, ok := po.value.(string); ok && m.scan(int64(min(len(x), len(y)))) != nil {
				return false, ""
			}
		}
		c, ok := order(v, po.value)
		if !ok {
			return false, fmt.Sprintf("cannot compare %s %s with %s", typeName(v), briefMetered(v, m), typeName(po.value))
		}
		switch po.op {
		case OpGt:
			return c > 0, ""
		case OpGte:
			return c >= 0, ""
		case OpLt:
			return c < 0, ""
		}
		return c <= 0, ""
	case OpContains:
		switch x := v.(type) {
		case string:
			s, ok := po.value.(string)
			if !ok {
				return false, fmt.Sprintf("a string contains only strings, not %s", typeName(po.value))
			}
			if m.scan(int64(len(x)+len(s))) != nil {
				return false, ""
			}
			return strings.Contains(x, s), ""
		case []any:
			for _, e := range x {
				if equalMetered(e, po.value, m) {
					return true, ""
				}
				if m.exhausted {
					return false, ""
				}
			}
			return false, ""
		case map[string]any:
			s, ok := po.value.(string)
			if !ok {
				return false, fmt.Sprintf("an object contains only keys (strings), not %s", typeName(po.value))
			}
			_, has := x[s]
			return has, ""
		}
		return false, fmt.Sprintf("contains needs a string, array or object, got %s", typeName(v))
	case OpNonempty:
		switch x := v.(type) {
		case nil:
			return false, ""
		case string:
			return x != "", ""
		case []any:
			return len(x) > 0, ""
		case map[string]any:
			return len(x) > 0, ""
		}
		return true, "" // numbers and booleans are present values
	case OpRegex:
		s, ok := v.(string)
		if !ok {
			return false, fmt.Sprintf("regex needs a string, got %s %s", typeName(v), briefMetered(v, m))
		}
		if m.regex(int64(len(s)), po.insts) != nil {
			return false, ""
		}
		return po.re.MatchString(s), ""
	}
	return false, "unknown op"
}

// order compares numbers with numbers and strings with strings (by code
// point); anything else does not compare.
func order(a, b any) (int, bool) {
	if x, ok := a.(string); ok {
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return compareNumbers(a, b)
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
