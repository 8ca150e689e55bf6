package adjudicate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/hostile"
	"github.com/assayhq/assay/wasm"
)

// meteredExprs exercise every operation the metering rewrites, each way
// it can go: a result, false, or an error.
var meteredExprs = []string{
	// strings built
	`string(rows) == "140"`, `string(items) != ""`, `string(meta) == "map[k:1]"`, `string(nil) == "<nil>"`,
	`toJSON(meta) == "{\n  \"k\": 1\n}"`, `len(toJSON(items)) > 10`, `toJSON(name) == "\"report-7\""`,
	`fromJSON("[1,2]")[1] == 2`, `fromJSON("{")`, `fromJSON(rows) == 1`,
	`toBase64(name) == "cmVwb3J0LTc="`, `fromBase64("cmVwb3J0LTc=") == name`, `fromBase64("!!")`,
	`trim("  x ") == "x"`, `trim("xxayy", "xy") == "a"`, `trimPrefix(name, "rep") == "ort-7"`, `trimSuffix(name, "-7") == "report"`,
	`trim(rows)`, `upper(name) == "REPORT-7"`, `lower("ÀB") == "àb"`, `upper(rows)`,
	`split(name, "-")[1] == "7"`, `len(split(name, "")) == 8`, `len(split("a,b,c", ",", 2)) == 2`, `splitAfter("a,b", ",")[0] == "a,"`,
	`replace(name, "r", "R") == "RepoRt-7"`, `replace("aaa", "a", "b", 2) == "bba"`, `replace("ab", "", "-") == "-a-b-"`,
	`repeat("ab", 3) == "ababab"`, `repeat("x", -1) == ""`, `repeat(rows, 2)`, `len(repeat("x", 2000000)) > 0`,
	`join(["a", "b"], "-") == "a-b"`, `join(tags)`, `join(["a"]) == "a"`,
	`name + "!" == "report-7!"`, `rows + 1 == 141`, `ratio + rows > 140`, `name + rows`, `[1] + [2]`,
	`indexOf(name, "o") == 3`, `lastIndexOf(name, "r") == 5`, `hasPrefix(name, "rep")`, `hasSuffix(name, "7")`,
	`len(name) == 8`, `len("héllo") == 5`, `len(items) == 2`, `len(rows)`, `int("12") == 12`, `float("1.5") == 1.5`, `int("x")`,
	`get(meta, "k") == 1`, `get(items, 5) == nil`, `get(meta, name) == nil`,
	// arrays and maps built
	`max(1, 5, 3) == 5`, `min([4, 2]) == 2`, `mean(1..4) == 2.5`, `median([3, 1, 2]) == 2`, `max(tags)`,
	`keys(meta) == ["k"]`, `values({"b": 2, "a": 1}) == [1, 2]`, `toPairs({"b": 2, "a": 1})[0][0] == "a"`, `keys(rows)`,
	`fromPairs([["a", 1]]).a == 1`, `reverse(1..3) == [3, 2, 1]`, `uniq([1, 1, 2]) == [1, 2]`, `flatten([[1], [2, [3]]]) == [1, 2, 3]`,
	`sort([3, 1, 2]) == [1, 2, 3]`, `sort(["b", "a"], "desc") == ["b", "a"]`, `sort(tags)`, `concat([1], [2]) == [1, 2]`, `concat(1..2, [3])`,
	`len(1..10) == 10`, `len(5..1) == 0`, `len(1..2000000) > 0`, `1..name`, `first(1..3) == 1`, `last(1..3) == 3`, `take(1..5, 2) == [1, 2]`,
	// loops
	`all(items, .price >= 0)`, `any(items, .price > 2)`, `none(items, .price < 0)`, `one(items, .price == 0)`,
	`filter(items, .price > 0)[0].id == "x1"`, `map(items, .id) == ["x1", "x2"]`, `find(items, .price == 0).id == "x2"`,
	`findIndex(items, .price == 0) == 1`, `findLast(items, .price > 0).id == "x1"`, `findLastIndex(items, .price > 0) == 0`,
	`count(items, .price > 0) == 1`, `count([true, false]) == 1`, `sum(items, .price) == 2.5`, `sum(1..4) == 10`, `sum(1..4, # * 2) == 20`,
	`reduce(1..4, #acc + #, 0) == 10`, `reduce(1..4, #acc + #) == 10`, `reduce([], #acc)`, `len(groupBy(items, .price > 0)) == 2`,
	`groupBy(1..6, # % 2)[0] == [2, 4, 6]`, `sortBy(items, .price)[0].id == "x2"`, `sortBy(items, .id, "desc")[0].id == "x2"`,
	`all(rows, # > 0)`, `map(meta, #)`, `all(items, all(tags, # != nil))`, `len(filter(items, .price > 0)) == 1`,
	`all(items, .price > 0) && all(items, .price < 10)`, `map(filter(items, .price > 0), .id) == ["x1"]`, `filter(items, .price == 0)[0].id == "x2"`,
	// comparisons and operators
	`rows == 140`, `name == "report-7"`, `items == items`, `meta != {"k": 1}`, `tags == ["a", "b", 3]`, `name > "a"`, `name < rows`,
	`rows >= ratio`, `"a" in tags`, `3 in tags`, `"k" in meta`, `rows in 1..200`, `rows in 1..100`, `name in items`, `1 in rows`,
	`name contains "port"`, `name startsWith "rep"`, `name endsWith "7"`, `none contains "x"`, `rows contains "1"`,
	`name matches "^report-[0-9]$"`, `name matches ("^" + "report")`, `rows matches "1"`, `name matches "("`, `none matches "x"`,
	`meta[name] == nil`, `meta["k"] == 1`, `items[1].id == "x2"`, `({(name): 1})[name] == 1`, `$env.rows == 140`, `len($env) > 3`,
	`keys($env)[0] == "big"`, `$env[name] == nil`, `deliverable.rows == 140`, `let x = rows; x + 1 > 140`, `rows > 100 ? name != "" : false`,
	`nothing ?? true`, `missing?.field == nil`, `items[0:1][0].id == "x1"`, `name[0:3] == "rep"`, `-rows < 0`, `not flag`, `rows % 7 == 0`, `2 ** 3 == 8`,
	`bitand(rows, 4) == 4`, `abs(-1) == 1`, `round(ratio) == 1`, `type(rows) == "int"`,
}

