package python_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/wasm"
)

// cacheDir is shared by the package's sandboxes, so that the interpreter is
// metered and compiled once per test binary: the run's cache (wasmtest)
// when there is one, so once per run.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "assay-python-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = wasmtest.CacheDir(dir)
	// Compile the interpreter into the cache before the tests, which run in
	// parallel, each in a sandbox of its own: else each would compile it.
	if err := warm(); err != nil {
		fmt.Fprintln(os.Stderr, "python tests: compile the interpreter:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// warm compiles the interpreter into cacheDir.
func warm() error {
	ctx := context.Background()
	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer sb.Close(ctx)
	return python.CheckSourceWithin(ctx, sb, []byte("pass\n"), 10*time.Minute)
}

func newSandbox(tb testing.TB, cfg wasm.Config) *wasm.Sandbox {
	tb.Helper()
	cfg.CacheDir = cacheDir
	sb, err := wasm.NewSandbox(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			tb.Error(err)
		}
	})
	return sb
}

func testdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// limits are the defaults but for fuel, enough for any test checker and
// little enough that a runaway loop ends in a second or two, and the
// backstop, long: fuel decides every test's outcome, and a loaded machine
// (or the race detector) must not turn one into a timeout.
func limits() wasm.Limits {
	lim := wasm.DefaultLimits()
	lim.Fuel = 3_000_000_000
	lim.Timeout = 5 * time.Minute
	return lim
}

func run(tb testing.TB, sb *wasm.Sandbox, checker, typ, artifact string) wasm.Outcome {
	tb.Helper()
	return python.Run(context.Background(), sb, []byte(checker), typ, wasm.Input{Artifact: []byte(artifact)}, limits())
}

func TestRun_Types(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	features := string(testdata(t, "features.py"))
	for _, tt := range []struct {
		typ, artifact string
	}{
		{python.TypeSolution, `{"answer": [2, 4, 6]}`},
		{python.TypeDataset, "a,b\n1,2\n3,4\n"},
		{python.TypeEmbedding, "[0.5, 1, 2, 3]"},
		{python.TypeCode, "def add(a, b):\n    return a + b  # 1 2 3\n"},
		{python.TypeDocument, "Chapter 1. In 2024 there were 42 cats."},
		{python.TypeDataFeed, "{\"t\": 1, \"v\": 10}\n{\"t\": 2, \"v\": 12}\n"},
	} {
		t.Run(tt.typ, func(t *testing.T) {
			out := run(t, sb, features, tt.typ, tt.artifact)
			if out.Kind != wasm.KindPass {
				t.Fatalf("kind %s, want pass: %s\nstderr: %s", out.Kind, out.Detail, out.Stderr)
			}
			if !strings.Contains(out.Stdout, "numbers; mean") || out.Stderr != "" {
				t.Errorf("stdout %q, stderr %q", out.Stdout, out.Stderr)
			}
		})
	}
}

