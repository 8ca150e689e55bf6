package adjudicate

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the schema subset. A schema over any of them is rejected with
// EInvalidSchema.
const (
	MaxSchemaDepth      = 32   // nesting of properties and items
	MaxSchemaNodes      = 1024 // schemas in one tree, the root included
	MaxSchemaProperties = 256  // entries of one properties or required
	MaxSchemaArray      = 256  // entries of one enum or type array
	MaxSchemaString     = 4096 // bytes of one pattern, property name or string in enum/const
)

// schemaKeywords is the subset. Annotations (title, description, $comment)
// are accepted and change nothing; every other keyword is rejected.
var schemaKeywords = map[string]bool{
	"type": true, "required": true, "properties": true, "additionalProperties": true,
	"enum": true, "const": true, "minLength": true, "maxLength": true,
	"minItems": true, "maxItems": true, "items": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"pattern": true,
	"title":   true, "description": true, "$comment": true,
}

// Type bits of a schema's type keyword.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tString
	tInteger
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber, "string": tString, "integer": tInteger,
}

// schema is one compiled node of the subset.
type schema struct {
	boolean  *bool // a boolean schema: true accepts all, false none
	types    uint8 // 0: any type
	typeText string

	required     []string
	props        map[string]*schema
	propNames    []string // sorted, for a stable order of violations
	noAdditional bool

	enum     []any
	hasEnum  bool
	constV   any
	hasConst bool

	minLength, maxLength int // -1: absent
	minItems, maxItems   int // -1: absent
	items                *schema

	minimum, maximum, exclusiveMinimum, exclusiveMaximum any // nil: absent

	pattern *regexp.Regexp
	insts   int // the size of pattern's program
}

type schemaCompiler struct {
	nodes int
	insts int // of every pattern
}

// compileSchema compiles a decoded schema; it returns the compiler too,
// for the sizes it counted.
func compileSchema(v any) (*schema, *schemaCompiler, error) {
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, errorf(EInvalidSchema, fmt.Sprintf("schema: must be an object, got %s", typeName(v)), nil)
	}
	c := &schemaCompiler{}
	s, err := c.compile(v, "schema", 0)
	if err != nil {
		return nil, nil, err
	}
	return s, c, nil
}

func schemaErr(where, format string, args ...any) error {
	return errorf(EInvalidSchema, where+": "+fmt.Sprintf(format, args...), nil)
}

