package adjudicate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

const opsDeliverable = `{
	"rows": 140, "ratio": 0.5, "big": 9007199254740993, "name": "report-7",
	"empty": "", "none": null, "flag": false, "zero": 0,
	"tags": ["a", "b", 3], "meta": {"k": 1}, "nothing": [], "blank": {},
	"items": [{"id": "x1", "price": 2.5}, {"id": "x2", "price": 0}]
}`

func TestPathOp_Ops(t *testing.T) {
	d, err := ParseDeliverable([]byte(opsDeliverable))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		a      string // one assertion
		pass   bool
		detail string // a substring of the detail
	}{
		{"eq/OK", `{"path":"rows","op":"eq","value":140}`, true, "rows eq 140 -> true"},
		{"eq/OKFloatInt", `{"path":"rows","op":"eq","value":140.0}`, true, ""},
		{"eq/Mismatch", `{"path":"rows","op":"eq","value":141}`, false, "(got 140)"},
		{"eq/Missing", `{"path":"cols","op":"eq","value":1}`, false, `segment "cols" not found`},
		{"eq/TypeMismatch", `{"path":"rows","op":"eq","value":"140"}`, false, "(got 140)"},
		{"eq/FalseIsNotZero", `{"path":"flag","op":"eq","value":0}`, false, ""},
		{"eq/BigExact", `{"path":"big","op":"eq","value":9007199254740992}`, false, ""},
		{"eq/Object", `{"path":"meta","op":"eq","value":{"k":1.0}}`, true, ""},
		{"eq/Null", `{"path":"none","op":"eq","value":null}`, true, ""},
		{"ne/OK", `{"path":"name","op":"ne","value":"x"}`, true, ""},
		{"ne/Mismatch", `{"path":"name","op":"ne","value":"report-7"}`, false, ""},
		{"ne/Missing", `{"path":"nope","op":"ne","value":"x"}`, false, "not found"},
		{"ne/TypeMismatch", `{"path":"rows","op":"ne","value":"140"}`, true, ""},
		{"gt/OK", `{"path":"rows","op":"gt","value":100}`, true, ""},
		{"gt/Mismatch", `{"path":"rows","op":"gt","value":140}`, false, "(got 140)"},
		{"gt/Missing", `{"path":"items.5.price","op":"gt","value":1}`, false, `segment "5" not found (items has 2 items)`},
		{"gt/TypeMismatch", `{"path":"name","op":"gt","value":1}`, false, "cannot compare string"},
		{"gt/Strings", `{"path":"name","op":"gt","value":"report-1"}`, true, ""},
		{"gte/OK", `{"path":"rows","op":"gte","value":140}`, true, "rows gte 140 -> true"},
		{"gte/Mismatch", `{"path":"ratio","op":"gte","value":0.6}`, false, "(got 0.5)"},
		{"gte/Missing", `{"path":"meta.q","op":"gte","value":1}`, false, `segment "q" not found (meta)`},
		{"gte/TypeMismatch", `{"path":"flag","op":"gte","value":0}`, false, "cannot compare boolean"},
		{"lt/OK", `{"path":"items.1.price","op":"lt","value":1}`, true, ""},
		{"lt/Mismatch", `{"path":"items.0.price","op":"lt","value":1}`, false, "(got 2.5)"},
		{"lt/Missing", `{"path":"name.first","op":"lt","value":1}`, false, "is string, not an object or array"},
		{"lt/TypeMismatch", `{"path":"none","op":"lt","value":1}`, false, "cannot compare null"},
		{"lte/OK", `{"path":"zero","op":"lte","value":0}`, true, ""},
		{"lte/Mismatch", `{"path":"rows","op":"lte","value":139.5}`, false, ""},
		{"lte/Missing", `{"path":"tags.x","op":"lte","value":1}`, false, "not an index"},
		{"lte/TypeMismatch", `{"path":"tags","op":"lte","value":1}`, false, "cannot compare array"},
		{"contains/String", `{"path":"name","op":"contains","value":"port"}`, true, ""},
		{"contains/Array", `{"path":"tags","op":"contains","value":3.0}`, true, ""},
		{"contains/ObjectKey", `{"path":"meta","op":"contains","value":"k"}`, true, ""},
		{"contains/Mismatch", `{"path":"tags","op":"contains","value":"c"}`, false, ""},
		{"contains/Missing", `{"path":"x","op":"contains","value":"c"}`, false, "not found"},
		{"contains/TypeMismatch", `{"path":"rows","op":"contains","value":"1"}`, false, "contains needs a string, array or object"},
		{"contains/StringNumber", `{"path":"name","op":"contains","value":7}`, false, "a string contains only strings"},
		{"nonempty/OK", `{"path":"name","op":"nonempty"}`, true, "name nonempty -> true"},
		{"nonempty/EmptyString", `{"path":"empty","op":"nonempty"}`, false, ""},
		{"nonempty/Null", `{"path":"none","op":"nonempty"}`, false, ""},
		{"nonempty/EmptyArray", `{"path":"nothing","op":"nonempty"}`, false, ""},
		{"nonempty/EmptyObject", `{"path":"blank","op":"nonempty"}`, false, ""},
		{"nonempty/Zero", `{"path":"zero","op":"nonempty"}`, true, ""},
		{"nonempty/Missing", `{"path":"absent","op":"nonempty"}`, false, "not found"},
		{"regex/OK", `{"path":"name","op":"regex","value":"^report-[0-9]+$"}`, true, ""},
		{"regex/Unanchored", `{"path":"name","op":"regex","value":"port"}`, true, ""},
		{"regex/Mismatch", `{"path":"name","op":"regex","value":"^x"}`, false, ""},
		{"regex/Missing", `{"path":"nom","op":"regex","value":"^x"}`, false, "not found"},
		{"regex/TypeMismatch", `{"path":"rows","op":"regex","value":"1"}`, false, "regex needs a string"},
		{"root/Eq", `{"path":"","op":"contains","value":"rows"}`, true, ""},
		{"expr/OK", `{"expr":"all(items, .price >= 0) and rows > 100"}`, true, "-> true"},
		{"expr/Mismatch", `{"expr":"all(items, .price > 0)"}`, false, "-> false"},
		{"expr/Missing", `{"expr":"cols > 1"}`, false, "invalid operation"},
		{"expr/TypeMismatch", `{"expr":"name > 1"}`, false, "invalid operation"},
		{"expr/NotBool", `{"expr":"name"}`, false, "-> false"},
		{"expr/Deliverable", `{"expr":"deliverable.rows == 140 and len($env) > 3"}`, true, ""},
		{"expr/KeysSorted", `{"expr":"keys(meta) == ['k'] and keys({'b':1,'a':2}) == ['a','b']"}`, true, ""},
		{"expr/AddBounded", `{"expr":"len(reduce(1..64, #acc + #acc, 'xx')) > 0"}`, false, "string longer than"},
		{"expr/RepeatBounded", `{"expr":"len(repeat('x', 1000000) + repeat('y', 1000000)) > 0"}`, false, "string longer than"},
		{"expr/MemoryBudget", `{"expr":"len(map(1..2000000, #)) > 0"}`, false, "memory budget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile([]byte(`{"assertions":[` + tc.a + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			r := p.Decide(d, Record{})
			c := r.Checks[0]
			if c.Passed != tc.pass {
				t.Errorf("passed = %v, want %v: %s", c.Passed, tc.pass, c.Detail)
			}
			want := VerdictRelease
			if !tc.pass {
				want = VerdictRefund
			}
			if r.Verdict != want || r.Tier != TierZero {
				t.Errorf("verdict %s/%s, want %s/tier0", r.Verdict, r.Tier, want)
			}
			if !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("detail %q does not contain %q", c.Detail, tc.detail)
			}
		})
	}
}

