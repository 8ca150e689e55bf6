package adjudicate

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// How an expression is metered (RATIONALE.md): a patch visitor rewrites
// every operation whose work depends on the size of a value into a call of
// a metered function, which is handed the run's meter as its first
// argument, charges the work before it does it, and then does it with
// expr's own implementation, so that a result is the same as unmetered.
// Every loop (the predicate builtins) is charged by its input's length
// times the cost of its body before it starts; the rest of the expression
// is charged by its nodes once per run. The meter reaches the functions
// through the run's environment, under a name no expression may use.

// meterIdent is the name of the meter in a run's environment; no
// identifier of an expression may begin with internalPrefix.
const (
	meterIdent     = "__assay_meter"
	internalPrefix = "__assay"
)

// meteredFunc is one metered operation: cost charges m for the work on
// args (and refuses what would exceed a bound) before impl does it.
type meteredFunc struct {
	cost func(m *meter, args []any) error
	impl func(args ...any) (any, error)
}

// Errors of the bounds on one value built inside an expression.
var (
	errStringTooLong = fmt.Errorf("string longer than %d bytes", MaxExprValueBytes)
	errArrayTooLong  = fmt.Errorf("array longer than %d items", MaxExprValueItems)
	errNoMeter       = errors.New("internal: a metered function ran without its meter")
	// errRangeTooLong is expr's own error for a range over its memory
	// budget.
	errRangeTooLong = errors.New("memory budget exceeded")
)

// fnName is the internal name of the metered version of name.
func fnName(name string) string { return internalPrefix + "_m_" + name }

// meteredFuncs holds every metered operation by its user-facing name (a
// builtin, one of the functions that replace builtins, or an operator's
// internal name).
var meteredFuncs = map[string]meteredFunc{}

// meteredOptions registers the metered functions with an expr compile.
var meteredOptions []expr.Option