// TestMeter_SameResults: metering changes no result. Every expression
// gives the same outcome metered as unmetered, error messages included.
func TestMeter_SameResults(t *testing.T) {
	d := mustDeliverable(t, opsDeliverable)
	for _, src := range meteredExprs {
		t.Run(src, func(t *testing.T) {
			plain, err := compileProgram(src, plainOptions)
			if err != nil {
				if _, err2 := Compile([]byte(`{"assertions":[{"expr":` + quote(src) + `}]}`)); err2 == nil {
					t.Fatalf("compiles metered only: %v", err)
				}
				return
			}
			want := runPlain(plain, d.env)
			p := mustPlan(t, `{"assertions":[{"expr":`+quote(src)+`}]}`)
			got := p.Decide(d, Record{}).Checks[0].Detail
			label := p.checks[0].ex.label
			if want = label + " -> " + want; got != want {
				t.Errorf("metered:   %s\nunmetered: %s", got, want)
			}
		})
	}
}

// runPlain runs an unmetered program as the assertion would report it.
func runPlain(p *vm.Program, env map[string]any) string {
	m := vm.VM{MemoryBudget: ExprMemoryBudget}
	out, err := m.Run(p, env)
	switch {
	case err != nil:
		return "false: " + firstLine(err.Error())
	case out == true:
		return "true"
	}
	return "false"
}