func TestRun_Outcomes(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	for _, tt := range []struct {
		name, typ, checker, artifact string
		kind                         wasm.Kind
		detail                       []string // substrings of the detail
	}{
		{"OKCode", python.TypeCode,
			"assert add(2, 3) == 5\nassert 'def add' in artifact\nassert __name__ == 'artifact'\n",
			"def add(a, b):\n    return a + b\nif __name__ == '__main__':\n    raise SystemExit(9)\n", wasm.KindPass, nil},
		{"OKData", python.TypeSolution, "assert data == {'x': [1, 2]}, data\n", `{"x": [1, 2]}`, wasm.KindPass, nil},
		{"OKNotJSON", python.TypeDocument, "assert data is None and artifact == 'hello'\n", "hello", wasm.KindPass, nil},
		{"ErrExit0", "", "import sys\nsys.exit(0)\nraise ValueError\n", "x", wasm.KindFail,
			[]string{"SystemExit: 0\n(SystemExit ends the check before the checker's end, whatever its code", `File "check.py", line 2`}},
		{"ErrExit3", "", "import sys\nsys.exit(3)\n", "x", wasm.KindFail, []string{"SystemExit: 3\n"}},
		{"ErrAssert", python.TypeSolution, "total = sum(data)\nassert total == 10, f'total is {total}'\n", "[1, 2, 3]",
			wasm.KindFail, []string{"AssertionError: total is 6\nTraceback (most recent call last):\n", `File "check.py", line 2, in <module>`}},
		{"ErrException", python.TypeSolution, "def f(x):\n    return {}[x]\nf('missing')\n", "{}",
			wasm.KindFail, []string{"KeyError: 'missing'\n", `File "check.py", line 3, in <module>`, `File "check.py", line 2, in f`}},
		{"ErrCodeRaises", python.TypeCode, "assert div(1, 0) == 0\n", "def div(a, b):\n    return a / b\n",
			wasm.KindFail, []string{"ZeroDivisionError: division by zero", `File "artifact.py", line 2, in div`}},
		{"ErrSyntax", "", "def f(:\n", "x", wasm.KindFail, []string{"SyntaxError", "check.py"}},
		{"ErrRecursion", "", "def f(n):\n    return f(n + 1)\nf(0)\n", "x",
			wasm.KindFail, []string{"RecursionError: maximum recursion depth exceeded", "outer frames left out"}},
		{"ErrType", "blob", "pass\n", "x", wasm.KindInvalidChecker, []string{`artifact type "blob"`}},
		{"ErrNotUTF8", "", "\xff\xfe", "x", wasm.KindInvalidChecker, []string{"UTF-8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, sb, tt.checker, tt.typ, tt.artifact)
			if out.Kind != tt.kind {
				t.Fatalf("kind %s, want %s: %s\nstderr: %s", out.Kind, tt.kind, out.Detail, out.Stderr)
			}
			for _, want := range tt.detail {
				if !strings.Contains(out.Detail, want) {
					t.Errorf("detail %q lacks %q", out.Detail, want)
				}
			}
		})
	}
}

// TestRun_Hostile runs checkers that try to reach the host or to run
// forever: each ends in a deciding outcome, and none sees the host.
func TestRun_Hostile(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	for _, tt := range []struct {
		name, checker string
		kind          wasm.Kind
	}{
		{"Loop", "while True:\n    pass\n", wasm.KindFuelExhausted},
		{"Memory", "n = 1 << 16\nxs = []\nwhile True:\n    xs.append('x' * n)\n", wasm.KindMemoryExceeded},
		{"HostFile", "try:\n    open('/etc/passwd')\nexcept OSError as e:\n    print(type(e).__name__, e)\nelse:\n    raise SystemExit(1)\n", wasm.KindPass},
		{"HostDir", "import os\nassert sorted(os.listdir('/in')) == ['artifact'], os.listdir('/in')\n" +
			"for p in ('/', '/etc', '/root', '/tmp', '..'):\n    try:\n        os.listdir(p)\n    except OSError:\n        pass\n    else:\n        raise SystemExit(p)\n", wasm.KindPass},
		{"WriteFile", "for p in ('/in/x', '/checker/x', '/usr/local/x', '/tmp/x'):\n    try:\n        open(p, 'w')\n    except OSError:\n        pass\n    else:\n        raise SystemExit(p)\n", wasm.KindPass},
		{"Socket", "import socket\ntry:\n    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n    s.connect(('127.0.0.1', 80))\nexcept OSError as e:\n    print(type(e).__name__, e)\nelse:\n    raise SystemExit(1)\n", wasm.KindPass},
		{"Environ", "import os\nassert dict(os.environ) == {}, dict(os.environ)\n", wasm.KindPass},
		{"Subprocess", "import os\ntry:\n    os.system('id')\nexcept (OSError, AttributeError) as e:\n    print(type(e).__name__)\nelse:\n    raise SystemExit(1)\n", wasm.KindPass},
		{"Time", "import time, datetime\nt = time.time()\nassert 1640995200 <= t < 1640995200 + 3600, t\nassert datetime.date.today().year == 2022\ntime.sleep(3600)\nassert time.time() - t >= 3600\n", wasm.KindPass},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, sb, tt.checker, "", "x")
			if out.Kind != tt.kind {
				t.Fatalf("kind %s, want %s: %s\nstdout: %s\nstderr: %s", out.Kind, tt.kind, out.Detail, out.Stdout, out.Stderr)
			}
		})
	}
	t.Run("DeepCRecursion", func(t *testing.T) {
		// Nested reprs recurse in C; with the recursion limit raised the C
		// stack runs out first. That must end as a clean outcome.
		checker := "import sys\nsys.setrecursionlimit(1_000_000)\nx = []\nfor _ in range(100_000):\n    x = [x]\nrepr(x)\n"
		out := run(t, sb, checker, "", "x")
		switch {
		case out.Kind == wasm.KindTrap && strings.Contains(out.Detail, "C stack"):
		case out.Kind == wasm.KindFail && strings.Contains(out.Detail, "RecursionError"):
		default:
			t.Fatalf("kind %s: %s", out.Kind, out.Detail)
		}
		t.Logf("%s: %s", out.Kind, out.Detail)
	})
}

