package python_test

import (
	"context"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// A code artifact runs before its checker, in the same namespace: these
// artifacts (and a few checkers) try every way found to end the check as a
// pass without the checker running to its end. Each must end fail, saying
// what happened; an honest artifact still passes.

// honestAdd is the artifact the checkers below are written for.
const honestAdd = "def add(a, b):\n    return a + b\n"

// addChecker fails for any add that is not addition.
const addChecker = "assert add(2, 2) == 4\n"

// twoStep checks on lines of their own, so that a line event lies between
// add's return and each assert: what a trace function would jump over.
const twoStep = "r = add(2, 2)\nassert r == 4, 'first'\nassert r == 5, 'second'\nprint('reached end')\n"

// jumpOnLine is a trace function that moves the checker's frame from its
// second line to its last, past both asserts of twoStep.
const jumpOnLine = `def jump(frame, event, arg):
    if frame.f_code.co_filename == "check.py" and event == "line" and frame.f_lineno == 2:
        frame.f_lineno = 4
    return jump
`

// wrongAdd is an add that the checkers must catch.
const wrongAdd = "def add(a, b):\n    return 5\n"

var tricks = []struct {
	name, artifact, checker string
	detail                  []string // substrings of the detail
}{
	{"ExitZero", "import sys\nsys.exit(0)\n" + honestAdd, addChecker,
		[]string{"SystemExit: 0\n(raised by the artifact's source, before the checker ran", `File "artifact.py", line 2`}},
	{"ExitNone", "import sys\nsys.exit()\n", addChecker, []string{"SystemExit\n(raised by the artifact's source"}},
	{"RaiseSystemExit", "raise SystemExit\n", addChecker, []string{"SystemExit\n(raised by the artifact's source"}},
	{"ExitString", "raise SystemExit('done')\n", addChecker, []string{"SystemExit: done\n(raised by the artifact's source"}},
	{"KeyboardInterrupt", "raise KeyboardInterrupt\n", addChecker, []string{"KeyboardInterrupt\n(raised by the artifact's source"}},
	{"GeneratorExit", "raise GeneratorExit\n", addChecker, []string{"GeneratorExit\n(raised by the artifact's source"}},
	{"OwnBaseException", "class Stop(BaseException):\n    pass\nraise Stop\n", addChecker, []string{"Stop\n(raised by the artifact's source"}},
	{"ExitInCall", "import sys\ndef add(a, b):\n    sys.exit(0)\n", addChecker,
		[]string{"SystemExit: 0\n(SystemExit ends the check before the checker's end", `File "artifact.py", line 3, in add`}},
	{"CheckerExit0", honestAdd, "assert add(2, 2) == 4\nimport sys\nsys.exit(0)\nassert add(1, 1) == 3\n",
		[]string{"SystemExit: 0\n(SystemExit ends the check", `File "check.py", line 3`}},
	{"CheckerExit256", honestAdd, "import sys\nsys.exit(256)\n", []string{"SystemExit: 256\n(SystemExit ends the check"}},
	{"ExecReplaced", "import builtins\nbuiltins.exec = lambda *a, **k: None\nbuiltins.compile = lambda *a, **k: None\n" + wrongAdd, addChecker,
		[]string{"AssertionError\n", `File "check.py", line 1`}},
	{"ExecReplacedThenExit", "import builtins, sys\nbuiltins.exec = lambda *a, **k: None\nbuiltins.BaseException = KeyError\nbuiltins.SystemExit = KeyError\nsys.exit(0)\n", addChecker,
		[]string{"SystemExit: 0\n(raised by the artifact's source"}},
	{"BuiltinsReplaced", "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 1\n" +
		"__builtins__ = {'isinstance': lambda *a: True, 'len': lambda x: 1}\ndef add(a, b):\n    return '4'\n",
		"assert len(str(add(2, 2))) == 1\nassert isinstance(add(2, 2), int), 'not an int'\n", []string{"AssertionError: not an int", `File "check.py", line 2`}},
	{"SetTrace", "import sys\n" + jumpOnLine + "sys.settrace(jump)\n" + wrongAdd, twoStep,
		[]string{"AttributeError: module 'sys' has no attribute 'settrace'\n(raised by the artifact's source"}},
	{"SetTraceInCall", "import sys\n" + jumpOnLine + "def add(a, b):\n    f = sys._getframe(1)\n    f.f_trace = jump\n    sys.settrace(jump)\n    return 5\n", twoStep,
		[]string{"AttributeError: module 'sys' has no attribute 'settrace'", `File "artifact.py", line 9, in add`}},
	{"SetProfile", "import sys\ndef hook(frame, event, arg):\n    frame.f_locals['note'] = None\nsys.setprofile(hook)\n" + wrongAdd, addChecker,
		[]string{"AttributeError: module 'sys' has no attribute 'setprofile'\n(raised by the artifact's source"}},
	{"RestoreSetTrace", restoreSetTrace + wrongAdd, twoStep, []string{"AssertionError: first", `File "check.py", line 2`}},
	{"FrameJump", "import sys\ndef add(a, b):\n    f = sys._getframe(1)\n    f.f_trace = lambda *a: None\n    f.f_lineno = 4\n    return 5\n", twoStep,
		[]string{"ValueError: can't jump", `File "artifact.py", line 5, in add`}},
	{"ProfilerLeftOn", "import _lsprof\n_lsprof.Profiler().enable()\n" + honestAdd, addChecker,
		[]string{"RuntimeError: the artifact's source left a trace or profile function set\n(a pass needs the checker to run to its end"}},
	{"ProfilerTimerJump", lsprofJump + wrongAdd, twoStep, []string{"AssertionError: first"}},
	{"HarnessState", harnessTamper + "raise SystemExit(0)\n", addChecker, nil},
	{"HarnessStateThenWrong", harnessTamper + wrongAdd, addChecker, nil},
	{"StreamsReplaced", "import sys\nclass W:\n    def write(self, s):\n        raise SystemExit(0)\n    def flush(self):\n        raise SystemExit(0)\n" +
		"sys.stdout = sys.stderr = W()\nraise SystemExit(0)\n", addChecker, []string{"SystemExit: 0\n(raised by the artifact's source"}},
	{"HostileStr", "class E(Exception):\n    def __str__(self):\n        raise SystemExit(0)\n    __repr__ = __str__\nraise E\n", addChecker, nil},
	{"AuditHook", "import sys\ndef hook(event, args):\n    if event == 'exec':\n        raise SystemExit(0)\nsys.addaudithook(hook)\n" + honestAdd, addChecker,
		[]string{"SystemExit: 0\n", `File "artifact.py", line 4, in hook`}},
	{"AssertionErrorReplaced", "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n" + wrongAdd, addChecker,
		[]string{"AssertionError\n", `File "check.py", line 1`}},
	{"OsExit", "import os\nos._exit(0)\n", addChecker, []string{"exit"}},
	{"OsExitInCall", "import os\ndef add(a, b):\n    os._exit(0)\n", addChecker, []string{"exit"}},
	{"CheckerOsExit", honestAdd, "import os\nos._exit(0)\n", []string{"exit"}},
}

// restoreSetTrace tries every way found to get sys.settrace back (the copy
// of sys's dict that _imp keeps, reloading or importing sys again, the
// objects the collector knows) and, with it, makes twoStep jump to its end.
const restoreSetTrace = `import gc, importlib, sys, _imp
class Spec:
    name = "sys"
found = []
try:
    found.append(getattr(_imp.create_builtin(Spec), "settrace", None))
except BaseException:
    pass
try:
    found.append(getattr(importlib.reload(sys), "settrace", None))
except BaseException:
    pass
saved = sys.modules.pop("sys")
try:
    import sys as again
    found.append(getattr(again, "settrace", None))
finally:
    sys.modules["sys"] = saved
gc.unfreeze()
for o in gc.get_objects():
    if isinstance(o, dict) and "settrace" in o:
        found.append(o["settrace"])
    elif getattr(o, "__name__", None) == "settrace" and callable(o):
        found.append(o)
` + jumpOnLine + `for settrace in found:
    if settrace is not None:
        settrace(jump)
`

// lsprofJump: _lsprof's profiler is C, but it calls a Python timer at every
// call and return, from which the checker's frame is one step away.
const lsprofJump = `import _lsprof, sys
def timer():
    f = sys._getframe(1)
    if f.f_code.co_filename == "check.py":
        f.f_trace = lambda *a: None
        try:
            f.f_lineno = 4
        except ValueError:
            pass
    return 0
_profiler = _lsprof.Profiler(timer)
_add = lambda a, b: 5
def add(a, b):
    _profiler.enable()
    return _add(a, b)
`

// harnessTamper reaches the harness's module (from the frame that runs the
// artifact) and everything in it: every function made to return 0, every
// status constant 0, the builtins it might look up replaced.
const harnessTamper = `import builtins, sys
g = sys._getframe(1).f_globals
zero = (lambda *a, **k: 0).__code__
for name, v in list(g.items()):
    if type(v) is type(zero.replace) or type(v).__name__ == "function":
        try:
            v.__code__ = zero
        except (AttributeError, ValueError, TypeError):
            pass
    elif type(v) is int:
        g[name] = 0
g["BaseException"] = g["SystemExit"] = KeyError
builtins.exec = lambda *a, **k: None
builtins.isinstance = lambda *a: False
`

// TestRun_Tricks: every trick ends fail with its detail, from the snapshot
// and cold alike (the same outcome, fuel included).
func TestRun_Tricks(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	ctx := context.Background()
	for _, tt := range tricks {
		t.Run(tt.name, func(t *testing.T) {
			in := wasm.Input{Artifact: []byte(tt.artifact)}
			out := python.Run(ctx, sb, []byte(tt.checker), python.TypeCode, in, limits())
			if out.Kind != wasm.KindFail {
				t.Fatalf("kind %s, want fail: %s\nstdout: %s\nstderr: %s", out.Kind, out.Detail, out.Stdout, out.Stderr)
			}
			for _, want := range tt.detail {
				if !strings.Contains(out.Detail, want) {
					t.Errorf("detail %q lacks %q", out.Detail, want)
				}
			}
			cold := python.RunCold(ctx, sb, []byte(tt.checker), python.TypeCode, in, limits())
			if w, c := outcomeJSON(t, out), outcomeJSON(t, cold); w != c {
				t.Errorf("from the snapshot:\n%s\ncold:\n%s", w, c)
			}
			t.Logf("%d fuel: %s", out.FuelUsed, out.Detail)
		})
	}
}

// TestRun_Honest: the checkers of TestRun_Tricks pass an honest artifact,
// including one that catches its own SystemExit and one that runs a main
// block only as a script.
func TestRun_Honest(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	ctx := context.Background()
	for _, tt := range []struct{ name, artifact, checker string }{
		{"Add", honestAdd, addChecker},
		{"TwoStep", honestAdd, "r = add(2, 2)\nassert r == 4, 'first'\nassert r != 5, 'second'\nprint('reached end')\n"},
		{"CatchesExit", "import sys\ntry:\n    sys.exit(3)\nexcept SystemExit:\n    pass\n" + honestAdd, addChecker},
		{"MainBlock", honestAdd + "if __name__ == '__main__':\n    import sys\n    sys.exit(1)\n", addChecker},
		{"CheckerCatchesExit", "import sys\ndef add(a, b):\n    sys.exit(a + b)\n",
			"try:\n    add(2, 2)\nexcept SystemExit as e:\n    assert e.code == 4\nelse:\n    raise AssertionError\n"},
		{"OwnBuiltin", "import builtins\nbuiltins.helper = 1\n" + honestAdd,
			"import builtins\nassert builtins.helper == 1\nassert 'helper' not in dir(__builtins__)\n" + addChecker},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := wasm.Input{Artifact: []byte(tt.artifact)}
			out := python.Run(ctx, sb, []byte(tt.checker), python.TypeCode, in, limits())
			if out.Kind != wasm.KindPass || out.Detail != "exited 0" {
				t.Fatalf("%s: %s\nstdout: %s\nstderr: %s", out.Kind, out.Detail, out.Stdout, out.Stderr)
			}
			cold := python.RunCold(ctx, sb, []byte(tt.checker), python.TypeCode, in, limits())
			if w, c := outcomeJSON(t, out), outcomeJSON(t, cold); w != c {
				t.Errorf("from the snapshot:\n%s\ncold:\n%s", w, c)
			}
		})
	}
}
