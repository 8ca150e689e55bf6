package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/wasm"
)

// reactors is the table of reactor fixtures and the outcome each must end
// in, from a snapshot and cold alike.
var reactors = []struct {
	name   string
	module string
	in     string
	lim    wasm.Limits
	kind   wasm.Kind
	exit   int
	detail string
	stdout string
	stderr string
	// slow: the fixture spends InitFuel, seconds on the compiler and far
	// more on the interpreter.
	slow bool
}{
	{name: "pass", module: "reactor_pass.wasm", kind: wasm.KindPass, exit: 0, detail: "assay_check returned 0"},
	{name: "fail status", module: "reactor_fail.wasm", kind: wasm.KindFail, exit: 7, detail: "assay_check returned 7", stdout: "not enough\n"},
	{name: "proc_exit in assay_check", module: "reactor_exit.wasm", kind: wasm.KindFail, exit: 5, detail: "called proc_exit(5) before assay_check returned"},
	{name: "trap in assay_check", module: "reactor_trap.wasm", kind: wasm.KindTrap, exit: -1, detail: "integer divide by zero"},
	{name: "trap in _initialize", module: "reactor_inittrap.wasm", in: "anything", kind: wasm.KindTrap, exit: -1, detail: "_initialize: unreachable", stderr: "init: failing\n"},
	{name: "proc_exit in _initialize", module: "reactor_initexit.wasm", kind: wasm.KindFail, exit: 3, detail: "_initialize: exited 3"},
	{name: "_initialize loops forever", module: "reactor_initloop.wasm", kind: wasm.KindFuelExhausted, exit: -1, detail: "_initialize: ran out of fuel", slow: true},
	{name: "state", module: "reactor_state.wasm", kind: wasm.KindPass, exit: 0},
	{name: "input", module: "reactor_io.wasm", in: "hello, reactor", kind: wasm.KindPass, exit: 0, stdout: "stdin=hello, reactor in=hello, reactor\n"},
	{name: "empty input", module: "reactor_io.wasm", in: "", kind: wasm.KindFail, exit: 1, stdout: "stdin= in=\n"},
	{name: "clock and random", module: "reactor_clock.wasm", kind: wasm.KindPass, exit: 0, stdout: "\n"},
	{name: "memory after init over the limit", module: "reactor_initgrow.wasm", lim: wasm.Limits{MemoryMiB: 2}, kind: wasm.KindMemoryExceeded, exit: -1, detail: "memory after _initialize is 41 pages"},
	{name: "memory after init within the limit", module: "reactor_initgrow.wasm", lim: wasm.Limits{MemoryMiB: 3}, kind: wasm.KindPass, exit: 0},
	{name: "init over its own memory limit", module: "reactor_initbig.wasm", lim: wasm.Limits{MemoryMiB: 4096}, kind: wasm.KindMemoryExceeded, exit: -1, detail: "_initialize: reached the memory limit of 256 MiB"},
	{name: "both _start and assay_check", module: "reactor_both.wasm", kind: wasm.KindInvalidChecker, exit: -1, detail: "both _start and assay_check"},
	{name: "assay_check of the wrong type", module: "reactor_badtype.wasm", kind: wasm.KindInvalidChecker, exit: -1, detail: "assay_check must take nothing and return an i32"},
}

