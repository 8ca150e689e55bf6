package adjudicate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Bounds on expr assertions.
const (
	MaxExprBytes = 4096 // source length
	MaxExprNodes = 1000 // AST nodes, checked by expr at compile time
	// ExprMemoryBudget is the VM's own allocation budget per run, in
	// expr's units (elements of the arrays and maps it builds itself:
	// literals, and the results of map, filter and sortBy). The decision's
	// budget and MaxExprHeldBytes bound the rest.
	ExprMemoryBudget = 1 << 20
	// MaxExprValueBytes bounds one string built inside an expression (by
	// +, repeat, join, string, toJSON and every other builder).
	MaxExprValueBytes = 1 << 20
)

// baseOptions are the options of every expr program: a boolean result, a
// node bound, no clock, map functions in key order, and guarded builders.
var baseOptions = []expr.Option{
	expr.Env(map[string]any{}),
	expr.AllowUndefinedVariables(),
	expr.AsBool(),
	expr.MaxNodes(MaxExprNodes),
	// Time: now() reads the clock, date() and timezone() read the host's
	// zone database; duration() is harmless but belongs with them.
	expr.DisableBuiltin("now"),
	expr.DisableBuiltin("date"),
	expr.DisableBuiltin("timezone"),
	expr.DisableBuiltin("duration"),
	// Map iteration order is random in Go: these return key order instead.
	expr.DisableBuiltin("keys"),
	expr.DisableBuiltin("values"),
	expr.DisableBuiltin("toPairs"),
	expr.Function("keys", fnKeys),
	expr.Function("values", fnValues),
	expr.Function("toPairs", fnToPairs),
	// Builders that could allocate without limit before expr's budget sees it.
	expr.DisableBuiltin("repeat"),
	expr.DisableBuiltin("join"),
	expr.DisableBuiltin("concat"),
	expr.Function("repeat", fnRepeat),
	expr.Function("join", fnJoin),
	expr.Function("concat", fnConcat),
}

// plainOptions compile an expression as a user wrote it: its compile
// errors are the ones an assertion reports, and a program compiled with
// them is what a metered one must compute.
var plainOptions = append(baseOptions[:len(baseOptions):len(baseOptions)],
	expr.Function(addFunc, fnAdd),
	expr.Patch(addPatcher{}),
)

// meteredConfig is a new configuration for checking and compiling one
// metered program: the plain one's functions and the metered functions.
// Each program gets its own, because expr's checker caches what it learns
// of types in the configuration it is given, in place, so one shared
// between goroutines would be written by several at once.
func meteredConfig() *conf.Config {
	c := conf.CreateNew()
	opts := append(baseOptions[:len(baseOptions):len(baseOptions)], expr.Function(addFunc, fnAdd))
	for _, op := range append(opts, meteredOptions...) {
		op(c)
	}
	for name := range c.Disabled {
		delete(c.Builtins, name)
	}
	c.Check()
	return c
}

// compileMetered compiles the program that runs: the plain program's tree,
// as expr checked and optimized it, with every size-dependent operation
// metered. Metering the optimized tree keeps what the optimizer made of it
// (loops fused, ranges turned into comparisons): a metered program does
// what the plain one does, in the same order.
func compileMetered(plain *vm.Program) (p *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("compiler panic: %v", r)
		}
	}()
	tree := &parser.Tree{Node: plain.Node(), Source: plain.Source()}
	ast.Walk(&tree.Node, meterPatcher{})
	config := meteredConfig()
	if _, err := checker.Check(tree, config); err != nil {
		return nil, err
	}
	return compiler.Compile(tree, config)
}

// addFunc replaces the + operator, so that string concatenation is bounded
// (reduce(1..64, #acc + #acc, "x") would otherwise ask for 2^64 bytes).
const addFunc = "__assay_add"

type addPatcher struct{}

func (addPatcher) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && b.Operator == "+" {
		ast.Patch(node, &ast.CallNode{
			Callee:    &ast.IdentifierNode{Value: addFunc},
			Arguments: []ast.Node{b.Left, b.Right},
		})
	}
}

