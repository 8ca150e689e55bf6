package adjudicate

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/assayhq/assay/internal/hostile"
)

func mustPlan(tb testing.TB, criteria string) *Plan {
	tb.Helper()
	p, err := Compile([]byte(criteria))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func mustDeliverable(tb testing.TB, s string) *Deliverable {
	tb.Helper()
	d, err := ParseDeliverable([]byte(s))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// deliverable1K is about 1 KiB of JSON.
func deliverable1K() string {
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf(`{"id":"item-%02d","price":%d.25,"qty":%d}`, i, i+1, i%3+1))
	}
	return `{"rows":140,"name":"quarterly report","status":"ok","summary":"Sales rose in Q3 across all regions.",` +
		`"meta":{"author":"seller-7","version":3},"items":[` + strings.Join(items, ",") + `]}`
}

const tenAssertions = `{
	"schema": {"type": "object", "required": ["rows", "items", "status"], "properties": {
		"rows": {"type": "integer", "minimum": 0},
		"status": {"enum": ["ok", "partial"]},
		"name": {"type": "string", "maxLength": 100},
		"items": {"type": "array", "maxItems": 100000, "items": {"type": "object", "required": ["id", "price"],
			"properties": {"id": {"type": "string", "pattern": "^item-"}, "price": {"type": "number", "exclusiveMinimum": 0}}}}}},
	"assertions": [
		{"path": "rows", "op": "gte", "value": 100},
		{"path": "rows", "op": "lt", "value": 1000},
		{"path": "status", "op": "eq", "value": "ok"},
		{"path": "name", "op": "contains", "value": "report"},
		{"path": "summary", "op": "nonempty"},
		{"path": "items.0.id", "op": "regex", "value": "^item-[0-9]+$"},
		{"path": "meta.version", "op": "ne", "value": 2},
		{"path": "meta", "op": "contains", "value": "author"},
		{"expr": "all(items, .price > 0)"},
		{"expr": "rows > 100 and status == \"ok\""}
	]
}`

