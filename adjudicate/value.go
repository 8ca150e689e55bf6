package adjudicate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Values: a decoded JSON value is nil, bool, string, int (an integer literal
// that fits in int), float64 (any other number), []any or map[string]any.
// Integers are kept exact so that 9007199254740993 is not 9007199254740992;
// 1.0 decodes as float64 and is still an integer to the schema.

// decodeJSON decodes exactly one JSON value. Trailing bytes other than
// white space are an error.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return normalize(v)
}

// normalize replaces every json.Number in v, in place, by an int or float64.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return parseNumber(string(x))
	case []any:
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case map[string]any:
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	}
	return v, nil
}

func parseNumber(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
			return int(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %s is out of range", s)
	}
	return f, nil
}

// typeName is the JSON type of v as the schema names it, with integral
// numbers named "integer".
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int:
		return "integer"
	case float64:
		if isIntegral(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func isIntegral(f float64) bool {
	return f == math.Trunc(f) && !math.IsInf(f, 0)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, float64:
		return true
	}
	return false
}

// compareNumbers orders two numbers exactly, whether int or float64.
// It reports false when either is not a number.
func compareNumbers(a, b any) (int, bool) {
	switch x := a.(type) {
	case int:
		switch y := b.(type) {
		case int:
			return cmpInt(x, y), true
		case float64:
			return -cmpFloatInt(y, x), true
		}
	case float64:
		switch y := b.(type) {
		case int:
			return cmpFloatInt(x, y), true
		case float64:
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
	}
	return 0, false
}

func cmpInt(x, y int) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// cmpFloatInt compares f with i without rounding i.
func cmpFloatInt(f float64, i int) int {
	const two63 = 9223372036854775808.0
	switch {
	case f >= two63:
		return 1
	case f < -two63:
		return -1
	case isIntegral(f):
		return cmpInt(int(f), i)
	}
	// f has a fraction, so |f| < 2^52 and float64(i) orders correctly
	// against it even when rounded.
	if f < float64(i) {
		return -1
	}
	return 1
}

// equal is JSON equality: numbers by value (1 == 1.0), no coercion between
// types (false != 0), arrays element-wise, objects by key set and values.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int, float64:
		c, ok := compareNumbers(a, b)
		return ok && c == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// equalMetered is equal with the work charged to m: a comparison per
// element, an entry per key read, and the bytes of strings compared. Once the budget has run out
// it reports false.
func equalMetered(a, b any, m *meter) bool {
	if m.charge(costCompare) != nil {
		return false
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		if len(x) == len(y) && m.scan(int64(len(x))) != nil {
			return false
		}
		return x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalMetered(x[i], y[i], m) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			if m.charge(costEntry) != nil || m.scan(int64(len(k))) != nil {
				return false
			}
			yv, ok := y[k]
			if !ok || !equalMetered(xv, yv, m) {
				return false
			}
		}
		return true
	}
	return equal(a, b)
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// marshalNoEscape is json.Marshal without HTML escaping and without the
// trailing newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