// outcomeBytes is an outcome's JSON without its wall time: what must be
// the same from a snapshot and cold.
func outcomeBytes(tb testing.TB, out wasm.Outcome) string {
	tb.Helper()
	out.WallNS = 0
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestReactor_Run runs every reactor fixture from a snapshot (Run) and cold
// (RunCold), metered and unmetered, on both engines: each ends as the table
// says, and the outcome bytes from a snapshot equal the cold ones, fuel
// used included. The first Run takes the snapshot; the second replays it.
func TestReactor_Run(t *testing.T) {
	t.Parallel()
	results := map[string]map[string]string{}
	for _, eng := range engines {
		sb := newSandbox(t, eng.cfg)
		results[eng.name] = map[string]string{}
		for _, tc := range reactors {
			for _, fuel := range []uint64{wasm.DefaultFuel, 0} {
				name := eng.name + "/" + tc.name
				if fuel == 0 {
					name += "/unmetered"
				}
				t.Run(name, func(t *testing.T) {
					if tc.slow && (eng.cfg.Interpreter || testing.Short()) {
						t.Skip("spends InitFuel: seconds on the compiler, minutes on the interpreter")
					}
					if tc.slow && fuel == 0 {
						t.Skip("unmetered, a cold _initialize that never returns is stopped only by the wall clock")
					}
					module := fixture(t, tc.module)
					in := wasm.Input{Artifact: []byte(tc.in)}
					lim := tc.lim
					lim.Fuel = fuel
					lim.Timeout = 5 * time.Minute
					cold := sb.RunCold(context.Background(), module, in, lim)
					first := sb.Run(context.Background(), module, in, lim)
					again := sb.Run(context.Background(), module, in, lim)
					for _, out := range []wasm.Outcome{cold, first, again} {
						if out.Kind != tc.kind || out.ExitCode != tc.exit {
							t.Fatalf("kind %s exit %d, want %s exit %d; detail %q stdout %q stderr %q",
								out.Kind, out.ExitCode, tc.kind, tc.exit, out.Detail, out.Stdout, out.Stderr)
						}
						if !strings.Contains(out.Detail, tc.detail) || !strings.Contains(out.Stdout, tc.stdout) || !strings.Contains(out.Stderr, tc.stderr) {
							t.Errorf("detail %q stdout %q stderr %q, want %q, %q and %q in them", out.Detail, out.Stdout, out.Stderr, tc.detail, tc.stdout, tc.stderr)
						}
						if out.Pass != (tc.kind == wasm.KindPass) {
							t.Errorf("pass %v for kind %s", out.Pass, out.Kind)
						}
					}
					want := outcomeBytes(t, cold)
					for i, out := range []wasm.Outcome{first, again} {
						if got := outcomeBytes(t, out); got != want {
							t.Errorf("replay %d differs from a cold start:\nsnapshot %s\ncold     %s", i+1, got, want)
						}
					}
					if fuel > 0 && tc.kind == wasm.KindPass && cold.FuelUsed == 0 && tc.module != "reactor_pass.wasm" {
						t.Errorf("a metered reactor used no fuel")
					}
					if fuel > 0 {
						results[eng.name][tc.name] = want
					}
				})
			}
		}
	}
	for name, c := range results["compiler"] {
		if i, ok := results["interpreter"][name]; ok && i != c {
			t.Errorf("%s: engines differ:\ncompiler    %s\ninterpreter %s", name, c, i)
		}
	}
}

// TestReactor_fuelCountsCheckAlone: a reactor's fuel used is assay_check's,
// so the same check costs the same with or without an _initialize's work.
func TestReactor_fuelCountsCheckAlone(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	lim := wasm.Limits{Fuel: 1000}
	// reactor_pass's check is one i32.const: it costs 1.
	out := sb.Run(context.Background(), fixture(t, "reactor_pass.wasm"), wasm.Input{}, lim)
	if out.Kind != wasm.KindPass || out.FuelUsed != 1 {
		t.Fatalf("kind %s fuel used %d, want pass with 1", out.Kind, out.FuelUsed)
	}
	// reactor_initgrow's _initialize grows 40 pages (40 * PageCost fuel),
	// far over this budget; its check alone fits.
	out = sb.Run(context.Background(), fixture(t, "reactor_initgrow.wasm"), wasm.Input{}, lim)
	if out.Kind != wasm.KindPass || out.FuelUsed == 0 || out.FuelUsed > 10 {
		t.Fatalf("kind %s fuel used %d, want pass with the check's few", out.Kind, out.FuelUsed)
	}
	// A budget too small for the check is exhausted by the check.
	out = sb.Run(context.Background(), fixture(t, "reactor_state.wasm"), wasm.Input{}, wasm.Limits{Fuel: 5})
	if out.Kind != wasm.KindFuelExhausted || out.FuelUsed != 5 {
		t.Fatalf("kind %s fuel used %d, want fuel_exhausted at 5", out.Kind, out.FuelUsed)
	}
}

// TestReactor_isolation: state one replay leaves in memory or globals is
// never seen by the next, run after run and concurrently. reactor_state
// fails with a non-zero status when it sees any of it.
func TestReactor_isolation(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			sb := newSandbox(t, eng.cfg)
			module := fixture(t, "reactor_state.wasm")
			run := func() wasm.Outcome {
				return sb.Run(context.Background(), module, wasm.Input{}, wasm.DefaultLimits())
			}
			want := outcomeBytes(t, run())
			for i := range 50 {
				if out := run(); out.Kind != wasm.KindPass || outcomeBytes(t, out) != want {
					t.Fatalf("replay %d: kind %s: %s", i, out.Kind, out.Detail)
				}
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 25 {
						if out := run(); out.Kind != wasm.KindPass || outcomeBytes(t, out) != want {
							t.Errorf("goroutine %d replay %d: kind %s: %s", g, i, out.Kind, out.Detail)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestReactor_RunSum: RunSum with the module's true SHA-256 is Run.
func TestReactor_RunSum(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	for _, name := range []string{"reactor_io.wasm", "pass.wasm"} {
		module := fixture(t, name)
		in := wasm.Input{Artifact: []byte("x")}
		a := sb.Run(context.Background(), module, in, wasm.DefaultLimits())
		b := sb.RunSum(context.Background(), sha256.Sum256(module), module, in, wasm.DefaultLimits())
		c := sb.RunColdSum(context.Background(), sha256.Sum256(module), module, in, wasm.DefaultLimits())
		if outcomeBytes(t, a) != outcomeBytes(t, b) || outcomeBytes(t, a) != outcomeBytes(t, c) {
			t.Errorf("%s: Run, RunSum and RunColdSum differ:\n%s\n%s\n%s", name, outcomeBytes(t, a), outcomeBytes(t, b), outcomeBytes(t, c))
		}
	}
}

func TestReactor_Validate(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	for _, name := range []string{"reactor_pass.wasm", "reactor_state.wasm", "reactor_inittrap.wasm"} {
		if err := sb.Validate(context.Background(), fixture(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, want := range map[string]string{
		"reactor_both.wasm":    "both _start and assay_check",
		"reactor_badtype.wasm": "assay_check must take nothing",
	} {
		if err := sb.Validate(context.Background(), fixture(t, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, want)
		}
	}
}

// TestReactor_goReactor replays the Go reactor fixture, when it has been
// built, from a snapshot and cold: the same outcome bytes.
func TestReactor_goReactor(t *testing.T) {
	t.Parallel()
	skipGoGuestUnderRace(t)
	path := filepath.Join("..", "fixtures", "checkers", "goreactor.wasm")
	module, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is not built yet (make fixtures)", path)
	} else if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, wasm.Config{})
	for _, artifact := range []string{`{"min_rows":1,"rows":[{"id":"a"}]}`, `{"rows":[]}`, `not json`, ``} {
		in := wasm.Input{Artifact: []byte(artifact)}
		lim := wasm.Limits{Fuel: wasm.DefaultFuel, Timeout: 5 * time.Minute}
		cold := sb.RunCold(context.Background(), module, in, lim)
		if !cold.Kind.Decides() {
			t.Fatalf("%q: kind %s: %s", artifact, cold.Kind, cold.Detail)
		}
		for i := range 3 {
			snap := sb.Run(context.Background(), module, in, lim)
			if outcomeBytes(t, snap) != outcomeBytes(t, cold) {
				t.Errorf("%q replay %d differs:\nsnapshot %s\ncold     %s", artifact, i, outcomeBytes(t, snap), outcomeBytes(t, cold))
			}
		}
	}
}