func init() {
	fromBuiltin := func(name string, cost func(*meter, []any) error) {
		f := builtin.Builtins[builtin.Index[name]]
		var impl func(args ...any) (any, error)
		switch {
		case f.Fast != nil:
			impl = func(args ...any) (any, error) {
				if len(args) != 1 {
					return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
				}
				return f.Fast(args[0]), nil
			}
		case f.Safe != nil:
			impl = func(args ...any) (any, error) {
				out, _, err := f.Safe(args...)
				return out, err
			}
		default:
			impl = f.Func
		}
		meteredFuncs[name] = meteredFunc{cost: cost, impl: impl}
	}
	fromBuiltin("string", costString)
	fromBuiltin("toJSON", costToJSON)
	fromBuiltin("fromJSON", costFromJSON)
	fromBuiltin("toBase64", costToBase64)
	fromBuiltin("fromBase64", costFromBase64)
	fromBuiltin("trim", costTrim)
	fromBuiltin("trimPrefix", costTrim)
	fromBuiltin("trimSuffix", costTrim)
	fromBuiltin("upper", costCase)
	fromBuiltin("lower", costCase)
	fromBuiltin("split", costSplit)
	fromBuiltin("splitAfter", costSplit)
	fromBuiltin("replace", costReplace)
	fromBuiltin("indexOf", costScanStrings)
	fromBuiltin("lastIndexOf", costScanStrings)
	fromBuiltin("hasPrefix", costScanStrings)
	fromBuiltin("hasSuffix", costScanStrings)
	fromBuiltin("max", costAggregate(false))
	fromBuiltin("min", costAggregate(false))
	fromBuiltin("mean", costAggregate(false))
	fromBuiltin("median", costAggregate(true))
	fromBuiltin("fromPairs", costFromPairs)
	fromBuiltin("reverse", costCopyArray)
	fromBuiltin("uniq", costUniq)
	fromBuiltin("flatten", costFlatten)
	fromBuiltin("sort", costSort)
	fromBuiltin("len", costLen)
	fromBuiltin("int", costScanStrings)
	fromBuiltin("float", costScanStrings)
	fromBuiltin("get", costScanStrings)

	meteredFuncs["keys"] = meteredFunc{cost: costMapOut(0), impl: fnKeys}
	meteredFuncs["values"] = meteredFunc{cost: costMapOut(0), impl: fnValues}
	meteredFuncs["toPairs"] = meteredFunc{cost: costMapOut(pairBytes), impl: fnToPairs}
	meteredFuncs["repeat"] = meteredFunc{cost: costRepeat, impl: fnRepeat}
	meteredFuncs["join"] = meteredFunc{cost: costJoin, impl: fnJoin}
	meteredFuncs["concat"] = meteredFunc{cost: costConcat, impl: fnConcat}

	// Operators and the metering's own helpers, by internal name.
	meteredFuncs["add"] = meteredFunc{cost: costAdd, impl: fnAdd}
	meteredFuncs["range"] = meteredFunc{cost: costRange, impl: fnRange}
	meteredFuncs["eq"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return runtime.Equal(a[0], a[1]), nil }}
	meteredFuncs["ne"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return !runtime.Equal(a[0], a[1]), nil }}
	meteredFuncs["lt"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return runtime.Less(a[0], a[1]), nil }}
	meteredFuncs["gt"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return runtime.More(a[0], a[1]), nil }}
	meteredFuncs["le"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return runtime.LessOrEqual(a[0], a[1]), nil }}
	meteredFuncs["ge"] = meteredFunc{cost: costComparison, impl: func(a ...any) (any, error) { return runtime.MoreOrEqual(a[0], a[1]), nil }}
	meteredFuncs["in"] = meteredFunc{cost: costIn, impl: func(a ...any) (any, error) { return runtime.In(a[0], a[1]), nil }}
	meteredFuncs["contains"] = meteredFunc{cost: costStringOp, impl: stringOp(strings.Contains)}
	meteredFuncs["startsWith"] = meteredFunc{cost: costStringOp, impl: stringOp(strings.HasPrefix)}
	meteredFuncs["endsWith"] = meteredFunc{cost: costStringOp, impl: stringOp(strings.HasSuffix)}
	meteredFuncs["matchc"] = meteredFunc{cost: costMatchConst, impl: fnMatchConst}
	meteredFuncs["matchd"] = meteredFunc{cost: costMatchDynamic, impl: fnMatchDynamic}
	meteredFuncs["each"] = meteredFunc{cost: costEach, impl: func(a ...any) (any, error) { return a[0], nil }}
	meteredFuncs["key"] = meteredFunc{cost: costKey, impl: func(a ...any) (any, error) { return a[0], nil }}

	for name, f := range meteredFuncs {
		meteredOptions = append(meteredOptions, expr.Function(fnName(name), withMeter(f)))
	}
	meteredOptions = append(meteredOptions, expr.Function(fnName("env"), func(args ...any) (any, error) {
		m, ok := args[0].(*meter)
		if !ok {
			return nil, errNoMeter
		}
		return m.env, nil
	}))
}

// withMeter turns a metered operation into the function an expression
// calls, with the meter as its first argument.
func withMeter(f meteredFunc) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		m, ok := args[0].(*meter)
		if !ok {
			return nil, errNoMeter
		}
		if err := m.charge(costCall); err != nil {
			return nil, err
		}
		if err := f.cost(m, args[1:]); err != nil {
			return nil, err
		}
		return f.impl(args[1:]...)
	}
}

// The predicate builtins: loops over their first argument. Their extra
// cost per element is what building their result adds: a slot of the
// result and one of the VM's stack, which grow by doubling.
var predicateBuiltins = map[string]struct{ held, units int64 }{
	"all": {}, "none": {}, "any": {}, "one": {}, "find": {}, "findIndex": {}, "findLast": {},
	"findLastIndex": {}, "count": {}, "sum": {}, "reduce": {},
	"filter":  {held: 3 * slotBytes, units: costEntry},
	"map":     {held: 3 * slotBytes, units: costEntry},
	"sortBy":  {held: 4 * slotBytes, units: costEntry},
	"groupBy": {held: 2 * entryBytes, units: 2 * costEntry},
}

// meterPatcher is the patch visitor that meters an expression's checked
// and optimized tree.
type meterPatcher struct{}

// call returns a call of the metered function name on args, the meter
// first.
func call(name string, args ...ast.Node) *ast.CallNode {
	return &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: fnName(name)},
		Arguments: append([]ast.Node{&ast.IdentifierNode{Value: meterIdent}}, args...),
	}
}

func integer(n int64) *ast.IntegerNode { return &ast.IntegerNode{Value: int(n)} }

