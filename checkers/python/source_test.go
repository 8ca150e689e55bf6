package python_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// TestCheckSource: an upload is compiled by CPython in the sandbox, and
// refused with the line and CPython's message when it does not compile;
// what compiles is accepted without running (a checker that would loop or
// exit is accepted as quickly as any other).
func TestCheckSource(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	ctx := context.Background()
	big := strings.Repeat("assert add(2, 2) == 4, 'a message of some length to fill the line'\n", python.MaxCheckerBytes/70)
	for _, tt := range []struct {
		name, src string
		err       []string // substrings of the error; none: accepted
	}{
		{"OK", "assert data['rows'] >= 2\n", nil},
		{"OKLoop", "while True:\n    pass\n", nil},
		{"OKExit", "import os\nos._exit(0)\n", nil},
		{"OKRaise", "raise SystemExit(1)\n", nil},
		{"OKBig", big, nil},
		{"ErrSyntax", "x = 1\ndef f(:\n    pass\n", []string{"does not compile: SyntaxError at line 2, column 7: invalid syntax"}},
		{"ErrUnclosed", "assert add(2, 2 == 4\n", []string{"SyntaxError at line 1", "'(' was never closed"}},
		{"ErrIndent", "x = 1\n  y = 2\n", []string{"IndentationError at line 2", "unexpected indent"}},
		{"ErrReturn", "return 1\n", []string{"SyntaxError at line 1", "'return' outside function"}},
		{"ErrNesting", strings.Repeat("(", 300) + strings.Repeat(")", 300) + "\n", []string{"does not compile: MemoryError: nested too deeply"}},
		{"ErrDeep", "x = " + strings.Repeat("-", 100_000) + "1\n", []string{"does not compile:"}},
		{"ErrEmpty", "", []string{"empty"}},
		{"ErrNotUTF8", "\xff\xfe", []string{"not UTF-8"}},
		{"ErrNUL", "pass\x00\n", []string{"NUL"}},
		{"ErrTooBig", strings.Repeat("#", python.MaxCheckerBytes+1), []string{"over the limit"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// An upload's compile has the default backstop (10 s), which
			// a megabyte of source can pass on a loaded machine or under
			// the race detector: the test gives it long enough that
			// fuel alone decides.
			err := python.CheckSourceWithin(ctx, sb, []byte(tt.src), 5*time.Minute)
			if len(tt.err) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tt.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			t.Log(err)
		})
	}
}

// TestCheckSource_Cancelled: a context that has ended stops the compile,
// and the error says the source was not judged.
func TestCheckSource_Cancelled(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := python.CheckSource(ctx, sb, []byte("pass\n")); err == nil || !strings.Contains(err.Error(), "could not be compiled") {
		t.Fatalf("cancelled: %v", err)
	}
}