// TestBudget_Exhausted: the check during which the budget runs out fails
// and says so, the checks after it do not run, and the verdict is refund,
// the same bytes every time.
func TestBudget_Exhausted(t *testing.T) {
	p := mustPlan(t, `{"budget": 50000, "assertions": [
		{"path": "rows", "op": "gte", "value": 1},
		{"expr": "all(1..100000, # > 0)"},
		{"path": "rows", "op": "gte", "value": 1},
		{"path": "summary", "semantic": true, "description": "faithful"}]}`)
	d := mustDeliverable(t, `{"rows": 5, "summary": "s"}`)
	r, rec, err := Judge(context.Background(), p, d, nil, &jurorDouble{pass: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictRefund || r.Tier != TierZero {
		t.Fatalf("verdict %s/%s, want refund/tier0", r.Verdict, r.Tier)
	}
	want := []struct {
		passed, skipped bool
		detail          string
	}{
		{true, false, "rows gte 1 -> true"},
		{false, false, `expr "all(1..100000, # > 0)" -> budget exhausted: the decision's 50000 units ran out in this check`},
		{false, true, notRunDetail},
		{false, true, "not asked: the jury sits only when every deterministic check passed"},
	}
	for i, w := range want {
		c := r.Checks[i]
		if c.Passed != w.passed || c.Skipped != w.skipped || c.Detail != w.detail {
			t.Errorf("check %d: passed %v skipped %v %q; want %v %v %q", i, c.Passed, c.Skipped, c.Detail, w.passed, w.skipped, w.detail)
		}
	}
	if again := p.Decide(d, rec); string(again.JSON()) != string(r.JSON()) {
		t.Errorf("Decide gives other bytes than Judge:\n%s\n%s", again.JSON(), r.JSON())
	}
}

// TestBudget_StopsAtTheSamePoint: a decision stops at the same unit
// whatever else runs at the same time.
func TestBudget_StopsAtTheSamePoint(t *testing.T) {
	p := mustPlan(t, `{"assertions": [{"expr": "all(1..1000, len(string(1..100)) > 0)"}, {"expr": "all(items, .price >= 0)"}]}`)
	p.budget = 3_000_000
	d := mustDeliverable(t, opsDeliverable)
	m := newMeter(p.budget)
	p.tier0Metered(d, m)
	want := m.left
	done := make(chan int64, 8)
	for range 8 {
		go func() {
			m := newMeter(p.budget)
			p.tier0Metered(d, m)
			done <- m.left
		}()
	}
	for range 8 {
		if left := <-done; left != want {
			t.Errorf("%d units left, want %d", left, want)
		}
	}
}

// TestBudget_Lowered: criteria may lower the budget, not raise it, and
// must fit in what they ask for.
func TestBudget_Lowered(t *testing.T) {
	tests := []struct {
		name, criteria, code, message string
	}{
		{"OK", `{"budget": 100000, "assertions": [{"path": "rows", "op": "gte", "value": 1}]}`, "", ""},
		{"OKDefault", `{"budget": 200000000}`, "", ""},
		{"ErrRaised", `{"budget": 200000001}`, EInvalidCriteria, "budget: must be a whole number of units from 1 to 200000000 (DefaultBudget)"},
		{"ErrZero", `{"budget": 0}`, EInvalidCriteria, "budget: must be"},
		{"ErrFraction", `{"budget": 1.5}`, EInvalidCriteria, "budget: must be"},
		{"ErrString", `{"budget": "lots"}`, EInvalidCriteria, "budget: must be"},
		{"ErrBelowStatic", `{"budget": 10, "assertions": [{"expr": "rows > 1 and rows < 10"}]}`, EInvalidCriteria, "over their budget of 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile([]byte(tc.criteria))
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.Budget() > DefaultBudget {
					t.Errorf("budget %d", p.Budget())
				}
				return
			}
			if ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("got %v, want %s naming %q", err, tc.code, tc.message)
			}
		})
	}
}

// TestCompile_StaticLimits: criteria over a static limit are refused with
// a code and a message that names the limit.
func TestCompile_StaticLimits(t *testing.T) {
	exprs := func(n int, src string) string {
		return `{"assertions":[` + strings.TrimSuffix(strings.Repeat(`{"expr":`+quote(src)+`},`, n), ",") + `]}`
	}
	tests := []struct {
		name, criteria, code, limit string
	}{
		{"ErrExprNodes", exprs(17, strings.Repeat("1+", 498)+"1 > 0"), EInvalidCriteria, "(MaxPlanExprNodes)"},
		{"ErrRegexProgram", `{"assertions":[{"path":"x","op":"regex","value":"[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}"}]}`, EInvalidAssertion, "(MaxRegexInsts)"},
		{"ErrExprRegexProgram", exprs(1, `x matches "[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}"`), EInvalidAssertion, "(MaxRegexInsts)"},
		{"ErrSchemaPattern", `{"schema":{"type":"string","pattern":"[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}[ab]{0,1000}"}}`, EInvalidSchema, "(MaxRegexInsts)"},
		{"ErrRegexTotal", exprs(40, `x matches "[ab]{0,1000}"`), EInvalidCriteria, "(MaxPlanRegexInsts)"},
		{"ErrAssertions", exprs(257, "true"), EInvalidCriteria, "more than 256"},
		{"ErrReserved", exprs(1, "__assay_meter != nil"), EInvalidAssertion, "reserved"},
		{"ErrReservedLet", exprs(1, "let __assay_x = 1; true"), EInvalidAssertion, "reserved"},
		{"ErrReservedCall", exprs(1, "__assay_add(1, 2) > 0"), EInvalidAssertion, "reserved"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.criteria))
			if ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.limit) {
				t.Errorf("got %v, want %s naming %s", err, tc.code, tc.limit)
			}
		})
	}
}

