// Package ident states the one grammar that ids and free text follow in
// every Assay service: the escrow court's buyers and sellers, the market's
// agents, the judgment matters' requesters, solvers, key ids and tenants.
//
// # Ids
//
// An id (an agent's DID such as did:nanda:buyer or did:key:z6Mk…, a plain
// agent name such as g17-mathema, a principal's key id or tenant) is:
//
//   - 1 to MaxIDBytes (256) bytes of valid UTF-8;
//   - made only of graphic characters: letters, marks, digits, punctuation
//     and symbols (Unicode categories L, M, N, P, S). So no whitespace of
//     any kind, no control characters (NUL, C0, DEL, C1), no format
//     characters (which include the bidi controls U+061C, U+200E, U+200F,
//     U+202A to U+202E and U+2066 to U+2069, zero-width characters and the
//     byte order mark), no private-use, surrogate or unassigned code points;
//   - free of '/', '\' and '*', so that an id is never a path, a path
//     segment or a wildcard in a key, a URL or a shell;
//   - not "." or "..".
//
// Everything else is allowed, including ':', '#', '%', '@', '+', '=' and
// non-ASCII letters, which DIDs and agent names use.
//
// # Text
//
// Free text (reasons, titles, descriptions) is valid UTF-8, holds no
// control character except tab and newline (so no NUL and no carriage
// return), no bidi control (the list above), and is at most the field's
// stated number of bytes. Text is never repaired: invalid input is refused
// with an error that says what is wrong, never replaced.
package ident

import (
	"crypto/rand"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/assayhq/assay/runtime/fault"
)

// NewID returns a fresh id for a record a service creates (a contract, a
// listing, a matter): a ULID, 26 characters of Crockford's base 32 such as
// 01M8TPH5D3SNQHND4Q02GH4ZCF, whose first 48 bits are the Unix time in
// milliseconds and whose other 80 are crypto random. So ids sort by the
// millisecond they were made in, and two never collide in practice,
// whichever node made them.
//
// That they sort is for badger: the keys of the records in flight, all
// made in the last seconds, sit together at the end of each sorted range
// of its memtable, where every write and read of them walks memory the
// processor has just walked. Random ids scatter the same keys over the
// whole memtable, and the court spent about a tenth more CPU on a case
// with them. cmd/assay picks RandomID for PostgreSQL.
func NewID() string {
	return ulid.MustNew(ulid.Now(), rand.Reader).String()
}

// RandomID returns a fresh id in the same 26 characters as NewID's, random
// in all its 128 bits: for a store on which ids that sort by time make
// transactions conflict (PostgreSQL, whose SERIALIZABLE transactions
// lock the index pages they read).
func RandomID() string {
	var id ulid.ULID
	rand.Read(id[:]) // never fails (crypto/rand)
	return id.String()
}

// MaxIDBytes is the longest id, in bytes.
const MaxIDBytes = 256

// ECodeInvalidAgent is the code of an id that breaks the grammar.
const ECodeInvalidAgent = "invalid_agent"

// Agent checks that s is an id of the grammar above. Its error is a
// fault.Error of kind Invalid and code invalid_agent whose message names
// what is wrong, e.g. `agent id holds U+202E (a bidi control) at byte 4`.
func Agent(s string) error {
	if msg := checkID(s); msg != "" {
		return fault.New(fault.Invalid, ECodeInvalidAgent, "agent id %s", msg)
	}
	return nil
}

// ID checks s like Agent, but its error has the given code and a message
// that starts with field: for services whose contract names the field and
// the code, e.g. ID("buyer", "invalid_did", s).
func ID(field, code, s string) error {
	if msg := checkID(s); msg != "" {
		return fault.New(fault.Invalid, code, "%s %s", field, msg)
	}
	return nil
}

// checkID returns what is wrong with s as an id, or "" if nothing is.
func checkID(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > MaxIDBytes:
		return fmt.Sprintf("is %d bytes; at most %d", len(s), MaxIDBytes)
	case s == "." || s == "..":
		return fmt.Sprintf("must not be the path segment %q", s)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			return fmt.Sprintf("is not valid UTF-8 (at byte %d)", i)
		case r == '/' || r == '\\' || r == '*':
			return fmt.Sprintf("must not hold %q (at byte %d): ids are not paths or patterns", r, i)
		case unicode.IsSpace(r):
			return fmt.Sprintf("must not hold whitespace (%s at byte %d)", name(r), i)
		case !unicode.IsGraphic(r):
			return fmt.Sprintf("must not hold %s (at byte %d)", name(r), i)
		}
	}
	return ""
}

// Text checks free text: valid UTF-8, no control character but tab and
// newline, no bidi control, at most max bytes. Its error is a fault.Error
// of kind Invalid and code "invalid_" + field (field as the service's
// contract spells it, e.g. "reason" gives invalid_reason), whose message
// names the field and what is wrong. The empty string passes: whether a
// field is required is the caller's rule.
func Text(field, s string, max int) error {
	if msg := checkText(s, max); msg != "" {
		return fault.New(fault.Invalid, "invalid_"+field, "%s %s", field, msg)
	}
	return nil
}

// TextMessage returns what is wrong with s as free text of at most max
// bytes, or "" if nothing is: for callers that keep codes of their own.
func TextMessage(s string, max int) string { return checkText(s, max) }

func checkText(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("is %d bytes; at most %d", len(s), max)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			return fmt.Sprintf("is not valid UTF-8 (at byte %d)", i)
		case r == '\t' || r == '\n':
		case unicode.IsControl(r):
			return fmt.Sprintf("must not hold %s (at byte %d)", name(r), i)
		case isBidi(r):
			return fmt.Sprintf("must not hold %s (at byte %d)", name(r), i)
		}
	}
	return ""
}

// validAt reports whether the U+FFFD decoded at s[i] is really in s, not
// the decoder's mark for an invalid byte.
func validAt(s string, i int) bool { return strings.HasPrefix(s[i:], "\uFFFD") }

// isBidi reports whether r is one of Unicode's bidirectional formatting
// characters, which make text display in another order than it is stored.
func isBidi(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// name describes r for a message.
func name(r rune) string {
	switch {
	case r == 0:
		return "NUL"
	case isBidi(r):
		return fmt.Sprintf("%U (a bidi control)", r)
	case unicode.IsControl(r):
		return fmt.Sprintf("%U (a control character)", r)
	case unicode.Is(unicode.Cf, r):
		return fmt.Sprintf("%U (a format character)", r)
	case unicode.IsSpace(r):
		return fmt.Sprintf("%U", r)
	}
	return fmt.Sprintf("%U (not a printable character)", r)
}
