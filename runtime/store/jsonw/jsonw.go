// Package jsonw writes the JSON of the services' hottest stored records by
// hand, byte for byte what encoding/json writes for them, without its
// reflection, its re-scan of embedded raw JSON and its allocations. It
// writes only what it can write exactly: a string or raw value it would
// have to escape, a time outside the years 0 to 9999 or not in UTC, a
// number that is not finite, and the writer gives up (OK false), so that
// the caller falls back on encoding/json. Each record's writer is tested
// against encoding/json on random values.
package jsonw

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Object writes one JSON object, member by member, in the order the
// caller writes them: the order of the struct's fields.
type Object struct {
	b    []byte
	n    int  // members written
	fail bool // a member could not be written exactly
}

// NewObject starts an object at the end of b (nil, or a buffer's b[:0]);
// for nil, in a buffer the size of most stored records.
func NewObject(b []byte) Object {
	if b == nil {
		b = make([]byte, 0, 256)
	}
	return Object{b: append(b, '{')}
}

// Bytes ends the object and returns it; ok is false when a member could
// not be written as encoding/json writes it.
func (o *Object) Bytes() (b []byte, ok bool) {
	if o.fail {
		return nil, false
	}
	return append(o.b, '}'), true
}

func (o *Object) name(name string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

// String writes a string member.
func (o *Object) String(name, v string) {
	o.name(name)
	o.str(v)
}

// StringOmitEmpty writes a string member unless v is empty (omitempty).
func (o *Object) StringOmitEmpty(name, v string) {
	if v != "" {
		o.String(name, v)
	}
}

func (o *Object) str(v string) {
	if !Plain(v) {
		o.fail = true
		return
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, v...)
	o.b = append(o.b, '"')
}

// Int writes an integer member.
func (o *Object) Int(name string, v int64) {
	o.name(name)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// IntOmitEmpty writes an integer member unless v is 0 (omitempty).
func (o *Object) IntOmitEmpty(name string, v int64) {
	if v != 0 {
		o.Int(name, v)
	}
}

// Uint writes an unsigned integer member.
func (o *Object) Uint(name string, v uint64) {
	o.name(name)
	o.b = strconv.AppendUint(o.b, v, 10)
}

// Float writes a float64 member as encoding/json does (ES6 number form).
func (o *Object) Float(name string, f float64) {
	o.name(name)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		o.fail = true
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	o.b = strconv.AppendFloat(o.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(o.b); n >= 4 && o.b[n-4] == 'e' && o.b[n-3] == '-' && o.b[n-2] == '0' {
			o.b[n-2] = o.b[n-1]
			o.b = o.b[:n-1]
		}
	}
}

// Time writes a time member as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds), for a time in UTC.
func (o *Object) Time(name string, t time.Time) {
	o.name(name)
	if y := t.Year(); y < 0 || y > 9999 || t.Location() != time.UTC {
		o.fail = true
		return
	}
	o.b = append(o.b, '"')
	o.b = t.AppendFormat(o.b, time.RFC3339Nano)
	o.b = append(o.b, '"')
}

// TimeOmitZero writes a time member unless t is the zero time (omitzero).
func (o *Object) TimeOmitZero(name string, t time.Time) {
	if !t.IsZero() {
		o.Time(name, t)
	}
}

// Raw writes a member whose value is JSON already, as encoding/json
// writes a json.RawMessage: compact, and with <, > and & escaped, so only
// a value with no whitespace and none of those is written here.
func (o *Object) Raw(name string, v []byte) {
	o.name(name)
	if len(v) == 0 || !compactPlain(v) {
		o.fail = true
		return
	}
	o.b = append(o.b, v...)
}

// RawOmitEmpty writes a raw member unless v is empty (omitempty).
func (o *Object) RawOmitEmpty(name string, v []byte) {
	if len(v) > 0 {
		o.Raw(name, v)
	}
}

// Strings writes a member that is a list of strings; nil is null.
func (o *Object) Strings(name string, vs []string) {
	o.name(name)
	if vs == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = append(o.b, '[')
	for i, v := range vs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.str(v)
	}
	o.b = append(o.b, ']')
}

// StringsOmitEmpty writes a list member unless it is empty (omitempty).
func (o *Object) StringsOmitEmpty(name string, vs []string) {
	if len(vs) > 0 {
		o.Strings(name, vs)
	}
}

// IntMap writes a member that is a map of integers, its keys sorted as
// encoding/json sorts them; nil is null.
func (o *Object) IntMap(name string, m map[string]int64) {
	o.name(name)
	if m == nil {
		o.b = append(o.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	o.b = append(o.b, '{')
	for i, k := range keys {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.str(k)
		o.b = append(o.b, ':')
		o.b = strconv.AppendInt(o.b, m[k], 10)
	}
	o.b = append(o.b, '}')
}

// IntMapOmitEmpty writes a map member unless it is empty (omitempty).
func (o *Object) IntMapOmitEmpty(name string, m map[string]int64) {
	if len(m) > 0 {
		o.IntMap(name, m)
	}
}

// Plain reports whether encoding/json writes s between quotes as it is:
// printable ASCII but for the quote, the backslash and <, > and &, which
// it escapes.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// compactPlain reports whether encoding/json copies the raw JSON v as it
// is: ASCII with no whitespace (so compact, if valid) and nothing it
// escapes (<, >, &, and control characters). Validity is the caller's:
// v is JSON this program wrote.
func compactPlain(v []byte) bool {
	for _, c := range v {
		if c <= 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
