package receipt

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is one member of a subject in RFC 8785 form: its name, and its
// value's canonical bytes.
type Member struct {
	Name  string
	Value []byte
}

// Canonicaler is a subject that gives its members in RFC 8785 form
// itself, so that Sign canonicalises it once, from the struct, instead of
// marshalling it to JSON and parsing the text back. The members must be
// exactly those encoding/json would write for the subject (omitted fields
// left out), each value in the bytes Canonical would give it: AppendString
// and AppendInt write strings and integers so, and CanonicalJSON anything
// else. Order does not matter; Sign sorts.
type Canonicaler interface {
	CanonicalMembers() ([]Member, error)
}

// AppendString appends s as an RFC 8785 string: quotes, backslashes and
// control characters escaped, everything else as it is, invalid UTF-8
// replaced by U+FFFD as encoding/json replaces it.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || n != 1 {
				i += n
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendInt appends n in RFC 8785 form, or returns ErrUnsafeInteger when a
// double cannot hold it exactly.
func AppendInt(dst []byte, n int64) ([]byte, error) {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return dst, fmt.Errorf("%w: %d", ErrUnsafeInteger, n)
	}
	return strconv.AppendInt(dst, n, 10), nil
}

// CheckIntegers returns ErrUnsafeInteger when the JSON text data holds an
// integer literal beyond 2^53, as CanonicalJSON does: for canonical bytes
// that are embedded in a larger canonical object without a second pass.
func CheckIntegers(data []byte) error { return checkIntegers(data) }

// canonicalObject writes members, and the binding under BindingMember, as
// one RFC 8785 object.
func canonicalObject(members []Member, b Binding) ([]byte, error) {
	for _, m := range members {
		if m.Name == BindingMember {
			return nil, ErrReserved
		}
	}
	bind := append(make([]byte, 0, 32+len(b.ID)+len(b.Type)+len(b.Issued)), `{"id":`...)
	bind = AppendString(bind, b.ID)
	bind = append(bind, `,"issued":`...)
	bind = AppendString(bind, b.Issued)
	bind = append(bind, `,"type":`...)
	bind = AppendString(bind, b.Type)
	bind = append(bind, '}')
	all := append(make([]Member, 0, len(members)+1), members...)
	return CanonicalObject(append(all, Member{Name: BindingMember, Value: bind}))
}

// CanonicalObject writes members as one RFC 8785 object: sorted by the
// UTF-16 code units of their names (it sorts members in place), each
// value as it is. A name given twice is an error.
func CanonicalObject(members []Member) ([]byte, error) {
	size := 2
	for _, m := range members {
		size += len(m.Name) + len(m.Value) + 4
	}
	all := members
	slices.SortFunc(all, func(x, y Member) int { return CompareNames(x.Name, y.Name) })
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, m := range all {
		if i > 0 {
			if all[i-1].Name == m.Name {
				return nil, fmt.Errorf("receipt: subject: duplicate member %q", m.Name)
			}
			out = append(out, ',')
		}
		out = AppendString(out, m.Name)
		out = append(out, ':')
		out = append(out, m.Value...)
	}
	return append(out, '}'), nil
}

// CompareNames orders member names as RFC 8785 sorts them: by their
// UTF-16 code units (byte order where both are ASCII).
func CompareNames(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
				return cmp.Compare(a[i], b[i])
			}
			return slices.Compare(utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:])))
		}
	}
	return cmp.Compare(len(a), len(b))
}