// TestBrief_SameAsMarshal: brief renders exactly the first bytes of the
// value's JSON, however large and whatever it holds.
func TestBrief_SameAsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "é", "\u2028", "\xff", "\"", "\\", "<", "\n", "\x01", "😀", "\xe2\x82"}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(9); {
		case k == 0:
			return nil
		case k == 1:
			return r.IntN(2) == 0
		case k == 2:
			return r.IntN(1 << 20)
		case k == 3:
			return r.Float64() * 1e25
		case k <= 5 || depth > 3:
			var sb strings.Builder
			for range r.IntN(40) {
				sb.WriteString(pieces[r.IntN(len(pieces))])
			}
			return sb.String()
		case k == 6:
			a := make([]any, r.IntN(6))
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		}
		m := map[string]any{}
		n := r.IntN(8)
		if depth == 0 {
			n = r.IntN(100) // over 64 keys: found in order one at a time
		}
		for range n {
			m[fmt.Sprint(r.IntN(1000))] = value(depth + 1)
		}
		return m
	}
	for i := range 5000 {
		v := value(0)
		b, err := marshalNoEscape(v)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := truncate(string(b), briefMax), brief(v); got != want {
			t.Fatalf("value %d: brief %q, want %q", i, got, want)
		}
	}
}

// TestSchema_ValidateBudget: a verdict schema's check stops at the budget.
func TestSchema_ValidateBudget(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"array","items":{"type":"string","pattern":"^(a|b){0,200}c$"}}`))
	if err != nil {
		t.Fatal(err)
	}
	big := `["` + strings.Repeat(strings.Repeat("ab", 2000)+`","`, 2000) + `"]`
	if err := s.Validate([]byte(big)); err == nil || !strings.Contains(err.Error(), "budget exhausted") {
		t.Errorf("got %v, want the budget exhausted", err)
	}
	if err := s.Validate([]byte(`["abc"]`)); err != nil {
		t.Error(err)
	}
}

// TestBudget_Hostile runs the corpus of hostile criteria: each is refused
// with its code, or decided within its budget to its verdict, the same
// bytes twice.
func TestBudget_Hostile(t *testing.T) {
	if testing.Short() {
		t.Skip("decides every hostile case to its end")
	}
	cases, err := hostile.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			criteria, err := c.Criteria()
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(criteria)
			if c.Error != "" || err != nil {
				if ErrorCode(err) != c.Error {
					t.Fatalf("compile: %v, want code %q", err, c.Error)
				}
				return
			}
			d, err := ParseDeliverable(c.Deliverable())
			if err != nil {
				t.Fatal(err)
			}
			m := newMeter(p.budget)
			checks, _ := p.tier0Metered(d, m)
			r := p.decide(Record{}, checks, anyFailed(checks))
			if r.Verdict != c.Verdict {
				t.Errorf("verdict %s, want %s", r.Verdict, c.Verdict)
			}
			if last := lastRun(r); !strings.Contains(last, c.Detail) {
				t.Errorf("detail %q does not say %q", last, c.Detail)
			}
			if m.left < 0 || m.held > MaxExprHeldBytes {
				t.Errorf("%d units left, %d bytes held", m.left, m.held)
			}
			if again := p.Decide(d, Record{}); string(again.JSON()) != string(r.JSON()) {
				t.Errorf("not deterministic:\n%s\n%s", truncate(string(again.JSON()), 400), truncate(string(r.JSON()), 400))
			}
		})
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func anyFailed(checks []Check) bool {
	for _, c := range checks {
		if (c.Kind == KindSchema || c.Kind == KindAssertion) && !c.Passed {
			return true
		}
	}
	return false
}

// lastRun is the detail of the last check that ran.
func lastRun(r *Result) string {
	last := ""
	for _, c := range r.Checks {
		if !c.Skipped {
			last = c.Detail
		}
	}
	return last
}

// TestCache_Bytes: the cache holds no more plans than its bound on bytes
// allows, however many it may count.
func TestCache_Bytes(t *testing.T) {
	c := NewCache(4096)
	c.maxBytes = 20 << 20
	big := strings.Repeat(`{"path":"a","op":"eq","value":"`+strings.Repeat("x", 3000)+`"},`, 25)
	var size int64
	for i := range 120 {
		p, err := c.Plan([]byte(`{"assertions":[` + big + `{"expr":"rows > ` + fmt.Sprint(i) + `"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		size = p.size()
	}
	if n := int64(c.Len()); n*size > c.maxBytes || n < c.maxBytes/size-1 {
		t.Errorf("%d plans of %d bytes held, for a bound of %d bytes", n, size, c.maxBytes)
	}
}

// TestBudget_Engines: where checkers are involved, the same criteria and
// deliverable give the same bytes on wazero's compiler and interpreter,
// run after run: checkers that pass, fail, run out of fuel or of memory,
// and checkers left unrun because the budget ran out first.
func TestBudget_Engines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles checkers on two engines")
	}
	dir, err := checkers.OpenDir(filepath.Join("..", "fixtures", "checkers"))
	if err != nil {
		t.Fatal(err)
	}
	sha := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name))
		if err != nil {
			t.Fatal(err)
		}
		return checkers.SHA256(b)
	}
	one := func(entry string) string {
		return `{"assertions":[{"expr":"all(items, .price > 0)"}],"checkers":[` + entry + `]}`
	}
	entries := `[{"sha256":"` + sha("pass.wasm") + `"},{"sha256":"` + sha("fail.wasm") + `"}]`
	cases := []struct{ name, criteria string }{
		{"Pass", one(`{"sha256":"` + sha("pass.wasm") + `"}`)},
		{"Fail", one(`{"sha256":"` + sha("fail.wasm") + `"}`)},
		{"Memory", one(`{"sha256":"` + sha("grow.wasm") + `","memory_mib":2}`)},
		{"Fuel", one(`{"sha256":"` + sha("loop.wasm") + `","fuel":1000000}`)},
		{"BudgetFirst", `{"assertions":[{"expr":"all(1..1000000, all(1..1000000, # > 0))"}],"checkers":` + entries + `}`},
		{"Lowered", `{"budget":2000,"assertions":[{"expr":"all(1..1000, # > 0)"}],"checkers":` + entries + `}`},
	}
	d := mustDeliverable(t, `{"items":[{"price":1},{"price":2}]}`)
	results := map[string]string{}
	for _, interpreter := range []bool{false, true} {
		sb, err := wasm.NewSandbox(context.Background(), wasm.Config{Interpreter: interpreter})
		if err != nil {
			t.Fatal(err)
		}
		runner := checkers.NewRunner(sb, dir)
		for _, c := range cases {
			p := mustPlan(t, c.criteria)
			for range 2 {
				r, _, err := Judge(context.Background(), p, d, runner, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := string(r.JSON())
				if want, ok := results[c.name]; ok && got != want {
					t.Errorf("%s on %s:\n%s\nwant\n%s", c.name, sb.Engine(), got, want)
				}
				results[c.name] = got
			}
		}
		if err := sb.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"Pass": `"kind":"pass"`, "Fail": `"kind":"fail"`, "Memory": "memory_exceeded",
		"Fuel": "fuel_exhausted", "BudgetFirst": "not run: an earlier check already failed", "Lowered": "the decision's 2000 units ran out"} {
		if !strings.Contains(results[name], want) {
			t.Errorf("%s lacks %s: %s", name, want, results[name])
		}
	}
}