// BenchmarkAssertion is one compiled assertion on a parsed deliverable:
// the tier-0 hot path. No compilation happens inside the loop.
func BenchmarkAssertion(b *testing.B) {
	d := mustDeliverable(b, deliverable1K())
	for _, bc := range []struct{ name, a string }{
		{"path_gte", `{"path":"rows","op":"gte","value":100}`},
		{"path_deep_regex", `{"path":"items.3.id","op":"regex","value":"^item-[0-9]+$"}`},
		{"expr_cmp", `{"expr":"rows >= 100"}`},
		{"expr_all", `{"expr":"all(items, .price > 0)"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := mustPlan(b, `{"assertions":[`+bc.a+`]}`)
			pc := &p.checks[0]
			m := newMeter(DefaultBudget)
			env := exprEnv(d, m)
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				m.left = m.budget
				if pc.po != nil {
					ok, _ = pc.po.eval(d.value, m)
				} else {
					ok, _ = pc.ex.eval(env, m)
				}
				if !ok {
					b.Fatal("failed")
				}
			}
		})
	}
}

// BenchmarkPathOpVsExpr measures the choice of a direct evaluator for
// path/op over compiling it to expr: the same check both ways.
func BenchmarkPathOpVsExpr(b *testing.B) {
	d := mustDeliverable(b, deliverable1K())
	b.Run("direct", func(b *testing.B) {
		p := mustPlan(b, `{"assertions":[{"path":"items.3.price","op":"gte","value":4}]}`)
		m := newMeter(DefaultBudget)
		b.ReportAllocs()
		for b.Loop() {
			m.left = m.budget
			if ok, _ := p.checks[0].po.eval(d.value, m); !ok {
				b.Fatal("failed")
			}
		}
	})
	b.Run("expr", func(b *testing.B) {
		p := mustPlan(b, `{"assertions":[{"expr":"items[3].price >= 4"}]}`)
		prog := p.checks[0].ex.program
		m := &vm.VM{MemoryBudget: ExprMemoryBudget}
		b.ReportAllocs()
		for b.Loop() {
			out, err := m.Run(prog, d.env)
			if err != nil || out != true {
				b.Fatal(out, err)
			}
		}
	})
}

// BenchmarkDecide is a whole tier-0 decision with ten assertions and a
// schema: on a parsed 1 KiB deliverable, and including the parse.
func BenchmarkDecide(b *testing.B) {
	p := mustPlan(b, tenAssertions)
	raw := []byte(deliverable1K())
	b.Run("ten_assertions_schema_1KiB", func(b *testing.B) {
		d := mustDeliverable(b, string(raw))
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if r := p.Decide(d, Record{}); r.Verdict != VerdictRelease {
				b.Fatal(string(r.JSON()))
			}
		}
	})
	b.Run("ten_assertions_schema_1KiB_with_parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			d, err := ParseDeliverable(raw)
			if err != nil {
				b.Fatal(err)
			}
			if r := p.Decide(d, Record{}); r.Verdict != VerdictRelease {
				b.Fatal(string(r.JSON()))
			}
		}
	})
	big := deliverable1M()
	b.Run("ten_assertions_schema_1MiB", func(b *testing.B) {
		d := mustDeliverable(b, big)
		b.ReportAllocs()
		b.SetBytes(int64(len(big)))
		for b.Loop() {
			if r := p.Decide(d, Record{}); r.Verdict != VerdictRelease {
				b.Fatal(string(r.JSON()))
			}
		}
	})
	b.Run("ten_assertions_schema_1MiB_with_parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(big)))
		for b.Loop() {
			d, err := ParseDeliverable([]byte(big))
			if err != nil {
				b.Fatal(err)
			}
			if r := p.Decide(d, Record{}); r.Verdict != VerdictRelease {
				b.Fatal(string(r.JSON()))
			}
		}
	})
}

// deliverable1M is about 1 MiB: the 1 KiB shape with ~25,000 items, under
// a schema whose maxItems is raised to allow them.
func deliverable1M() string {
	var sb strings.Builder
	sb.WriteString(`{"rows":140,"name":"quarterly report","status":"ok","summary":"s","meta":{"author":"a","version":3},"items":[`)
	for i := 0; sb.Len() < 1<<20; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"item-%d","price":%d.5,"qty":%d}`, i, i%50+1, i%3+1)
	}
	sb.WriteString("]}")
	return sb.String()
}

// BenchmarkCompile is the cost the plan cache saves.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile([]byte(tenAssertions)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCache_Hit(b *testing.B) {
	c := NewCache(16)
	if _, err := c.Plan([]byte(tenAssertions)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Plan([]byte(tenAssertions)); err != nil {
			b.Fatal(err)
		}
	}
}

// procStatus returns a field of /proc/self/status in bytes, 0 where there
// is none.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetPeak collects the garbage, returns free memory to the system and
// resets the peak resident memory (VmHWM, on Linux); it returns the
// resident memory then, 0 where it cannot reset the peak.
func resetPeak() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	rss := procStatus("VmRSS")
	if rss == 0 || os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		return 0
	}
	return rss
}

