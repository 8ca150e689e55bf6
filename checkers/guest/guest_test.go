package guest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// testEnv returns an env over a fresh directory holding files, with stdin
// and a buffer for stderr.
func testEnv(t *testing.T, files map[string]string, stdin string) (env, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	return env{dir: dir, stdin: strings.NewReader(stdin), stderr: &stderr}, &stderr
}

func TestCall(t *testing.T) {
	type seen struct{ artifact, evidence []byte }
	for _, tc := range []struct {
		name       string
		files      map[string]string
		stdin      string
		check      Check
		wantStatus int32
		wantStderr string
		wantSeen   *seen
	}{
		{
			name:       "OK",
			files:      map[string]string{"artifact": `{"rows": 3}`},
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte(`{"rows": 3}`)},
		},
		{
			name:       "OKEvidence",
			files:      map[string]string{"artifact": "a", "evidence": "e"},
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte("a"), evidence: []byte("e")},
		},
		{
			name:       "OKEmptyEvidence",
			files:      map[string]string{"artifact": "a", "evidence": ""},
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte("a"), evidence: []byte{}},
		},
		{
			name:       "OKStdin",
			stdin:      "from stdin",
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte("from stdin")},
		},
		{
			name:       "OKEmptyArtifact",
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte{}},
		},
		{
			name:       "OKFileBeforeStdin",
			files:      map[string]string{"artifact": "file"},
			stdin:      "stdin",
			wantStatus: statusPass,
			wantSeen:   &seen{artifact: []byte("file")},
		},
		{
			name:       "ErrFail",
			files:      map[string]string{"artifact": "a"},
			check:      func(_, _ []byte) error { return errors.New("2 rows, want at least 3") },
			wantStatus: statusFail,
			wantStderr: "2 rows, want at least 3\n",
		},
		{
			name:       "ErrEmptyMessage",
			files:      map[string]string{"artifact": "a"},
			check:      func(_, _ []byte) error { return errors.New("") },
			wantStatus: statusFail,
			wantStderr: "the check failed with an empty error message\n",
		},
		{
			name:       "ErrPanic",
			files:      map[string]string{"artifact": "a"},
			check:      func(a, _ []byte) error { return []error{}[len(a)] },
			wantStatus: statusBroken,
			wantStderr: "panic: runtime error: index out of range [1] with length 0\n",
		},
		{
			name:       "ErrPanicNil",
			files:      map[string]string{"artifact": "a"},
			check:      func(_, _ []byte) error { panic(nil) },
			wantStatus: statusBroken,
			wantStderr: "panic: panic called with nil argument\n",
		},
		{
			name:       "ErrNoCheck",
			check:      Check(nil),
			wantStatus: statusBroken,
			wantStderr: "guest: no check registered: call guest.Handle from an init function of package main\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, stderr := testEnv(t, tc.files, tc.stdin)
			var got *seen
			check := tc.check
			if check == nil && tc.wantSeen != nil {
				check = func(a, ev []byte) error { got = &seen{a, ev}; return nil }
			}
			if status := e.call(check); status != tc.wantStatus {
				t.Errorf("status %d, want %d", status, tc.wantStatus)
			}
			if stderr.String() != tc.wantStderr {
				t.Errorf("stderr %q, want %q", stderr, tc.wantStderr)
			}
			if tc.wantSeen != nil {
				if got == nil {
					t.Fatal("check not called")
				}
				if !bytes.Equal(got.artifact, tc.wantSeen.artifact) || (got.artifact == nil) != (tc.wantSeen.artifact == nil) {
					t.Errorf("artifact %q (nil %v), want %q", got.artifact, got.artifact == nil, tc.wantSeen.artifact)
				}
				if !bytes.Equal(got.evidence, tc.wantSeen.evidence) || (got.evidence == nil) != (tc.wantSeen.evidence == nil) {
					t.Errorf("evidence %q (nil %v), want %q (nil %v)", got.evidence, got.evidence == nil, tc.wantSeen.evidence, tc.wantSeen.evidence == nil)
				}
			}
		})
	}
}

// TestCall_ErrUnreadable: an input that exists but cannot be read is
// reported, and the check is not called.
func TestCall_ErrUnreadable(t *testing.T) {
	e, stderr := testEnv(t, nil, "")
	if err := os.Mkdir(filepath.Join(e.dir, "artifact"), 0o755); err != nil {
		t.Fatal(err)
	}
	called := false
	status := e.call(func(_, _ []byte) error { called = true; return nil })
	if status != statusBroken || called {
		t.Errorf("status %d, called %v; want %d, not called", status, called, statusBroken)
	}
	if !strings.HasPrefix(stderr.String(), "guest: read the artifact: ") {
		t.Errorf("stderr %q", stderr)
	}
}

// TestCall_Fresh: a second call in one process reads its own input, not the
// first call's.
func TestCall_Fresh(t *testing.T) {
	e, _ := testEnv(t, map[string]string{"artifact": "one"}, "")
	var seen []string
	check := func(a, ev []byte) error { seen = append(seen, string(a)+"/"+string(ev)); return nil }
	e.call(check)
	for name, data := range map[string]string{"artifact": "two", "evidence": "e"} {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.call(check)
	if strings.Join(seen, " ") != "one/ two/e" {
		t.Errorf("checks saw %q", seen)
	}
}

// TestReport: a long message is cut to maxMessage bytes, newline apart, at
// a character boundary.
func TestReport(t *testing.T) {
	for _, n := range []int{maxMessage - 1, maxMessage, maxMessage + 1, 3 * maxMessage} {
		var b bytes.Buffer
		msg := strings.Repeat("x", n%2) + strings.Repeat("é", n/2)
		env{stderr: &b}.report(msg)
		got := b.String()
		switch {
		case !strings.HasSuffix(got, "\n"):
			t.Errorf("%d bytes: no newline", n)
		case len(got)-1 > maxMessage:
			t.Errorf("%d bytes: wrote %d", n, len(got)-1)
		case !utf8.ValidString(got):
			t.Errorf("%d bytes: cut inside a character", n)
		case n <= maxMessage && got != msg+"\n":
			t.Errorf("%d bytes: changed a message under the bound", n)
		case n > maxMessage && !strings.HasSuffix(got, " [cut]\n"):
			t.Errorf("%d bytes: %q does not say it was cut", n, got[len(got)-20:])
		}
	}
}

func TestHandle(t *testing.T) {
	defer func() { registered = nil }()
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			if v := recover(); v != want {
				t.Errorf("%s: panic %v, want %q", name, v, want)
			}
		}()
		f()
	}
	mustPanic("nil", "guest: Handle(nil)", func() { Handle(nil) })
	Handle(func(_, _ []byte) error { return nil })
	mustPanic("twice", "guest: Handle called twice", func() { Handle(func(_, _ []byte) error { return nil }) })
}