func fnAdd(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("+ takes two operands")
	}
	if x, ok := args[0].(string); ok {
		if y, ok := args[1].(string); ok && len(x)+len(y) > MaxExprValueBytes {
			return nil, fmt.Errorf("string longer than %d bytes", MaxExprValueBytes)
		}
	}
	return runtime.Add(args[0], args[1]), nil
}

func sortedKeys(args []any, name string) (map[string]any, []string, error) {
	if len(args) != 1 {
		return nil, nil, fmt.Errorf("%s takes one map", name)
	}
	m, ok := args[0].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s takes a map, got %T", name, args[0])
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys, nil
}

func fnKeys(args ...any) (any, error) {
	_, keys, err := sortedKeys(args, "keys")
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, nil
}

func fnValues(args ...any) (any, error) {
	m, keys, err := sortedKeys(args, "values")
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out, nil
}

func fnToPairs(args ...any) (any, error) {
	m, keys, err := sortedKeys(args, "toPairs")
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = []any{k, m[k]}
	}
	return out, nil
}

func fnRepeat(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("repeat takes a string and a count")
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("repeat takes a string, got %T", args[0])
	}
	n, ok := args[1].(int)
	if !ok || n < 0 {
		return nil, fmt.Errorf("repeat takes a non-negative integer count")
	}
	if n > 0 && len(s) > MaxExprValueBytes/n {
		return nil, fmt.Errorf("string longer than %d bytes", MaxExprValueBytes)
	}
	return strings.Repeat(s, n), nil
}

func fnJoin(args ...any) (any, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, fmt.Errorf("join takes an array and an optional separator")
	}
	arr, ok := args[0].([]any)
	if !ok {
		return nil, fmt.Errorf("join takes an array, got %T", args[0])
	}
	sep := ""
	if len(args) == 2 {
		if sep, ok = args[1].(string); !ok {
			return nil, fmt.Errorf("join takes a string separator, got %T", args[1])
		}
	}
	parts := make([]string, len(arr))
	size := 0
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("join takes an array of strings, got %T", e)
		}
		parts[i] = s
		size += len(s) + len(sep)
		if size > MaxExprValueBytes {
			return nil, fmt.Errorf("string longer than %d bytes", MaxExprValueBytes)
		}
	}
	return strings.Join(parts, sep), nil
}

func fnConcat(args ...any) (any, error) {
	n := 0
	for _, a := range args {
		arr, ok := a.([]any)
		if !ok {
			return nil, fmt.Errorf("concat takes arrays, got %T", a)
		}
		n += len(arr)
		if n > MaxExprValueItems {
			return nil, errArrayTooLong
		}
	}
	out := make([]any, 0, n)
	for _, a := range args {
		out = append(out, a.([]any)...)
	}
	return out, nil
}

// exprCheck is a compiled expr assertion.
type exprCheck struct {
	src     string
	program *vm.Program // metered
	static  int64       // units each run costs before its loops: its other nodes
	nodes   int         // nodes as parsed
	insts   int         // instructions of its constant patterns
	label   string      // "expr all(items, .price > 0)"
	okMsg   string
	failMsg string
}

func compileExpr(src, at string) (*exprCheck, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errorf(EInvalidAssertion, at+": empty expression", nil)
	}
	if len(src) > MaxExprBytes {
		return nil, errorf(EInvalidAssertion, fmt.Sprintf("%s: longer than %d bytes", at, MaxExprBytes), nil)
	}
	calls, err := checkCalls(src)
	if err != nil {
		return nil, errorf(EInvalidAssertion, at+": "+err.Error(), err)
	}
	plain, err := compileProgram(src, plainOptions)
	if err != nil {
		return nil, errorf(EInvalidAssertion, at+": does not compile: "+err.Error(), err)
	}
	if calls.insts > MaxRegexInsts {
		return nil, errorf(EInvalidAssertion, fmt.Sprintf("%s: a pattern compiles to %d instructions, over the limit of %d (MaxRegexInsts)", at, calls.insts, MaxRegexInsts), nil)
	}
	p, err := compileMetered(plain)
	if err != nil {
		// The plain program compiled: metering it must not fail.
		return nil, errorf(EInternal, at+": does not compile once metered: "+err.Error(), err)
	}
	label := "expr " + brief(src)
	return &exprCheck{
		src: src, program: p, static: mul(nodes(p.Node()), costNode), nodes: calls.nodes, insts: calls.insts,
		label: label, okMsg: label + " -> true", failMsg: label + " -> false",
	}, nil
}