// TestRun_StartupFuel: an empty checker of a JSON artifact, the dearest
// start, stays within StartupFuel (the interpreter's own start is not
// counted: it is in the snapshot), and a budget below it says why it ran
// out.
func TestRun_StartupFuel(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	out := run(t, sb, "pass\n", "", `{"a": 1}`)
	if out.Kind != wasm.KindPass || out.FuelUsed >= python.StartupFuel {
		t.Fatalf("%s with %d fuel, want pass within %d", out.Kind, out.FuelUsed, python.StartupFuel)
	}
	t.Logf("start-up: %d fuel", out.FuelUsed)
	lim := limits()
	lim.Fuel = 100_000
	out = python.Run(context.Background(), sb, []byte("pass\n"), "", wasm.Input{Artifact: []byte("x")}, lim)
	if out.Kind != wasm.KindFuelExhausted || !strings.Contains(out.Detail, "harness alone") {
		t.Errorf("%s: %s", out.Kind, out.Detail)
	}
}

// TestRun_Deterministic runs the same checker and artifact again and on
// wazero's interpreter: every field but the wall time is the same.
func TestRun_Deterministic(t *testing.T) {
	t.Parallel()
	checker := "import random, time, os\nprint(random.random(), time.time(), os.urandom(4).hex(), hash('assay'), {'b', 'a', 'c'})\n" +
		"assert data['n'] == 3\n"
	artifact := `{"n": 3}`
	sb := newSandbox(t, wasm.Config{})
	first := run(t, sb, checker, "", artifact)
	if first.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s %s", first.Kind, first.Detail, first.Stderr)
	}
	same := func(t *testing.T, got wasm.Outcome) {
		t.Helper()
		first.WallNS, got.WallNS = 0, 0
		if got != first {
			t.Errorf("outcome differs:\n got %+v\nwant %+v", got, first)
		}
	}
	for i := 0; i < 2; i++ {
		same(t, run(t, sb, checker, "", artifact))
	}
	same(t, run(t, newSandbox(t, wasm.Config{}), checker, "", artifact))
	t.Run("Interpreter", func(t *testing.T) {
		if testing.Short() || raceEnabled {
			t.Skip("the interpreter engine takes seconds to start python, minutes under the race detector")
		}
		// The wall-clock backstop is the host's only: a longer one changes
		// nothing in the outcome.
		lim := limits()
		lim.Timeout = 2 * time.Minute
		out := python.Run(context.Background(), newSandbox(t, wasm.Config{Interpreter: true}), []byte(checker), "", wasm.Input{Artifact: []byte(artifact)}, lim)
		same(t, out)
	})
}