// wrap replaces *slot with a call of name on it and extra arguments,
// keeping its location for error messages.
func wrap(slot *ast.Node, name string, extra ...ast.Node) {
	ast.Patch(slot, call(name, append([]ast.Node{*slot}, extra...)...))
}

// literal reports whether n is a literal scalar: comparing a value with it
// costs at most the literal's own size.
func literal(n ast.Node) bool {
	switch c := n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode:
		return true
	case *ast.ConstantNode:
		switch c.Value.(type) {
		case nil, bool, int, float64, string:
			return true
		}
	}
	return false
}

// scalarType reports whether n is known to be a number or a boolean, whose
// comparisons cost the same whatever the value.
func scalarType(n ast.Node) bool {
	t := n.Type()
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

var binaryFuncs = map[string]string{
	"==": "eq", "!=": "ne", "<": "lt", ">": "gt", "<=": "le", ">=": "ge",
}

func (meterPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == "$env" {
			ast.Patch(node, call("env"))
		}
	case *ast.BuiltinNode:
		if extra, ok := predicateBuiltins[n.Name]; ok {
			var per, built int64
			if n.Map != nil { // map fused into filter by the optimizer
				per += nodes(n.Map) + costEntry/costNode
				built += literalBytes(n.Map) + 3*slotBytes
			}
			for _, a := range n.Arguments[1:] {
				if pr, ok := a.(*ast.PredicateNode); ok {
					per += nodes(pr.Node)
					built += literalBytes(pr.Node)
					switch n.Name {
					case "groupBy":
						wrap(&pr.Node, "key", integer(1))
					case "sortBy":
						wrap(&pr.Node, "key", integer(sortDepth))
					}
				}
			}
			if len(n.Arguments) == 1 { // sum(xs), count(xs): one step per element
				per = 1
			}
			sortFlag := int64(0)
			if n.Name == "sortBy" {
				sortFlag = 1
			}
			units := per*costNode + extra.units + ceilDiv(built*costBuild, costBuildDiv)
			wrap(&n.Arguments[0], "each", integer(units), integer(extra.held+built), integer(sortFlag))
			return
		}
		if _, ok := meteredFuncs[n.Name]; ok {
			ast.Patch(node, call(n.Name, n.Arguments...))
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			switch {
			case id.Value == addFunc: // every +, in the plain program
				ast.Patch(node, call("add", n.Arguments...))
			case ownFuncs[id.Value]:
				ast.Patch(node, call(id.Value, n.Arguments...))
			}
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "..":
			ast.Patch(node, call("range", n.Left, n.Right))
		case "==", "!=", "<", ">", "<=", ">=":
			if !literal(n.Left) && !literal(n.Right) && !(scalarType(n.Left) && scalarType(n.Right)) {
				ast.Patch(node, call(binaryFuncs[n.Operator], n.Left, n.Right))
			}
		case "in":
			ast.Patch(node, call("in", n.Left, n.Right))
		case "contains":
			if !literal(n.Left) {
				ast.Patch(node, call("contains", n.Left, n.Right))
			}
		case "startsWith", "endsWith":
			if !literal(n.Left) && !literal(n.Right) {
				ast.Patch(node, call(n.Operator, n.Left, n.Right))
			}
		case "matches":
			if s, ok := n.Right.(*ast.StringNode); ok {
				if re, err := regexp.Compile(s.Value); err == nil {
					ast.Patch(node, call("matchc", n.Left, &ast.ConstantNode{Value: re}, integer(int64(regexInsts(s.Value)))))
				}
				return
			}
			ast.Patch(node, call("matchd", n.Left, n.Right))
		}
	case *ast.MemberNode:
		if !literal(n.Property) && !scalarType(n.Property) {
			wrap(&n.Property, "key", integer(1))
		}
	case *ast.PairNode:
		if !literal(n.Key) {
			wrap(&n.Key, "key", integer(1))
		}
	}
}

// literalBytes is what the array and map literals of a loop's body build
// each time it runs (not those of the loops inside it, which count their
// own): expr's VM counts their elements against its own budget, but not
// their bytes.
func literalBytes(n ast.Node) int64 {
	var total int64
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch x := n.(type) {
		case *ast.ArrayNode:
			total += 4*slotBytes + slotBytes*int64(len(x.Nodes))
		case *ast.MapNode:
			total += entryBytes * int64(1+len(x.Pairs))
		case *ast.PredicateNode:
			return
		}
		forChildren(n, walk)
	}
	walk(n)
	return total
}

