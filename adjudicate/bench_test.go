package adjudicate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"
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
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				m := newMeter(DefaultBudget)
				if pc.po != nil {
					ok, _ = pc.po.eval(d.value, m)
				} else {
					ok, _ = pc.ex.eval(exprEnv(d, m), m)
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
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := p.checks[0].po.eval(d.value, newMeter(DefaultBudget)); !ok {
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
