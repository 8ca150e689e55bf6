package receipt

import (
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