// sortDepth is the comparisons one element of a sort takes part in, at
// most: the depth of a sort of the largest array a deliverable can hold.
const sortDepth = 26

// nodes counts the nodes of n that one evaluation of n runs: all of them,
// but the bodies of the loops inside it, which are charged per element.
// A field read (by reflection) and a literal (an allocation) count more.
func nodes(n ast.Node) int64 {
	var total int64
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch x := n.(type) {
		case *ast.PredicateNode:
			return
		case *ast.MemberNode:
			total += 2
		case *ast.ArrayNode:
			total += 4
		case *ast.MapNode:
			total += 4 * int64(1+len(x.Pairs))
		}
		total++
		forChildren(n, walk)
	}
	walk(n)
	return total
}

// forChildren calls f on each child of n, as ast.Walk visits them.
func forChildren(n ast.Node, f func(ast.Node)) {
	each := func(nodes ...ast.Node) {
		for _, c := range nodes {
			if c != nil {
				f(c)
			}
		}
	}
	switch x := n.(type) {
	case *ast.UnaryNode:
		each(x.Node)
	case *ast.BinaryNode:
		each(x.Left, x.Right)
	case *ast.ChainNode:
		each(x.Node)
	case *ast.MemberNode:
		each(x.Node, x.Property)
	case *ast.SliceNode:
		each(x.Node, x.From, x.To)
	case *ast.CallNode:
		each(x.Callee)
		each(x.Arguments...)
	case *ast.BuiltinNode:
		each(x.Arguments...)
		each(x.Map)
	case *ast.PredicateNode:
		each(x.Node)
	case *ast.VariableDeclaratorNode:
		each(x.Value, x.Expr)
	case *ast.SequenceNode:
		each(x.Nodes...)
	case *ast.ConditionalNode:
		each(x.Cond, x.Exp1, x.Exp2)
	case *ast.ArrayNode:
		each(x.Nodes...)
	case *ast.MapNode:
		each(x.Pairs...)
	case *ast.PairNode:
		each(x.Key, x.Value)
	}
}

// ---- the costs of metered operations ----

