package ident_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
)

func TestAgent(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, id := range []string{
			// The seeds' walkthroughs and the tests' ids.
			"did:nanda:buyer", "did:nanda:doc-seller", "did:a", "did:e2e:cheat", "did:bench:buyer-17",
			"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
			"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
			"did:web:example.com%3A8080", "g17-mathema", "buyer", "seller3", "alice", "solver-1", "s", "tenant_a",
			"user@example.com", "a.b", "...", "ünïcødé", "名前", strings.Repeat("x", ident.MaxIDBytes),
		} {
			if err := ident.Agent(id); err != nil {
				t.Errorf("Agent(%q) = %v, want nil", id, err)
			}
		}
	})
	for _, tc := range []struct {
		name, id, want string
	}{
		{"ErrEmpty", "", "is empty"},
		{"ErrTooLong", strings.Repeat("x", ident.MaxIDBytes+1), "at most 256"},
		{"ErrInvalidUTF8", "did:\xff\xfe", "not valid UTF-8 (at byte 4)"},
		{"ErrTruncatedUTF8", "did:\xe2\x82", "not valid UTF-8"},
		{"ErrNUL", "did:a\x00", "NUL"},
		{"ErrControl", "did:\x1b[31m", "U+001B"},
		{"ErrDEL", "did:\x7f", "U+007F"},
		{"ErrC1", "did:\u0085", "U+0085"},
		{"ErrSpace", "did:a b", "whitespace"},
		{"ErrTab", "did:a\tb", "whitespace"},
		{"ErrNBSP", "did:a\u00a0b", "whitespace"},
		{"ErrIdeographicSpace", "did:a\u3000b", "whitespace"},
		{"ErrRLO", "did:\u202egnp", "U+202E (a bidi control)"},
		{"ErrLRE", "did:\u202a", "bidi"},
		{"ErrLRI", "did:\u2066", "bidi"},
		{"ErrPDI", "did:\u2069", "bidi"},
		{"ErrLRM", "did:\u200e", "bidi"},
		{"ErrRLM", "did:\u200f", "bidi"},
		{"ErrALM", "did:\u061c", "bidi"},
		{"ErrZeroWidth", "did:a\u200bb", "format character"},
		{"ErrBOM", "\ufeffdid:a", "format character"},
		{"ErrPrivateUse", "did:\ue000", "not a printable"},
		{"ErrUnassigned", "did:\U000e0080", "not a printable"},
		{"ErrDot", ".", "path segment"},
		{"ErrDotDot", "..", "path segment"},
		{"ErrSlash", "../etc/passwd", "'/'"},
		{"ErrBackslash", `did:a\b`, `'\\'`},
		{"ErrStar", "*", "'*'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ident.Agent(tc.id)
			if err == nil {
				t.Fatalf("Agent(%q) = nil, want an error", tc.id)
			}
			if fault.KindOf(err) != fault.Invalid || fault.CodeOf(err) != "invalid_agent" {
				t.Errorf("kind, code = %s, %s; want invalid, invalid_agent", fault.KindOf(err), fault.CodeOf(err))
			}
			if msg := fault.MessageOf(err); !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not say %q", msg, tc.want)
			}
		})
	}
}

func TestID(t *testing.T) {
	err := ident.ID("buyer", "invalid_did", "did:\u202e")
	if fault.CodeOf(err) != "invalid_did" || !strings.HasPrefix(fault.MessageOf(err), "buyer ") {
		t.Fatalf("ID = %v; want code invalid_did and a message naming buyer", err)
	}
	if err := ident.ID("buyer", "invalid_did", "did:nanda:buyer"); err != nil {
		t.Fatal(err)
	}
}

func TestText(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, s := range []string{"", "only 40 of 100 rows", "line one\nline two\tindented", "ünïcødé 名前 🙂", "\uFFFD is a real character", strings.Repeat("x", 100)} {
			if err := ident.Text("reason", s, 100); err != nil {
				t.Errorf("Text(%q) = %v, want nil", s, err)
			}
		}
	})
	for _, tc := range []struct{ name, s, want string }{
		{"ErrTooLong", strings.Repeat("x", 101), "is 101 bytes; at most 100"},
		{"ErrInvalidUTF8", "ok \xff\xfe\xfd", "not valid UTF-8 (at byte 3)"},
		{"ErrNUL", "a\x00b", "NUL"},
		{"ErrCR", "a\r\nb", "U+000D"},
		{"ErrEscape", "\x1b]0;title\x07", "U+001B"},
		{"ErrRLO", "invoice \u202efdp.exe", "bidi"},
		{"ErrRLI", "\u2067x", "bidi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ident.Text("reason", tc.s, 100)
			if fault.KindOf(err) != fault.Invalid || fault.CodeOf(err) != "invalid_reason" {
				t.Fatalf("Text(%q) = %v; want an invalid_reason error", tc.s, err)
			}
			if msg := fault.MessageOf(err); !strings.HasPrefix(msg, "reason ") || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not name reason and say %q", msg, tc.want)
			}
			if ident.TextMessage(tc.s, 100) == "" {
				t.Errorf("TextMessage(%q) is empty", tc.s)
			}
		})
	}
}

// FuzzAgent checks the grammar's promises on any input: an accepted id is
// valid UTF-8 of at most MaxIDBytes, with no byte below 0x20, no DEL, no
// slash, no star, and not a dot segment.
func FuzzAgent(f *testing.F) {
	for _, s := range []string{"did:nanda:buyer", "..", "a\x00", "did:\u202e", "\xff", "g17-mathema"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ident.Agent(s) != nil {
			return
		}
		if !utf8.ValidString(s) || len(s) == 0 || len(s) > ident.MaxIDBytes || s == "." || s == ".." ||
			strings.ContainsAny(s, "/\\* \t\n\r\x00\x7f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c") ||
			strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) >= 0 {
			t.Fatalf("Agent accepted %q", s)
		}
		if ident.Text("x", s, ident.MaxIDBytes) != nil {
			t.Fatalf("an id %q is not text", s)
		}
	})
}

// TestNewID: ids are ids of the grammar and ULIDs of the time they were
// made, so that ids of one millisecond sort together, after those of the
// milliseconds before (an id's first 10 characters are the 48 bits of
// time); no two are equal.
func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := range 10000 {
		before := ulid.Now()
		id := ident.NewID()
		u, err := ulid.ParseStrict(id)
		if err != nil || ident.Agent(id) != nil {
			t.Fatalf("NewID() = %q: not a ULID of the grammar (%v, %v)", id, err, ident.Agent(id))
		}
		if ms := u.Time(); ms < before || ms > ulid.Now() {
			t.Fatalf("NewID() = %q: made at %d ms, not between %d and now", id, ms, before)
		}
		if id[:10] < prev[:min(10, len(prev))] {
			t.Fatalf("id %d, %q, sorts before the millisecond of the one before it, %q", i, id, prev)
		}
		if seen[id] {
			t.Fatalf("NewID() gave %q twice", id)
		}
		seen[id], prev = true, id
	}
}

// TestRandomID: random ids are ids of the grammar, in a ULID's text.
func TestRandomID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ident.RandomID()
		if _, err := ulid.ParseStrict(id); err != nil || ident.Agent(id) != nil {
			t.Fatalf("RandomID() = %q (%v): not 26 characters of a ULID's text", id, err)
		}
		if seen[id] {
			t.Fatalf("RandomID() gave %q twice", id)
		}
		seen[id] = true
	}
}