// TestBudget_HammerJudge decides one deliverable from many goroutines
// through Judge, which lets a few at a time run tier 0 and reuses the
// deliverable's environments: every result is the same bytes.
func TestBudget_HammerJudge(t *testing.T) {
	p := mustPlan(t, `{"budget": 3000000, "assertions": [{"expr": "all(items, .price >= 0)"},
		{"expr": "all(1..1000, len(string(1..100)) > 0)"}, {"expr": "keys($env) != nil"}]}`)
	d := mustDeliverable(t, opsDeliverable)
	want := string(p.Decide(d, Record{}).JSON())
	if !strings.Contains(want, "budget exhausted") {
		t.Fatalf("the budget does not run out: %s", want)
	}
	errs := make(chan string, 16)
	for range 16 {
		go func() {
			for range 20 {
				r, _, err := Judge(context.Background(), p, d, nil, nil)
				if err != nil {
					errs <- err.Error()
					return
				}
				if got := string(r.JSON()); got != want {
					errs <- got
					return
				}
			}
			errs <- ""
		}()
	}
	for range 16 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// TestJudge_WaitsItsTurn: a decision waits for a turn at tier 0, and
// stops waiting when its context ends.
func TestJudge_WaitsItsTurn(t *testing.T) {
	if err := tier0Gate.Acquire(context.Background(), tier0Slots); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Judge(ctx, mustPlan(t, `{}`), mustDeliverable(t, `{}`), nil, nil)
	tier0Gate.Release(tier0Slots)
	if err != context.Canceled {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if _, _, err := Judge(context.Background(), mustPlan(t, `{}`), mustDeliverable(t, `{}`), nil, nil); err != nil {
		t.Error(err)
	}
}