func TestCompile_Errors(t *testing.T) {
	tests := []struct {
		name     string
		criteria string
		code     string
		names    string // the message names this
	}{
		{"ErrNotJSON", `{`, EInvalidCriteria, "not valid JSON"},
		{"ErrNotObject", `[]`, EInvalidCriteria, "must be a JSON object"},
		{"ErrUnknownField", `{"schema":{},"extra":1}`, EInvalidCriteria, `"extra"`},
		{"ErrDuplicateKey", `{"schema":{},"schema":{}}`, EInvalidCriteria, "canonicalise"},
		{"ErrUnknownOp", `{"assertions":[{"path":"a","op":"between","value":1}]}`, EInvalidAssertion, `assertions[0]: unknown op "between"`},
		{"ErrNoOp", `{"assertions":[{"path":"a"}]}`, EInvalidAssertion, "needs an op"},
		{"ErrNoValue", `{"assertions":[{"path":"a","op":"eq"}]}`, EInvalidAssertion, "needs a value"},
		{"ErrGtObject", `{"assertions":[{"path":"a","op":"gt","value":{}}]}`, EInvalidAssertion, "number or a string"},
		{"ErrNonemptyValue", `{"assertions":[{"path":"a","op":"nonempty","value":1}]}`, EInvalidAssertion, "no value"},
		{"ErrBadRegex", `{"assertions":[{"path":"a","op":"regex","value":"(a"}]}`, EInvalidAssertion, "assertions[0].value: not an RE2"},
		{"ErrBackreference", `{"assertions":[{"path":"a","op":"regex","value":"(a)\\1"}]}`, EInvalidAssertion, "RE2"},
		{"ErrEmptySegment", `{"assertions":[{"path":"a..b","op":"nonempty"}]}`, EInvalidAssertion, "empty segment"},
		{"ErrExprSyntax", `{"assertions":[{"expr":"rows >"}]}`, EInvalidAssertion, "assertions[0].expr: does not compile"},
		{"ErrExprNow", `{"assertions":[{"expr":"now() != nil"}]}`, EInvalidAssertion, "does not compile"},
		{"ErrExprDate", `{"assertions":[{"expr":"date('2024-01-01') != nil"}]}`, EInvalidAssertion, "does not compile"},
		{"ErrExprNotBool", `{"assertions":[{"expr":"1 * 2"}]}`, EInvalidAssertion, "does not compile"},
		{"ErrExprUnknownFunc", `{"assertions":[{"expr":"exec('rm') == 1"}]}`, EInvalidAssertion, "unknown function exec()"},
		{"ErrExprAndPath", `{"assertions":[{"expr":"true","path":"a"}]}`, EInvalidAssertion, "cannot be combined"},
		{"ErrExprTooBig", `{"assertions":[{"expr":"` + strings.Repeat("1+", 1500) + `1 > 0"}]}`, EInvalidAssertion, "assertions[0].expr"},
		{"ErrAssertionField", `{"assertions":[{"path":"a","op":"nonempty","weight":2}]}`, EInvalidAssertion, `"weight"`},
		{"ErrSemanticEmpty", `{"assertions":[{"semantic":true}]}`, EInvalidAssertion, "needs a description or a path"},
		{"ErrSchemaRef", `{"schema":{"properties":{"a":{"$ref":"#/x"}}}}`, EInvalidSchema, `schema.properties.a: keyword "$ref"`},
		{"ErrSchemaFormat", `{"schema":{"type":"string","format":"email"}}`, EInvalidSchema, `keyword "format"`},
		{"ErrSchemaAllOf", `{"schema":{"allOf":[]}}`, EInvalidSchema, `keyword "allOf"`},
		{"ErrSchemaDollarSchema", `{"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}`, EInvalidSchema, `keyword "$schema"`},
		{"ErrSchemaAdditionalSchema", `{"schema":{"additionalProperties":{"type":"string"}}}`, EInvalidSchema, "schema.additionalProperties: only false"},
		{"ErrSchemaArrayRoot", `{"schema":[]}`, EInvalidSchema, "must be an object"},
		{"ErrSchemaType", `{"schema":{"type":"float"}}`, EInvalidSchema, `unknown type "float"`},
		{"ErrSchemaPattern", `{"schema":{"pattern":"(?<=a)b"}}`, EInvalidSchema, "schema.pattern: not an RE2"},
		{"ErrSchemaNegative", `{"schema":{"minLength":-1}}`, EInvalidSchema, "schema.minLength"},
		{"ErrSchemaDepth", `{"schema":` + strings.Repeat(`{"items":`, 40) + `{}` + strings.Repeat(`}`, 40) + `}`, EInvalidSchema, "deeper than"},
		{"ErrCheckerHash", `{"checkers":[{"sha256":"abc"}]}`, EInvalidCriteria, "checkers[0]"},
		{"ErrCheckerField", `{"checkers":[{"sha256":"` + strings.Repeat("a", 64) + `","cpu":1}]}`, EInvalidCriteria, `checkers[0]: unknown field "cpu"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.criteria))
			if err == nil {
				t.Fatal("compiled")
			}
			if got := ErrorCode(err); got != tc.code {
				t.Errorf("code %q, want %q: %v", got, tc.code, err)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("message %q does not name %q", err.Error(), tc.names)
			}
		})
	}
}

func TestCompile_OK(t *testing.T) {
	// The design's example, and annotations the subset accepts.
	p, err := Compile([]byte(`{
		"schema": {"type": "object", "title": "t", "description": "d", "$comment": "c",
			"required": ["rows"], "properties": {"rows": {"type": "integer", "minimum": 0}}},
		"assertions": [
			{"path": "rows", "op": "gte", "value": 100},
			{"expr": "all(items, .price > 0)"},
			{"path": "summary", "op": "nonempty", "semantic": true, "description": "a faithful summary"}
		],
		"checkers": [{"sha256": "` + strings.Repeat("0", 64) + `", "fuel": 500000000, "memory_mib": 64}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Semantic() != 1 || len(p.Checkers()) != 1 {
		t.Errorf("semantic %d, checkers %d", p.Semantic(), len(p.Checkers()))
	}
}

func TestPlan_HashCanonical(t *testing.T) {
	a, err := Compile([]byte(`{"assertions":[{"path":"rows","op":"gte","value":100}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile([]byte("{ \"assertions\" : [ {\"value\":1e2, \"op\":\"gte\",\n\"path\":\"rows\"} ] }"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Errorf("hashes differ: %s %s", a.Hash(), b.Hash())
	}
	d, _ := ParseDeliverable([]byte(`{"rows":40}`))
	ra, rb := a.Decide(d, Record{}).JSON(), b.Decide(d, Record{}).JSON()
	if string(ra) != string(rb) {
		t.Errorf("results differ:\n%s\n%s", ra, rb)
	}
	c := NewCache(2)
	pa, _ := c.Plan([]byte(`{"assertions":[{"path":"rows","op":"gte","value":100}]}`))
	pb, _ := c.Plan([]byte(`{"assertions":[{"op":"gte","path":"rows","value":100.0}]}`))
	if pa != pb || c.Len() != 1 {
		t.Errorf("cache did not share the plan: %p %p len %d", pa, pb, c.Len())
	}
	for i := range 3 {
		if _, err := c.Plan([]byte(`{"assertions":[{"path":"rows","op":"gte","value":` + string(rune('1'+i)) + `}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Errorf("cache len %d, want 2", c.Len())
	}
	if _, err := c.Plan([]byte(`{"x":1}`)); ErrorCode(err) != EInvalidCriteria {
		t.Errorf("cache: %v", err)
	}
}

// TestCache_Spellings: a spelling seen before finds its plan without
// canonicalising, spellings of one plan share it up to maxSpellings, and an
// evicted plan takes its spellings with it.
func TestCache_Spellings(t *testing.T) {
	c := NewCache(2)
	spell := func(i int) []byte {
		return []byte(`{"assertions":[{"path":"rows","op":"gte","value":100}]` + strings.Repeat(" ", i) + `}`)
	}
	first, err := c.Plan(spell(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxSpellings + 2 {
		if p, err := c.Plan(spell(i)); err != nil || p != first {
			t.Fatalf("spelling %d: plan %p (want %p), %v", i, p, first, err)
		}
	}
	if n := len(c.bySpelling); n != maxSpellings {
		t.Errorf("%d spellings remembered, want %d", n, maxSpellings)
	}
	if p, err := c.Plan(first.Canonical()); err != nil || p != first {
		t.Errorf("canonical spelling: plan %p (want %p), %v", p, first, err)
	}
	for i := range 2 { // two other plans evict the first
		if _, err := c.Plan([]byte(`{"assertions":[{"path":"n","op":"eq","value":` + strconv.Itoa(i) + `}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 || len(c.bySpelling) != 2 {
		t.Errorf("after eviction: %d plans, %d spellings; want 2 and 2", c.Len(), len(c.bySpelling))
	}
	if p, err := c.Plan(spell(0)); err != nil || p == first || p.Hash() != first.Hash() {
		t.Errorf("evicted spelling: plan %p (the evicted one is %p), %v", p, first, err)
	}
	big := append([]byte(`{"assertions":[]`), bytes.Repeat([]byte(" "), MaxCriteriaBytes)...)
	if _, err := c.Plan(append(big, '}')); ErrorCode(err) != EInvalidCriteria {
		t.Errorf("criteria over the limit: %v", err)
	}
}

func TestParseDeliverable_Errors(t *testing.T) {
	for _, in := range []string{``, `{`, `{} {}`, `1e400`, `nul`} {
		if _, err := ParseDeliverable([]byte(in)); ErrorCode(err) != EInvalidDeliverable {
			t.Errorf("%q: %v", in, err)
		}
	}
	d, err := ParseDeliverable([]byte(`"a string\n"`))
	if err != nil || string(d.Artifact()) != "a string\n" {
		t.Errorf("string artifact %q, %v", d.Artifact(), err)
	}
	d, err = ParseDeliverable([]byte("{ \"a\" : [1, 2.50] }\n"))
	if err != nil || string(d.Artifact()) != `{"a":[1,2.50]}` {
		t.Errorf("json artifact %q, %v", d.Artifact(), err)
	}
	var v any
	if err := json.Unmarshal(d.Artifact(), &v); err != nil {
		t.Error(err)
	}
}