// disabledFuncs are the builtins an assertion may not call.
var disabledFuncs = map[string]bool{"now": true, "date": true, "timezone": true, "duration": true}

// ownFuncs are the functions that replace builtins.
var ownFuncs = map[string]bool{
	"keys": true, "values": true, "toPairs": true, "repeat": true, "join": true, "concat": true,
}

// parsed is what checkCalls counts of an expression.
type parsed struct {
	nodes int // as parsed
	insts int // of its constant patterns (the right of matches)
}

// checkCalls rejects calls of the clock builtins and of functions that do
// not exist, and names that belong to the metering: undefined variables
// are allowed (a deliverable's fields vary), so expr itself would accept
// now() and fail only when it runs. It counts the expression's nodes and
// the size of its constant patterns.
func checkCalls(src string) (out parsed, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("does not compile: parser panic: %v", r)
		}
	}()
	tree, err := parser.Parse(src)
	if err != nil {
		return out, fmt.Errorf("does not compile: %w", err)
	}
	v := &callChecker{}
	ast.Walk(&tree.Node, v)
	return v.parsed, v.err
}

type callChecker struct {
	parsed
	err error
}

func (c *callChecker) Visit(node *ast.Node) {
	c.nodes++
	if c.err != nil {
		return
	}
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if disabledFuncs[n.Name] {
			c.err = fmt.Errorf("does not compile: %s() is not allowed (no clock or time zone in a verdict)", n.Name)
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && !ownFuncs[id.Value] && !strings.HasPrefix(id.Value, internalPrefix) {
			c.err = fmt.Errorf("does not compile: unknown function %s()", id.Value)
		}
	case *ast.IdentifierNode:
		if strings.HasPrefix(n.Value, internalPrefix) {
			c.err = fmt.Errorf("does not compile: names beginning with %s are reserved", internalPrefix)
		}
	case *ast.VariableDeclaratorNode:
		if strings.HasPrefix(n.Name, internalPrefix) {
			c.err = fmt.Errorf("does not compile: names beginning with %s are reserved", internalPrefix)
		}
	case *ast.BinaryNode:
		if s, ok := n.Right.(*ast.StringNode); ok && n.Operator == "matches" {
			c.insts += regexInsts(s.Value)
		}
	}
}

// compileProgram compiles src, turning a panic in expr's compiler into an
// error: criteria are untrusted input.
func compileProgram(src string, opts []expr.Option) (p *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("compiler panic: %v", r)
		}
	}()
	return expr.Compile(src, opts...)
}

// eval runs the expression in env, the run's environment (the
// deliverable's fields and the meter), charging its work to m. After a
// run that exhausted the budget, its result means nothing: m says so.
func (e *exprCheck) eval(env map[string]any, m *meter) (bool, string) {
	m.held = 0
	if m.charge(e.static) != nil {
		return false, ""
	}
	// A fresh VM for each run: a pooled one would keep the run's values
	// reachable (its variables, stack and scopes) until its next run.
	machine := vm.VM{MemoryBudget: ExprMemoryBudget}
	out, err := machine.Run(e.program, env)
	m.held = 0
	if err != nil {
		return false, e.failMsg + ": " + firstLine(err.Error())
	}
	if b, ok := out.(bool); ok && b {
		return true, e.okMsg
	}
	return false, e.failMsg
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
