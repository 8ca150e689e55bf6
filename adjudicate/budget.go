package adjudicate

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"regexp/syntax"
	"runtime"

	"golang.org/x/sync/semaphore"
)

// The decision budget (RATIONALE.md, "The budget"). Every tier before the
// checkers (the schema, path/op assertions, regular expressions and expr
// programs) is charged in one unit against one budget per decision. A unit
// is about a nanosecond of work on the machine the costs were calibrated
// on; what each operation costs is in the cost constants below, and it
// depends only on the criteria and the deliverable, so the same decision
// stops at the same point on every machine and under any load.
const (
	// DefaultBudget is a decision's budget in units, and the most that
	// criteria may ask for: their "budget" field may lower it, never raise
	// it.
	DefaultBudget = 200_000_000
	// MaxExprHeldBytes bounds the bytes one expr run builds (strings,
	// arrays, maps), all of which it may hold until it ends. A run that
	// would build more fails its check.
	MaxExprHeldBytes = 32 << 20
	// MaxExprValueItems bounds one array or map built inside an expression.
	MaxExprValueItems = 1 << 20
)

// Costs in units. Work that depends on the size of a value is charged by
// that size before it is done: a string is charged by the bytes it will
// have before it is built, a loop by every element before it starts (even
// if it stops early), a regular expression by the bytes it reads times the
// size of its program.
const (
	costNode     = 16  // one node of an expression, or one schema keyword, evaluated once
	costCall     = 48  // one call of a metered operation, besides its work
	costElem     = 8   // one element of a value visited: scanned or copied
	costWalk     = 64  // one element of a value walked to measure it
	costCompare  = 32  // one comparison of two elements: equal, less, in a sort
	costEntry    = 64  // one entry of a map read or added
	costFormat   = 256 // one element printed by string() or toJSON()
	costScanDiv  = 2   // bytes read per unit: scanning, comparing, hashing
	costBuild    = 3   // units per costBuildDiv bytes built: allocating, copying, formatting
	costBuildDiv = 2
	costParse    = 3  // units per byte of JSON parsed by fromJSON
	costRegex    = 8  // one byte read by one instruction of a regular expression
	costCompile  = 64 // one byte of a regular expression compiled while deciding
)

// meter counts one decision's units. It is not safe for concurrent use: a
// decision runs on one goroutine.
type meter struct {
	budget    int64
	left      int64
	held      int64 // bytes built by the running expression
	exhausted bool
	env       map[string]any // the deliverable's own expression environment
}

func newMeter(budget int64) *meter {
	return &meter{budget: budget, left: budget}
}

// errExhausted is what a charge returns once the budget has run out; the
// meter remembers it, so that a check reads it from the meter whatever its
// evaluator made of the error.
var errExhausted = errors.New("budget exhausted")

// errHeld is what a build returns when the running expression would hold
// more than MaxExprHeldBytes.
var errHeld = fmt.Errorf("an expression may build at most %d bytes", MaxExprHeldBytes)

// charge spends units, or reports errExhausted when fewer are left; the
// budget is then spent to the last unit.
func (m *meter) charge(units int64) error {
	if m.exhausted {
		return errExhausted
	}
	if units < 0 || units > m.left {
		m.left, m.exhausted = 0, true
		return errExhausted
	}
	m.left -= units
	return nil
}

// scan charges reading n bytes.
func (m *meter) scan(n int64) error { return m.charge(ceilDiv(n, costScanDiv)) }

// elems charges visiting n elements.
func (m *meter) elems(n int64) error { return m.charge(mul(n, costElem)) }

// build charges building n bytes, which the running expression then holds.
func (m *meter) build(n int64) error {
	if err := m.charge(ceilDiv(mul(n, costBuild), costBuildDiv)); err != nil {
		return err
	}
	m.held = add(m.held, n)
	if m.held > MaxExprHeldBytes {
		return errHeld
	}
	return nil
}

// regex charges matching a program of insts instructions against n bytes.
func (m *meter) regex(n int64, insts int) error {
	return m.charge(mul(mul(max(n, 1), int64(insts)), costRegex))
}

// mul is a*b for non-negative a and b, saturating at math.MaxInt64.
func mul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// add is a+b for non-negative a and b, saturating at math.MaxInt64.
func add(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

func ceilDiv(n, d int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n-1)/d + 1
}

// log2 is the number of halvings of n to 1, at least 1: the depth of a
// sort of n elements.
func log2(n int64) int64 {
	if n < 2 {
		return 1
	}
	return int64(bits.Len64(uint64(n)))
}

// exhaustedDetail is the detail of the check during which the budget ran
// out.
func (m *meter) exhaustedDetail() string {
	return fmt.Sprintf("budget exhausted: the decision's %d units ran out in this check", m.budget)
}

// notRunDetail is the detail of a tier-0 check after the budget ran out.
const notRunDetail = "not run: the decision's budget ran out in an earlier check"

// tier0Slots bounds how many decisions evaluate tier 0 at once in this
// process, so that their held bytes are bounded too: at most
// tier0Slots * MaxExprHeldBytes besides their deliverables and plans.
// Tier 0 is pure computation: it is given every core but one, so that a
// flood of costly criteria leaves a core to everything else.
var tier0Slots = int64(max(1, min(runtime.GOMAXPROCS(0)-1, MaxTier0Slots)))

// MaxTier0Slots is the most decisions that run tier 0 at once in one
// process (fewer on a machine with fewer cores).
const MaxTier0Slots = 8

var tier0Gate = semaphore.NewWeighted(tier0Slots)

// Static limits: criteria over any of them are refused when they compile,
// with an error that names the limit. (MaxAssertions, MaxExprNodes,
// MaxExprBytes and the schema's bounds are limits of the same kind.)
const (
	// MaxRegexInsts bounds the program of one regular expression (a regex
	// op, a schema pattern, a constant pattern after matches): matching
	// costs its size times the bytes read.
	MaxRegexInsts = 8192
	// MaxPlanRegexInsts bounds the programs of all of a criteria's
	// regular expressions together.
	MaxPlanRegexInsts = 1 << 16
	// MaxPlanExprNodes bounds the nodes of all of a criteria's expressions
	// together.
	MaxPlanExprNodes = 1 << 14
)

// regexInsts returns the number of instructions of pattern's compiled
// program (RE2 syntax, as regexp.Compile reads it), 0 when it does not
// compile.
func regexInsts(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}