// arg returns args[i], or nil when a function was called with fewer: the
// function then refuses its arguments, and its cost is nothing.
func arg(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// Bytes held by one element of an array or one entry of a map built.
const (
	slotBytes  = 16 // an interface value
	pairBytes  = 64 // a [key, value] pair of toPairs
	entryBytes = 64 // a map entry
)

func int64Arg(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x != x || math.IsInf(x, 0) {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// length is the number of elements of an array (or the length of a map or
// string) that a loop or a builder goes through, 0 for anything else.
func length(v any) int64 {
	switch x := v.(type) {
	case []any:
		return int64(len(x))
	case []int:
		return int64(len(x))
	case []float64:
		return int64(len(x))
	case []string:
		return int64(len(x))
	case string:
		return int64(len(x))
	case map[string]any:
		return int64(len(x))
	case nil:
		return 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return int64(rv.Len())
	}
	return 0
}

// buildString charges building a string of n bytes, and its header.
func buildString(m *meter, n int64) error {
	if n > MaxExprValueBytes {
		return errStringTooLong
	}
	return m.build(n + slotBytes)
}

func buildArray(m *meter, items, perItem int64) error {
	if items > MaxExprValueItems {
		return errArrayTooLong
	}
	if err := m.charge(mul(items, costCompare)); err != nil {
		return err
	}
	return m.build(mul(items, perItem))
}

func costEach(m *meter, args []any) error {
	n := length(arg(args, 0))
	units, _ := int64Arg(arg(args, 1))
	held, _ := int64Arg(arg(args, 2))
	sorts, _ := int64Arg(arg(args, 3))
	if sorts != 0 {
		units += costCompare * log2(n)
	}
	if err := m.charge(mul(n, units)); err != nil {
		return err
	}
	if held > 0 {
		if n > MaxExprValueItems {
			return errArrayTooLong
		}
		return m.build(mul(n, held))
	}
	return nil
}

func costKey(m *meter, args []any) error {
	if s, ok := arg(args, 0).(string); ok {
		factor, _ := int64Arg(arg(args, 1))
		return m.scan(mul(int64(len(s)), factor))
	}
	return nil
}

func costString(m *meter, args []any) error {
	s := shaper{limit: true}
	sz, err := s.measure(m, arg(args, 0))
	if err != nil {
		return err
	}
	if err := m.charge(mul(s.elems, costFormat)); err != nil {
		return err
	}
	return buildString(m, sz)
}

func costToJSON(m *meter, args []any) error {
	s := shaper{json: true, limit: true}
	sz, err := s.measure(m, arg(args, 0))
	if err != nil {
		return err
	}
	if sz > MaxExprValueBytes {
		return errStringTooLong
	}
	if err := m.charge(mul(s.elems, costFormat)); err != nil {
		return err
	}
	// The indented text is built from a compact one: twice the bytes.
	if err := m.build(sz); err != nil {
		return err
	}
	return m.build(sz)
}

func costFromJSON(m *meter, args []any) error {
	s, ok := arg(args, 0).(string)
	if !ok {
		return nil // the builtin refuses it
	}
	if err := m.charge(mul(int64(len(s)), costParse)); err != nil {
		return err
	}
	// Each value held costs about an interface and a header besides its
	// bytes; commas, colons and brackets count the values.
	values := int64(strings.Count(s, ",") + strings.Count(s, ":") + strings.Count(s, "[") + strings.Count(s, "{"))
	if err := m.charge(mul(values, costEntry)); err != nil {
		return err
	}
	return m.build(add(int64(len(s)), mul(values, entryBytes)))
}

func costToBase64(m *meter, args []any) error {
	if s, ok := arg(args, 0).(string); ok {
		return buildString(m, (int64(len(s))+2)/3*4)
	}
	return nil
}

func costFromBase64(m *meter, args []any) error {
	if s, ok := arg(args, 0).(string); ok {
		if err := m.scan(int64(len(s))); err != nil {
			return err
		}
		return m.build(int64(len(s)) * 3 / 4)
	}
	return nil
}

func strArgs(args []any) (total int64) {
	for _, a := range args {
		if s, ok := a.(string); ok {
			total += int64(len(s))
		}
	}
	return total
}

func costTrim(m *meter, args []any) error {
	n := strArgs(args)
	if len(args) == 2 {
		if cut, ok := arg(args, 1).(string); ok && !isASCII(cut) {
			// A cutset beyond ASCII is searched for every rune.
			n = mul(n, int64(utf8.RuneCountInString(cut))+1)
		}
	}
	return m.scan(n)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func costCase(m *meter, args []any) error {
	if s, ok := arg(args, 0).(string); ok {
		if err := m.scan(int64(len(s))); err != nil {
			return err
		}
		// A case mapping may grow a rune from two bytes to three.
		return buildString(m, int64(len(s))*3/2)
	}
	return nil
}

func costScanStrings(m *meter, args []any) error { return m.scan(strArgs(args)) }

func costLen(m *meter, args []any) error {
	if s, ok := arg(args, 0).(string); ok {
		return m.scan(int64(len(s))) // len counts runes
	}
	return nil
}

// splitCount is how many pieces splitting s at sep (at most limit when
// limit > 0) makes.
func splitCount(s, sep string, limit int64) int64 {
	var n int64
	if sep == "" {
		n = int64(utf8.RuneCountInString(s))
	} else {
		n = int64(strings.Count(s, sep)) + 1
	}
	if limit > 0 && limit < n {
		n = limit
	}
	return n
}

func costSplit(m *meter, args []any) error {
	s, ok1 := arg(args, 0).(string)
	sep, ok2 := arg(args, 1).(string)
	if !ok1 || !ok2 {
		return nil
	}
	if err := m.scan(int64(len(s))); err != nil {
		return err
	}
	limit := int64(-1)
	if len(args) == 3 {
		limit, _ = int64Arg(arg(args, 2))
	}
	n := splitCount(s, sep, limit)
	if err := m.charge(mul(n, costCompare)); err != nil {
		return err
	}
	return buildArray(m, n, slotBytes)
}

func costReplace(m *meter, args []any) error {
	s, ok1 := arg(args, 0).(string)
	old, ok2 := arg(args, 1).(string)
	repl, ok3 := arg(args, 2).(string)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	if err := m.scan(int64(len(s))); err != nil {
		return err
	}
	limit := int64(-1)
	if len(args) == 4 {
		limit, _ = int64Arg(arg(args, 3))
	}
	n := splitCount(s, old, limit)
	if old != "" || limit > 0 {
		n-- // the pieces around the matches
	} else {
		n++ // an empty old matches around every rune
	}
	grow := int64(len(repl)) - int64(len(old))
	size := int64(len(s))
	if grow > 0 {
		size = add(size, mul(n, grow))
	}
	return buildString(m, size)
}

// costAggregate charges max, min, mean and median, which go through every
// number of their arguments, nested arrays included; median copies and
// sorts them.
func costAggregate(sorts bool) func(*meter, []any) error {
	return func(m *meter, args []any) error {
		var s shaper
		var n int64
		for _, a := range args {
			if _, err := s.measure(m, a); err != nil {
				return err
			}
		}
		n = s.elems
		if !sorts {
			return nil
		}
		if err := m.charge(mul(mul(n, log2(n)), costCompare)); err != nil {
			return err
		}
		return m.build(mul(n, 8))
	}
}

func costFromPairs(m *meter, args []any) error {
	n := length(arg(args, 0))
	if err := m.charge(mul(n, 2*costEntry)); err != nil {
		return err
	}
	return buildArray(m, n, entryBytes)
}

func costCopyArray(m *meter, args []any) error {
	return buildArray(m, length(arg(args, 0)), slotBytes)
}

// costUniq charges uniq, which compares every element with each one kept
// before it.
func costUniq(m *meter, args []any) error {
	var s shaper
	if _, err := s.measure(m, arg(args, 0)); err != nil {
		return err
	}
	n := length(arg(args, 0))
	if err := m.charge(mul(mul(n, s.elems), costCompare)); err != nil {
		return err
	}
	return buildArray(m, n, slotBytes)
}

// costFlatten charges flatten, which copies every element by reflection
// into arrays that grow by doubling.
func costFlatten(m *meter, args []any) error {
	var s shaper
	if _, err := s.measure(m, arg(args, 0)); err != nil {
		return err
	}
	return buildArray(m, s.elems, 3*slotBytes)
}

func costSort(m *meter, args []any) error {
	n := length(arg(args, 0))
	var s shaper
	if _, err := s.measure(m, arg(args, 0)); err != nil {
		return err
	}
	// Each comparison may read a whole string.
	if err := m.scan(mul(s.strBytes, log2(n))); err != nil {
		return err
	}
	if err := m.charge(mul(mul(n, log2(n)), costCompare)); err != nil {
		return err
	}
	return buildArray(m, n, slotBytes)
}

// costMapOut charges keys, values and toPairs: the keys sorted, and an
// array built of one slot (and extra bytes) per entry.
func costMapOut(extra int64) func(*meter, []any) error {
	return func(m *meter, args []any) error {
		if len(args) != 1 {
			return nil // the function refuses them
		}
		mp, ok := arg(args, 0).(map[string]any)
		if !ok {
			return nil
		}
		n := int64(len(mp))
		var keyBytes int64
		for k := range mp {
			keyBytes += int64(len(k))
		}
		if err := m.scan(mul(keyBytes, log2(n))); err != nil {
			return err
		}
		if err := m.charge(add(mul(mul(n, log2(n)), costCompare), mul(n, costEntry))); err != nil {
			return err
		}
		return buildArray(m, n, slotBytes+extra)
	}
}

func costRepeat(m *meter, args []any) error {
	if len(args) != 2 {
		return nil // fnRepeat refuses them
	}
	s, ok1 := arg(args, 0).(string)
	n, ok2 := arg(args, 1).(int)
	if !ok1 || !ok2 || n < 0 {
		return nil // fnRepeat refuses it
	}
	return buildString(m, mul(int64(len(s)), int64(n)))
}

func costJoin(m *meter, args []any) error {
	if len(args) < 1 || len(args) > 2 {
		return nil // fnJoin refuses them
	}
	arr, ok := arg(args, 0).([]any)
	if !ok {
		return nil
	}
	sep := ""
	if len(args) == 2 {
		sep, _ = arg(args, 1).(string)
	}
	if err := m.charge(mul(int64(len(arr)), costCompare)); err != nil {
		return err
	}
	var size int64
	for _, e := range arr {
		if s, ok := e.(string); ok {
			size = add(size, int64(len(s)+len(sep)))
		}
	}
	return buildString(m, size)
}

// costConcat charges concat, which copies every element by reflection
// into an array that grows by doubling.
func costConcat(m *meter, args []any) error {
	var n int64
	for _, a := range args {
		n = add(n, length(a))
	}
	if err := m.charge(mul(n, costWalk)); err != nil {
		return err
	}
	return buildArray(m, n, 3*slotBytes)
}

func costAdd(m *meter, args []any) error {
	if x, ok := arg(args, 0).(string); ok {
		if y, ok := arg(args, 1).(string); ok {
			return buildString(m, int64(len(x)+len(y)))
		}
	}
	return nil
}

func costRange(m *meter, args []any) error {
	lo, hi := runtime.ToInt(arg(args, 0)), runtime.ToInt(arg(args, 1)) // they panic as OpRange does
	size := int64(0)
	if hi >= lo {
		size = int64(hi) - int64(lo) + 1
		if size <= 0 { // overflow
			size = math.MaxInt64
		}
	}
	if size > MaxExprValueItems {
		return errRangeTooLong
	}
	return buildArray(m, size, 8)
}

func fnRange(args ...any) (any, error) {
	return runtime.MakeRange(runtime.ToInt(arg(args, 0)), runtime.ToInt(arg(args, 1))), nil
}

// costComparison charges comparing two values: strings by their bytes,
// arrays and maps by their elements.
func costComparison(m *meter, args []any) error {
	a, b := arg(args, 0), arg(args, 1)
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return m.scan(int64(min(len(x), len(y))))
		}
		return nil
	}
	if length(a) == 0 || length(b) == 0 {
		return nil
	}
	var s shaper
	if _, err := s.measure(m, a); err != nil {
		return err
	}
	na := s.elems
	if _, err := s.measure(m, b); err != nil {
		return err
	}
	return m.charge(mul(min(na, s.elems-na), 4*costCompare))
}

func costIn(m *meter, args []any) error {
	needle, hay := arg(args, 0), arg(args, 1)
	switch hay.(type) {
	case map[string]any:
		if s, ok := needle.(string); ok {
			return m.scan(int64(len(s)))
		}
		return nil
	case string, nil:
		return nil
	}
	n := length(hay)
	if err := m.elems(n); err != nil {
		return err
	}
	// Every element is compared with the needle, which may cost its size.
	var s shaper
	if _, err := s.measure(m, needle); err != nil {
		return err
	}
	return m.charge(mul(n, s.elems*costCompare+s.strBytes/costScanDiv))
}

func stringOp(f func(a, b string) bool) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		a, b := args[0], args[1]
		if runtime.IsNil(a) || runtime.IsNil(b) {
			return false, nil
		}
		return f(a.(string), b.(string)), nil
	}
}

