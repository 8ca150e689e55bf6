package adjudicate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// briefMax is how many bytes of a value a detail shows.
const briefMax = 80

// brief renders v as compact JSON for a detail, cut to briefMax bytes:
// truncate(marshalNoEscape(v), briefMax), without rendering more of v than
// the cut keeps.
func brief(v any) string { return briefMetered(v, nil) }

// briefMetered is brief with the elements it visits charged to m (nil for
// none): a deliverable's value may be large, and only its first bytes are
// shown.
func briefMetered(v any, m *meter) string {
	w := briefWriter{limit: briefMax + 1 + utf8.UTFMax, m: m}
	if !w.value(v) {
		b, err := marshalNoEscape(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		return truncate(string(b), briefMax)
	}
	return truncate(string(w.buf), briefMax)
}

// briefWriter writes the compact JSON of a decoded value (as
// encoding/json does, without HTML escaping) until it holds limit bytes.
type briefWriter struct {
	buf   []byte
	limit int
	m     *meter
}

func (w *briefWriter) full() bool {
	return len(w.buf) >= w.limit || (w.m != nil && w.m.exhausted)
}

// value writes v; it reports false for a type it does not know.
func (w *briefWriter) value(v any) bool {
	if w.full() {
		return true
	}
	if w.m != nil {
		_ = w.m.elems(1)
	}
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
	case float64:
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		w.buf = append(w.buf, b...)
	case string:
		w.string(x)
	case []any:
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if w.full() {
				return true
			}
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if !w.value(e) {
				return false
			}
		}
		w.buf = append(w.buf, ']')
	case map[string]any:
		return w.object(x)
	default:
		return false
	}
	return true
}

// string writes s quoted, as much of it as the limit needs: every byte of
// s becomes at least one byte of output, so a prefix a few bytes longer
// than what is missing renders the same bytes up to the limit.
func (w *briefWriter) string(s string) {
	if need := w.limit - len(w.buf) + 2*utf8.UTFMax; len(s) > need {
		s = s[:need]
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.buf = append(w.buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// object writes m's members in key order. A large object's keys are found
// in order one at a time, for the few the limit leaves room for, rather
// than all sorted.
func (w *briefWriter) object(m map[string]any) bool {
	w.buf = append(w.buf, '{')
	member := func(i int, k string) bool {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.string(k)
		w.buf = append(w.buf, ':')
		return w.value(m[k])
	}
	const sortAll = 64
	if len(m) <= sortAll {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if w.full() {
				return true
			}
			if !member(i, k) {
				return false
			}
		}
	} else {
		var prev string
		for i := range len(m) {
			if w.full() {
				return true
			}
			if w.m != nil {
				_ = w.m.elems(int64(len(m)))
			}
			next, found := "", false
			for k := range m {
				if (i == 0 || k > prev) && (!found || k < next) {
					next, found = k, true
				}
			}
			if !member(i, next) {
				return false
			}
			prev = next
		}
	}
	w.buf = append(w.buf, '}')
	return true
}