// BenchmarkBudget_Hostile decides each hostile case of internal/hostile
// that compiles, on its parsed deliverable: the time a decision of the
// worst criteria takes, and the memory it adds at its peak (peak-MiB, the
// most of any run) for the units it spends.
func BenchmarkBudget_Hostile(b *testing.B) {
	cases, err := hostile.Cases()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		if c.Error != "" {
			continue
		}
		b.Run(c.Name, func(b *testing.B) {
			criteria, err := c.Criteria()
			if err != nil {
				b.Fatal(err)
			}
			p := mustPlan(b, string(criteria))
			d := mustDeliverable(b, string(c.Deliverable()))
			var peak, units int64
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				m := newMeter(p.budget)
				base := resetPeak()
				began := cpuTime()
				b.StartTimer()
				p.tier0Metered(d, m)
				b.StopTimer()
				cpu += cpuTime() - began
				if base > 0 {
					peak = max(peak, procStatus("VmHWM")-base)
				}
				units = m.budget - m.left
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(units), "units/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkBudget_Units measures what a unit costs, operation by
// operation: each case spends a budget of 20 million units to its end, so
// that ns/unit compares the costs the meter charges with the time they
// take. The costs are calibrated so that no operation takes much more
// than the expression loop of the first case.
func BenchmarkBudget_Units(b *testing.B) {
	repeat := func(n int, a string) string {
		return `{"assertions":[` + strings.TrimSuffix(strings.Repeat(a+",", n), ",") + `]}`
	}
	var items, obj []string
	for i := range 2000 {
		items = append(items, fmt.Sprintf(`{"id":"item-%d","price":%d.5,"qty":%d}`, i, i%50+1, i%3+1))
	}
	for i := range 5000 {
		obj = append(obj, fmt.Sprintf(`"key%07d":%d`, i, i))
	}
	text := strings.Repeat("ab", 200000)
	d := mustDeliverable(b, `{"short":"`+text[:2000]+`","text":"`+text+`","items":[`+strings.Join(items, ",")+
		`],"obj":{`+strings.Join(obj, ",")+`},"js":`+quote(`[`+strings.TrimSuffix(strings.Repeat(`{"a":[1,2,3],"b":"x"},`, 300), ",")+`]`)+`}`)
	for _, c := range []struct{ name, criteria string }{
		{"loop", repeat(256, `{"expr":"all(1..1000, all(1..100, # > 0))"}`)},
		{"loop_fields", repeat(256, `{"expr":"all(1..100, all(items, .price > 0 and .qty > 0))"}`)},
		{"map", repeat(256, `{"expr":"all(1..100, len(map(items, .price)) > 0)"}`)},
		{"string_of_int", repeat(256, `{"expr":"all(1..100000, string(#) != \"\")"}`)},
		{"concatenate", repeat(256, `{"expr":"all(1..100000, \"ab\" + \"cd\" != \"\")"}`)},
		{"repeat", repeat(256, `{"expr":"all(1..30, len(repeat(\"x\", 1000000)) > 0)"}`)},
		{"tojson", repeat(256, `{"expr":"all(1..1000, len(toJSON(items[0:40])) > 0)"}`)},
		{"string_of_maps", repeat(256, `{"expr":"all(1..1000, len(string(items[0:40])) > 0)"}`)},
		{"sort", repeat(256, `{"expr":"all(1..1000, len(sort(1..2000)) > 0)"}`)},
		{"uniq", repeat(256, `{"expr":"all(1..1000, len(uniq(1..300)) > 0)"}`)},
		{"deep_equal", repeat(256, `{"expr":"all(1..10000, items == items)"}`)},
		{"regex_expr", repeat(256, `{"expr":"all(1..10000, text[0:1000] matches \"[ab]{0,100}c\")"}`)},
		{"regex_op", repeat(256, `{"path":"short","op":"regex","value":"[ab]{0,100}c"}`)},
		{"rune_count", repeat(256, `{"expr":"all(1..10000, len(text) > 0)"}`)},
		{"upper", repeat(256, `{"expr":"all(1..40, len(upper(text)) > 0)"}`)},
		{"split", repeat(256, `{"expr":"all(1..40, len(split(text, \"a\")) > 0)"}`)},
		{"keys", repeat(256, `{"expr":"all(1..1000, len(keys(obj)) > 0)"}`)},
		{"fromjson", repeat(256, `{"expr":"all(1..1000, len(fromJSON(js)) > 0)"}`)},
		{"path_contains", repeat(256, `{"path":"items","op":"contains","value":{"id":"zz","price":1,"qty":1}}`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := mustPlan(b, c.criteria)
			p.budget = 20_000_000
			var units int64
			began := cpuTime()
			for b.Loop() {
				m := newMeter(p.budget)
				p.tier0Metered(d, m)
				units += m.budget - m.left
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
			b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(units), "cpu-ns/unit")
		})
	}
}