func costStringOp(m *meter, args []any) error { return m.scan(strArgs(args)) }

func costMatchConst(m *meter, args []any) error {
	if s, ok := args[0].(string); ok {
		insts, _ := int64Arg(args[2])
		return m.regex(int64(len(s)), int(insts))
	}
	return nil
}

func fnMatchConst(args ...any) (any, error) {
	a := args[0]
	if runtime.IsNil(a) {
		return false, nil
	}
	re := args[1].(*regexp.Regexp)
	if s, ok := a.(string); ok {
		return re.MatchString(s), nil
	}
	return re.Match(a.([]byte)), nil
}

func costMatchDynamic(m *meter, args []any) error {
	p, ok := args[1].(string)
	if !ok {
		return nil
	}
	if len(p) > MaxSchemaString {
		return fmt.Errorf("a pattern built by an expression is longer than %d bytes", MaxSchemaString)
	}
	if err := m.charge(mul(int64(len(p)), costCompile)); err != nil {
		return err
	}
	insts := regexInsts(p)
	if insts > MaxRegexInsts {
		return fmt.Errorf("a pattern built by an expression compiles to %d instructions, over the limit of %d", insts, MaxRegexInsts)
	}
	if s, ok := args[0].(string); ok {
		return m.regex(int64(len(s)), insts)
	}
	return nil
}

