package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gowebpki/jcs"
)

// maxSafeInteger is 2^53, the largest integer an IEEE 754 double holds
// exactly. RFC 8785 reads every number as a double, so a larger integer
// would be signed as a different value than the one written in the receipt.
const maxSafeInteger = 1 << 53

// ErrUnsafeInteger reports an integer literal that an IEEE 754 double cannot
// hold exactly (RFC 8785 section 3.2.2.3, I-JSON). Send such values as
// strings.
var ErrUnsafeInteger = errors.New("receipt: integer beyond 2^53 cannot be canonicalised exactly")

// Canonical returns the RFC 8785 (JCS) canonical bytes of v, marshalled with
// encoding/json first.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("receipt: marshal: %w", err)
	}
	return CanonicalJSON(b)
}

// CanonicalJSON returns the RFC 8785 (JCS) canonical form of the JSON text
// data. It rejects duplicate object keys, invalid UTF-8, lone surrogates and
// integer literals beyond 2^53 (ErrUnsafeInteger).
func CanonicalJSON(data []byte) ([]byte, error) {
	if err := checkIntegers(data); err != nil {
		return nil, err
	}
	if isCanonical(data) {
		// Most text signed here was written canonical (a plan's
		// criteria, a stored subject): a scan instead of a parse.
		return bytes.Clone(data), nil
	}
	out, err := jcs.Transform(data)
	if err != nil {
		return nil, fmt.Errorf("receipt: canonicalise: %w", err)
	}
	return out, nil
}

// checkIntegers scans JSON text for integer literals (no fraction, no
// exponent) whose magnitude exceeds 2^53. It does not validate the JSON;
// jcs does that next.
func checkIntegers(data []byte) error {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		start := i
		integer := true
		for i < len(data) {
			d := data[i]
			if d == '.' || d == 'e' || d == 'E' {
				integer = false
			} else if d != '-' && d != '+' && (d < '0' || d > '9') {
				break
			}
			i++
		}
		tok := data[start:i]
		i-- // the loop's i++ moves to the byte after the number
		digits := len(tok)
		if tok[0] == '-' {
			digits--
		}
		if !integer || digits < 16 {
			continue
		}
		n, err := strconv.ParseInt(string(tok), 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return fmt.Errorf("%w: %s", ErrUnsafeInteger, tok)
		}
	}
	return nil
}

// maxCanonicalDepth bounds the nesting isCanonical follows; deeper text
// goes through jcs.
const maxCanonicalDepth = 64

// isCanonical reports whether data is already in RFC 8785 form, within a
// subset whose canonical form is plainly the text itself: no whitespace;
// strings of printable ASCII with no escapes; integers written in the
// shortest way (no fraction, exponent, leading zero or "-0"; checkIntegers
// bounds their size); object members in increasing order of their names,
// which, being ASCII, is the order of RFC 8785 (UTF-16 code units). Text
// outside the subset (a float, an escape, a non-ASCII character, a member
// out of order) is not necessarily other than canonical: it goes through
// jcs, which knows.
func isCanonical(data []byte) bool {
	end, ok := canonicalValue(data, 0, 0)
	return ok && end == len(data)
}

// canonicalValue scans the value at data[i:] and returns where it ends,
// and whether it is in isCanonical's subset.
func canonicalValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxCanonicalDepth {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return canonicalString(data, i)
	case c == '-' || c >= '0' && c <= '9':
		j := i
		if c == '-' {
			j++
		}
		if j >= len(data) || data[j] < '0' || data[j] > '9' {
			return 0, false
		}
		if data[j] == '0' {
			// 0 alone; not -0, not 01.
			if c == '-' {
				return 0, false
			}
			j++
		} else {
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
		}
		if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
			return 0, false
		}
		return j, true
	case c == '[':
		i++
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonicalValue(data, i, depth+1); !ok || i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case ']':
				return i + 1, true
			case ',':
				i++
			default:
				return 0, false
			}
		}
	case c == '{':
		i++
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for i < len(data) && data[i] == '"' {
			end, ok := canonicalString(data, i)
			if !ok || end >= len(data) || data[end] != ':' {
				return 0, false
			}
			name := data[i+1 : end-1]
			if prev != nil && bytes.Compare(prev, name) >= 0 {
				return 0, false // out of order, or a duplicate
			}
			prev = name
			if i, ok = canonicalValue(data, end+1, depth+1); !ok || i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case '}':
				return i + 1, true
			case ',':
				i++
			default:
				return 0, false
			}
		}
		return 0, false
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(data[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

// canonicalString scans the string at data[i:], its opening quote, and
// returns where it ends; only printable ASCII without escapes is in the
// subset.
func canonicalString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return 0, false
		}
	}
	return 0, false
}