func (c *schemaCompiler) compile(v any, where string, depth int) (*schema, error) {
	if depth > MaxSchemaDepth {
		return nil, schemaErr(where, "nested deeper than %d", MaxSchemaDepth)
	}
	c.nodes++
	if c.nodes > MaxSchemaNodes {
		return nil, schemaErr(where, "more than %d schemas in one tree", MaxSchemaNodes)
	}
	if b, ok := v.(bool); ok {
		return &schema{boolean: &b, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, schemaErr(where, "a schema must be an object or a boolean, got %s", typeName(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !schemaKeywords[k] {
			return nil, schemaErr(where, "keyword %q is not in the bounded schema subset (this is not full JSON Schema)", k)
		}
	}
	s := &schema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	for _, k := range keys {
		val := m[k]
		at := where + "." + k
		var err error
		switch k {
		case "type":
			err = s.setType(val, at)
		case "required":
			err = s.setRequired(val, at)
		case "properties":
			err = c.setProperties(s, val, at, depth)
		case "additionalProperties":
			b, ok := val.(bool)
			if !ok {
				return nil, schemaErr(at, "only false (or true) is supported, not a schema")
			}
			s.noAdditional = !b
		case "enum":
			arr, ok := val.([]any)
			if !ok {
				return nil, schemaErr(at, "must be an array")
			}
			if len(arr) > MaxSchemaArray {
				return nil, schemaErr(at, "more than %d entries", MaxSchemaArray)
			}
			if err := checkLiteral(val, at); err != nil {
				return nil, err
			}
			s.enum, s.hasEnum = arr, true
		case "const":
			if err := checkLiteral(val, at); err != nil {
				return nil, err
			}
			s.constV, s.hasConst = val, true
		case "minLength":
			s.minLength, err = count(val, at)
		case "maxLength":
			s.maxLength, err = count(val, at)
		case "minItems":
			s.minItems, err = count(val, at)
		case "maxItems":
			s.maxItems, err = count(val, at)
		case "items":
			s.items, err = c.compile(val, at, depth+1)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if !isNumber(val) {
				return nil, schemaErr(at, "must be a number, got %s", typeName(val))
			}
			switch k {
			case "minimum":
				s.minimum = val
			case "maximum":
				s.maximum = val
			case "exclusiveMinimum":
				s.exclusiveMinimum = val
			case "exclusiveMaximum":
				s.exclusiveMaximum = val
			}
		case "pattern":
			p, ok := val.(string)
			if !ok {
				return nil, schemaErr(at, "must be a string")
			}
			if len(p) > MaxSchemaString {
				return nil, schemaErr(at, "longer than %d bytes", MaxSchemaString)
			}
			re, rerr := regexp.Compile(p)
			if rerr != nil {
				return nil, errorf(EInvalidSchema, at+": not an RE2 regular expression: "+rerr.Error(), rerr)
			}
			s.insts = regexInsts(p)
			if s.insts > MaxRegexInsts {
				return nil, schemaErr(at, "compiles to %d instructions, over the limit of %d (MaxRegexInsts)", s.insts, MaxRegexInsts)
			}
			c.insts += s.insts
			s.pattern = re
		case "title", "description", "$comment":
			if _, ok := val.(string); !ok {
				return nil, schemaErr(at, "must be a string")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *schema) setType(val any, at string) error {
	var names []string
	switch x := val.(type) {
	case string:
		names = []string{x}
	case []any:
		if len(x) == 0 || len(x) > len(typeBits) {
			return schemaErr(at, "must name 1 to %d types", len(typeBits))
		}
		for _, e := range x {
			n, ok := e.(string)
			if !ok {
				return schemaErr(at, "type names must be strings")
			}
			names = append(names, n)
		}
	default:
		return schemaErr(at, "must be a type name or an array of them")
	}
	for _, n := range names {
		bit, ok := typeBits[n]
		if !ok {
			return schemaErr(at, "unknown type %q", n)
		}
		if s.types&bit != 0 {
			return schemaErr(at, "type %q named twice", n)
		}
		s.types |= bit
	}
	s.typeText = strings.Join(names, " or ")
	return nil
}

func (s *schema) setRequired(val any, at string) error {
	arr, ok := val.([]any)
	if !ok {
		return schemaErr(at, "must be an array of property names")
	}
	if len(arr) > MaxSchemaProperties {
		return schemaErr(at, "more than %d names", MaxSchemaProperties)
	}
	seen := map[string]bool{}
	for _, e := range arr {
		n, ok := e.(string)
		if !ok {
			return schemaErr(at, "must be an array of property names")
		}
		if len(n) > MaxSchemaString {
			return schemaErr(at, "a name is longer than %d bytes", MaxSchemaString)
		}
		if seen[n] {
			return schemaErr(at, "%q named twice", n)
		}
		seen[n] = true
		s.required = append(s.required, n)
	}
	return nil
}

func (c *schemaCompiler) setProperties(s *schema, val any, at string, depth int) error {
	m, ok := val.(map[string]any)
	if !ok {
		return schemaErr(at, "must be an object")
	}
	if len(m) > MaxSchemaProperties {
		return schemaErr(at, "more than %d properties", MaxSchemaProperties)
	}
	s.props = make(map[string]*schema, len(m))
	for n := range m {
		s.propNames = append(s.propNames, n)
	}
	sort.Strings(s.propNames)
	for _, n := range s.propNames {
		if len(n) > MaxSchemaString {
			return schemaErr(at, "a property name is longer than %d bytes", MaxSchemaString)
		}
		sub, err := c.compile(m[n], at+"."+pathKey(n), depth+1)
		if err != nil {
			return err
		}
		s.props[n] = sub
	}
	return nil
}

// count reads a non-negative integer bound; 2.0 is 2.
func count(val any, at string) (int, error) {
	switch x := val.(type) {
	case int:
		if x >= 0 {
			return x, nil
		}
	case float64:
		if isIntegral(x) && x >= 0 && x < 1<<53 {
			return int(x), nil
		}
	}
	return 0, schemaErr(at, "must be a non-negative integer")
}

// checkLiteral bounds the strings inside an enum or const value.
func checkLiteral(v any, at string) error {
	switch x := v.(type) {
	case string:
		if len(x) > MaxSchemaString {
			return schemaErr(at, "a string longer than %d bytes", MaxSchemaString)
		}
	case []any:
		for _, e := range x {
			if err := checkLiteral(e, at); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range x {
			if len(k) > MaxSchemaString {
				return schemaErr(at, "a key longer than %d bytes", MaxSchemaString)
			}
			if err := checkLiteral(e, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// pathKey renders one property name for a location: plain names as they
// are, others quoted.
func pathKey(n string) string {
	if n == "" || strings.ContainsAny(n, ". \"[]") || !utf8.ValidString(n) {
		return strconv.Quote(n)
	}
	return n
}

// loc is one step of a location inside the deliverable: an object key,
// or an array index when index >= 0.
type loc struct {
	key   string
	index int
}

// violations collects what a value got wrong, keeping the first few. It
// keeps the current location as a stack, rendered only for a violation,
// so that validating a valid value allocates nothing.
type violations struct {
	list  []string
	n     int
	stack []loc
}

const maxViolations = 8

func (vs *violations) push(key string, index int) { vs.stack = append(vs.stack, loc{key, index}) }
func (vs *violations) pop()                       { vs.stack = vs.stack[:len(vs.stack)-1] }

func (vs *violations) where() string {
	var b strings.Builder
	b.WriteString("$")
	for _, l := range vs.stack {
		b.WriteByte('.')
		if l.index >= 0 {
			b.WriteString(strconv.Itoa(l.index))
		} else {
			b.WriteString(pathKey(l.key))
		}
	}
	return b.String()
}

func (vs *violations) add(format string, args ...any) {
	if vs.keep() {
		vs.record(format, args...)
	}
}

// keep counts a violation and reports whether it is among the few kept:
// a caller whose message costs work to render renders it only then.
func (vs *violations) keep() bool {
	vs.n++
	return len(vs.list) < maxViolations
}

// record renders a violation that keep kept.
func (vs *violations) record(format string, args ...any) {
	vs.list = append(vs.list, vs.where()+": "+fmt.Sprintf(format, args...))
}

func (vs *violations) String() string {
	s := strings.Join(vs.list, "; ")
	if vs.n > len(vs.list) {
		s += fmt.Sprintf("; and %d more", vs.n-len(vs.list))
	}
	return s
}

// validate checks v against s and records every violation, charging its
// work to m; once the budget has run out it stops.
func (s *schema) validate(v any, vs *violations, m *meter) {
	if m.charge(costNode) != nil {
		return
	}
	if s.boolean != nil {
		if !*s.boolean {
			vs.add("no value is allowed here")
		}
		return
	}
	if s.types != 0 && !s.typeOK(v) {
		vs.add("expected %s, got %s", s.typeText, typeName(v))
		return
	}
	if s.hasConst && !equalMetered(v, s.constV, m) && !m.exhausted && vs.keep() {
		vs.record("expected the constant %s, got %s", brief(s.constV), briefMetered(v, m))
	}
	if s.hasEnum {
		found := false
		for _, e := range s.enum {
			if equalMetered(v, e, m) {
				found = true
				break
			}
		}
		if !found && !m.exhausted && vs.keep() {
			vs.record("%s is not one of %s", briefMetered(v, m), brief(s.enum))
		}
	}
	if m.exhausted {
		return
	}
	switch x := v.(type) {
	case string:
		if s.minLength >= 0 || s.maxLength >= 0 {
			if m.scan(int64(len(x))) != nil {
				return
			}
			n := utf8.RuneCountInString(x)
			if s.minLength >= 0 && n < s.minLength {
				vs.add("string of %d code points is shorter than minLength %d", n, s.minLength)
			}
			if s.maxLength >= 0 && n > s.maxLength {
				vs.add("string of %d code points is longer than maxLength %d", n, s.maxLength)
			}
		}
		if s.pattern != nil {
			if m.regex(int64(len(x)), s.insts) != nil {
				return
			}
			if !s.pattern.MatchString(x) && vs.keep() {
				vs.record("%s does not match pattern %q", briefMetered(x, m), s.pattern.String())
			}
		}
	case int, float64:
		if s.minimum != nil {
			if c, _ := compareNumbers(x, s.minimum); c < 0 {
				vs.add("%s is less than minimum %s", brief(x), brief(s.minimum))
			}
		}
		if s.maximum != nil {
			if c, _ := compareNumbers(x, s.maximum); c > 0 {
				vs.add("%s is greater than maximum %s", brief(x), brief(s.maximum))
			}
		}
		if s.exclusiveMinimum != nil {
			if c, _ := compareNumbers(x, s.exclusiveMinimum); c <= 0 {
				vs.add("%s is not greater than exclusiveMinimum %s", brief(x), brief(s.exclusiveMinimum))
			}
		}
		if s.exclusiveMaximum != nil {
			if c, _ := compareNumbers(x, s.exclusiveMaximum); c >= 0 {
				vs.add("%s is not less than exclusiveMaximum %s", brief(x), brief(s.exclusiveMaximum))
			}
		}
	case []any:
		if s.minItems >= 0 && len(x) < s.minItems {
			vs.add("array of %d items has fewer than minItems %d", len(x), s.minItems)
		}
		if s.maxItems >= 0 && len(x) > s.maxItems {
			vs.add("array of %d items has more than maxItems %d", len(x), s.maxItems)
		}
		if s.items != nil {
			for i, e := range x {
				vs.push("", i)
				s.items.validate(e, vs, m)
				vs.pop()
				if m.exhausted {
					return
				}
			}
		}
	case map[string]any:
		if m.charge(mul(int64(len(s.required)+len(s.propNames)), costNode)) != nil {
			return
		}
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				vs.add("required property %q is missing", r)
			}
		}
		for _, n := range s.propNames {
			if e, ok := x[n]; ok {
				vs.push(n, -1)
				s.props[n].validate(e, vs, m)
				vs.pop()
				if m.exhausted {
					return
				}
			}
		}
		if s.noAdditional {
			if m.charge(mul(int64(len(x)), costEntry)) != nil {
				return
			}
			var extra []string
			for k := range x {
				if m.scan(int64(len(k))) != nil {
					return
				}
				if _, ok := s.props[k]; !ok {
					extra = append(extra, k)
				}
			}
			if len(extra) > 0 {
				if m.charge(mul(mul(int64(len(extra)), log2(int64(len(extra)))), costCompare)) != nil {
					return
				}
				sort.Strings(extra)
				for _, k := range extra {
					vs.add("property %q is not allowed (additionalProperties is false)", k)
				}
			}
		}
	}
}

func (s *schema) typeOK(v any) bool {
	switch x := v.(type) {
	case nil:
		return s.types&tNull != 0
	case bool:
		return s.types&tBoolean != 0
	case string:
		return s.types&tString != 0
	case int:
		return s.types&(tInteger|tNumber) != 0
	case float64:
		return s.types&tNumber != 0 || (s.types&tInteger != 0 && isIntegral(x))
	case []any:
		return s.types&tArray != 0
	case map[string]any:
		return s.types&tObject != 0
	}
	return false
}