func fnMatchDynamic(args ...any) (any, error) {
	a, b := args[0], args[1]
	if runtime.IsNil(a) || runtime.IsNil(b) {
		return false, nil
	}
	var match bool
	var err error
	if s, ok := a.(string); ok {
		match, err = regexp.MatchString(b.(string), s)
	} else {
		match, err = regexp.Match(b.(string), a.([]byte))
	}
	if err != nil {
		return nil, err
	}
	return match, nil
}

// shaper measures values: it walks them, charging every element to the
// meter, and adds up what they would take to print.
type shaper struct {
	json     bool  // measure JSON (indented as toJSON does) rather than fmt's %v
	limit    bool  // stop with errStringTooLong once the text is longer than MaxExprValueBytes
	elems    int64 // elements visited
	strBytes int64 // bytes of the strings visited
	total    int64 // bytes of text measured so far
}

// measure returns an upper bound of the length of v printed with %v (or as
// indented JSON).
func (s *shaper) measure(m *meter, v any) (int64, error) {
	s.total = 0
	return s.size(m, v, 0)
}

// grow adds n to the text measured, and stops a limited shaper that has
// measured too much: the walk stops as soon as the result is known to be
// too long.
func (s *shaper) grow(n int64) error {
	s.total = add(s.total, n)
	if s.limit && s.total > MaxExprValueBytes {
		return errStringTooLong
	}
	return nil
}

func (s *shaper) size(m *meter, v any, depth int64) (int64, error) {
	if err := m.charge(costWalk); err != nil {
		return 0, err
	}
	s.elems++
	leaf := func(n int64) (int64, error) { return n, s.grow(n) }
	switch x := v.(type) {
	case nil:
		return leaf(5) // <nil>, null
	case bool:
		return leaf(5)
	case int:
		return leaf(int64(len(strconv.Itoa(x))))
	case float64:
		return leaf(floatLen(x))
	case string:
		s.strBytes += int64(len(x))
		if !s.json {
			return leaf(int64(len(x)))
		}
		if err := m.scan(int64(len(x))); err != nil {
			return 0, err
		}
		return leaf(jsonStringLen(x))
	case []any:
		total, err := leaf(s.frame(int64(len(x)), depth, 2))
		for _, e := range x {
			if err != nil {
				return 0, err
			}
			var n int64
			n, err = s.size(m, e, depth+1)
			total = add(total, n)
		}
		return total, err
	case map[string]any:
		total, err := leaf(s.frame(int64(len(x)), depth, 5))
		for k, e := range x {
			if err != nil {
				return 0, err
			}
			s.strBytes += int64(len(k))
			var n, kn int64
			if kn, err = leaf(s.keyLen(k)); err == nil {
				n, err = s.size(m, e, depth+1)
			}
			total = add(total, add(n, kn))
		}
		return total, err
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		total, err := leaf(s.frame(int64(rv.Len()), depth, 2))
		for i := 0; i < rv.Len() && err == nil; i++ {
			var n int64
			n, err = s.size(m, rv.Index(i).Interface(), depth+1)
			total = add(total, n)
		}
		return total, err
	case reflect.Map:
		total, err := leaf(s.frame(int64(rv.Len()), depth, 5))
		it := rv.MapRange()
		for err == nil && it.Next() {
			var k, n int64
			if k, err = s.size(m, it.Key().Interface(), depth+1); err == nil {
				n, err = s.size(m, it.Value().Interface(), depth+1)
			}
			total = add(total, add(n, k+4))
		}
		return total, err
	case reflect.String:
		s.strBytes += int64(rv.Len())
		return leaf(int64(rv.Len())*6 + 2)
	}
	return leaf(32) // another scalar: a number, at most
}

// frame is the bytes an array or map of n entries at depth adds around its
// entries: brackets, separators, and in JSON a line and an indent each.
func (s *shaper) frame(n, depth, open int64) int64 {
	if !s.json {
		return open + n // "[" "]" or "map[" "]", a space or colon between
	}
	if n == 0 {
		return 2
	}
	return 2 + 1 + 2*depth + mul(n, 1+2*(depth+1)+1+2)
}

func (s *shaper) keyLen(k string) int64 {
	if s.json {
		return jsonStringLen(k)
	}
	return int64(len(k))
}

// floatLen bounds the printed length of f, by fmt's %v or as JSON.
func floatLen(f float64) int64 {
	var buf [32]byte
	g := len(strconv.AppendFloat(buf[:0], f, 'g', -1, 64))
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	j := len(strconv.AppendFloat(buf[:0], f, format, -1, 64))
	return int64(max(g, j))
}

// jsonStringLen is the length of s as a JSON string with HTML escaping, as
// encoding/json writes it.
func jsonStringLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}
