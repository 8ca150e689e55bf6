package wasm_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/wasm"
)

// fixture reads a committed checker from fixtures/checkers.
func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cacheDir is the package's sandboxes' cache directory: the run's cache
// (wasmtest) when there is one, so that each Go guest is compiled once per
// run.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "assay-wasm-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = wasmtest.CacheDir(dir)
	code := m.Run()
	for _, sb := range sandboxes {
		sb.Close(context.Background())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandboxes are the sandboxes the package's tests share, by their
// configuration: within one, a module is metered and compiled once, however
// many tests run it at once. TestMain closes them.
var (
	sandboxesMu sync.Mutex
	sandboxes   = map[wasm.Config]*wasm.Sandbox{}
)

// newSandbox returns the sandbox the package's tests share for cfg, over
// the package's cache directory. A cfg that names a cache directory of its
// own gets a sandbox of its own, closed at the end of the test.
func newSandbox(tb testing.TB, cfg wasm.Config) *wasm.Sandbox {
	tb.Helper()
	if cfg.CacheDir != "" {
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
	cfg.CacheDir = cacheDir
	sandboxesMu.Lock()
	defer sandboxesMu.Unlock()
	if sb := sandboxes[cfg]; sb != nil {
		return sb
	}
	sb, err := wasm.NewSandbox(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	sandboxes[cfg] = sb
	return sb
}

// engines lists the two wazero engines; every deterministic outcome must be
// the same on both.
var engines = []struct {
	name string
	cfg  wasm.Config
}{
	{"compiler", wasm.Config{}},
	{"interpreter", wasm.Config{Interpreter: true}},
}

// hostile is the table of modules that try to crash, hang or exhaust the
// host, and of ordinary checkers, with the outcome each must end in.
var hostile = []struct {
	name    string
	module  string // file in fixtures/checkers, or "" for garbage bytes
	in      string
	lim     wasm.Limits
	kind    wasm.Kind
	exit    int
	detail  string // a substring of Outcome.Detail
	stdout  string // a substring of Outcome.Stdout
	goGuest bool   // slow on the interpreter
	// compilerOnly: the interpreter's own stack limit, 2,000 frames, is
	// lower than the meter's, so it ends deep recursion differently.
	compilerOnly bool
}{
	{name: "pass", module: "pass.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindPass, exit: 0},
	{name: "fail", module: "fail.wasm", lim: wasm.Limits{Fuel: 10_000}, kind: wasm.KindFail, exit: 3, detail: "exited 3"},
	{name: "infinite loop", module: "loop.wasm", lim: wasm.Limits{Fuel: 1_000_000}, kind: wasm.KindFuelExhausted, exit: -1},
	{name: "unbounded recursion", module: "recurse.wasm", lim: wasm.Limits{Fuel: 5_000}, kind: wasm.KindFuelExhausted, exit: -1},
	{name: "recursion past the depth limit", module: "recurse.wasm", lim: wasm.Limits{Fuel: wasm.DefaultFuel}, kind: wasm.KindTrap, exit: -1, detail: "call stack exhausted", compilerOnly: true},
	{name: "memory.fill in a loop", module: "fill.wasm", lim: wasm.Limits{Fuel: 100_000_000}, kind: wasm.KindFuelExhausted, exit: -1},
	{name: "memory.grow until refused", module: "grow.wasm", lim: wasm.Limits{Fuel: 1_000_000, MemoryMiB: 4}, kind: wasm.KindMemoryExceeded, exit: -1, detail: "memory limit of 4 MiB"},
	{name: "2 GiB initial memory", module: "bigmem.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindMemoryExceeded, exit: -1, detail: "32768 pages"},
	{name: "stdout flood", module: "flood.wasm", lim: wasm.Limits{Fuel: 100_000_000, StdoutBytes: 1000}, kind: wasm.KindOutputExceeded, exit: -1, detail: "stdout cap of 1000"},
	{name: "division by zero", module: "divzero.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindTrap, exit: -1, detail: "integer divide by zero"},
	{name: "unreachable", module: "unreachable.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindTrap, exit: -1, detail: "unreachable"},
	{name: "unknown import", module: "badimport.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindInvalidChecker, exit: -1, detail: "env.open_socket"},
	{name: "no _start", module: "nostart.wasm", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindInvalidChecker, exit: -1, detail: "_start"},
	{name: "garbage bytes", module: "", lim: wasm.Limits{Fuel: 1000}, kind: wasm.KindInvalidChecker, exit: -1, detail: "invalid checker"},
	{name: "garbage bytes unmetered", module: "", lim: wasm.Limits{}, kind: wasm.KindInvalidChecker, exit: -1, detail: "overruns the module"},
	// 8 MiB, the least Go's runtime starts in, and reached in a few
	// seconds on the interpreter (32 MiB took twenty).
	{name: "go out of memory", module: "oom.wasm", lim: wasm.Limits{Fuel: wasm.DefaultFuel, MemoryMiB: 8}, kind: wasm.KindMemoryExceeded, exit: 2, detail: "memory limit of 8 MiB", goGuest: true},
	{name: "go checker passes", module: "rows.wasm", in: `{"min_rows":2,"rows":[{"id":"a"},{"id":"b"}]}`, lim: wasm.Limits{Fuel: wasm.DefaultFuel}, kind: wasm.KindPass, exit: 0, stdout: "ok: 2 rows", goGuest: true},
	{name: "go checker fails", module: "rows.wasm", in: `{"rows":[]}`, lim: wasm.Limits{Fuel: wasm.DefaultFuel}, kind: wasm.KindFail, exit: 1, goGuest: true},
	{name: "go checker unmetered", module: "rows.wasm", in: `{"min_rows":1,"rows":[{"id":"a"}]}`, lim: wasm.Limits{}, kind: wasm.KindPass, exit: 0, goGuest: true},
	{name: "c checker", module: "primes.wasm", in: "1000 168", lim: wasm.Limits{Fuel: wasm.DefaultFuel}, kind: wasm.KindPass, exit: 0, stdout: "primes up to 1000: 168"},
}

func TestSandbox_Run(t *testing.T) {
	t.Parallel()
	results := map[string]map[string]wasm.Outcome{}
	for _, eng := range engines {
		sb := newSandbox(t, eng.cfg)
		results[eng.name] = map[string]wasm.Outcome{}
		for _, tc := range hostile {
			t.Run(eng.name+"/"+tc.name, func(t *testing.T) {
				if tc.compilerOnly && eng.cfg.Interpreter {
					t.Skip("the interpreter's stack is shallower than the meter's depth limit")
				}
				if tc.goGuest && eng.cfg.Interpreter && testing.Short() {
					t.Skip("go guests on the interpreter are slow; skipped in -short")
				}
				if tc.goGuest {
					skipGoGuestUnderRace(t)
				}
				module := []byte("\x00asm\x01\x00\x00\x00garbage")
				if tc.module != "" {
					module = fixture(t, tc.module)
				}
				lim := tc.lim
				if lim.Timeout == 0 {
					// The backstop is not what this table tests: a Go
					// guest on the interpreter, on a busy machine, may
					// need longer than the default.
					lim.Timeout = 5 * time.Minute
				}
				out := sb.Run(context.Background(), module, wasm.Input{Artifact: []byte(tc.in)}, lim)
				if out.Kind != tc.kind || out.ExitCode != tc.exit {
					t.Fatalf("kind %s exit %d, want %s exit %d; detail %q stderr %q", out.Kind, out.ExitCode, tc.kind, tc.exit, out.Detail, out.Stderr)
				}
				if !strings.Contains(out.Detail, tc.detail) {
					t.Errorf("detail %q, want it to contain %q", out.Detail, tc.detail)
				}
				if !strings.Contains(out.Stdout, tc.stdout) {
					t.Errorf("stdout %q, want it to contain %q", out.Stdout, tc.stdout)
				}
				if out.Pass != (tc.kind == wasm.KindPass) {
					t.Errorf("pass %v for kind %s", out.Pass, out.Kind)
				}
				if tc.lim.Fuel > 0 && out.Kind == wasm.KindFuelExhausted && out.FuelUsed != tc.lim.Fuel {
					t.Errorf("fuel used %d on exhaustion, want the limit %d", out.FuelUsed, tc.lim.Fuel)
				}
				if tc.lim.Fuel > 0 && tc.name != "pass" && out.Kind.Decides() && out.Kind != wasm.KindMemoryExceeded && out.FuelUsed == 0 {
					t.Errorf("a metered run used no fuel")
				}
				out.WallNS = 0
				results[eng.name][tc.name] = out
			})
		}
	}
	// Differential determinism: each outcome is the same, byte for byte
	// apart from wall time, on the compiler and the interpreter.
	for name, c := range results["compiler"] {
		i, ok := results["interpreter"][name]
		if !ok {
			continue
		}
		cj, _ := json.Marshal(c)
		ij, _ := json.Marshal(i)
		if string(cj) != string(ij) {
			t.Errorf("%s: engines differ:\ncompiler    %s\ninterpreter %s", name, cj, ij)
		}
	}
}

// TestSandbox_Run_probe checks what a Go guest can see of the host: nothing
// but its input, a fixed clock and seeded randomness; an hour's sleep
// returns at once.
func TestSandbox_Run_probe(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	start := time.Now()
	out := sb.Run(context.Background(), fixture(t, "probe.wasm"),
		wasm.Input{Artifact: []byte("the artifact"), Criteria: []byte(`{}`)}, wasm.DefaultLimits())
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("probe took %s: the hour's sleep did not return at once", took)
	}
	if out.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s\n%s", out.Kind, out.Detail, out.Stderr)
	}
	for _, want := range []string{
		"passwd: true\n",
		"write /in: true\n",
		"write /tmp: true\n",
		"env: 0\n",
		"args: [checker]\n",
		"now: 2022-01-01T00:00:00", // the fake clock starts at wazero's fake epoch
		"stdin: \"the artifact\"\n",
		"/in/artifact: \"the artifact\" <nil>\n",
		"/in/evidence: \"\" true\n",
		"/in: [artifact criteria.json]\n",
	} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.Stdout)
		}
	}
	if !strings.Contains(out.Stdout, "slept: 1h0m0.0") {
		t.Errorf("stdout lacks the sleep line:\n%s", out.Stdout)
	}
	// The same run again gives the same bytes: clock, randomness and all.
	again := sb.Run(context.Background(), fixture(t, "probe.wasm"),
		wasm.Input{Artifact: []byte("the artifact"), Criteria: []byte(`{}`)}, wasm.DefaultLimits())
	if again.Stdout != out.Stdout || again.FuelUsed != out.FuelUsed {
		t.Errorf("two runs differ:\n%s\n%s", out.Stdout, again.Stdout)
	}
}

func TestSandbox_Run_evidence(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	out := sb.Run(context.Background(), fixture(t, "probe.wasm"),
		wasm.Input{Artifact: []byte("a"), Evidence: []byte("counterexample")}, wasm.DefaultLimits())
	if !strings.Contains(out.Stdout, "/in/evidence: \"counterexample\" false\n") || !strings.Contains(out.Stdout, "/in: [artifact evidence]\n") {
		t.Errorf("evidence not mounted:\n%s", out.Stdout)
	}
}

// TestSandbox_Run_mounts: a front-end's Args replace argv, its Mounts sit
// beside /in without changing it, and a bad mount is refused.
func TestSandbox_Run_mounts(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	lib := fstest.MapFS{"lib/x.txt": {Data: []byte("x")}}
	out := sb.Run(context.Background(), fixture(t, "probe.wasm"), wasm.Input{
		Artifact: []byte("a"),
		Args:     []string{"python", "-I"},
		Mounts:   []wasm.Mount{{Dir: "/usr/local", FS: lib}},
	}, wasm.DefaultLimits())
	if out.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s\n%s", out.Kind, out.Detail, out.Stderr)
	}
	for _, want := range []string{"args: [python -I]\n", "/in: [artifact]\n", "passwd: true\n", "env: 0\n"} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.Stdout)
		}
	}
	for _, dir := range []string{"/in", "/in/lib", "/", "usr", "/usr/../etc", ""} {
		out := sb.Run(context.Background(), fixture(t, "pass.wasm"), wasm.Input{
			Mounts: []wasm.Mount{{Dir: dir, FS: lib}},
		}, wasm.DefaultLimits())
		if out.Kind != wasm.KindInvalidChecker {
			t.Errorf("mount at %q: kind %s, want invalid_checker", dir, out.Kind)
		}
	}
}

func TestSandbox_Run_timeout(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	t.Run("unmetered", func(t *testing.T) {
		out := sb.Run(context.Background(), fixture(t, "loop.wasm"), wasm.Input{}, wasm.Limits{Timeout: 50 * time.Millisecond})
		if out.Kind != wasm.KindTimeout || out.Kind.Decides() {
			t.Fatalf("kind %s, want a timeout that decides nothing", out.Kind)
		}
	})
	t.Run("metered", func(t *testing.T) {
		// The guest stops at its first fuel slice past the deadline.
		out := sb.Run(context.Background(), fixture(t, "loop.wasm"), wasm.Input{}, wasm.Limits{Fuel: 300_000_000, Timeout: time.Millisecond})
		if out.Kind != wasm.KindTimeout {
			t.Fatalf("kind %s, want timeout", out.Kind)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out := sb.Run(ctx, fixture(t, "loop.wasm"), wasm.Input{}, wasm.Limits{})
		if out.Kind != wasm.KindTimeout || !strings.Contains(out.Detail, "cancelled") {
			t.Fatalf("kind %s detail %q, want a cancelled timeout", out.Kind, out.Detail)
		}
	})
}

// TestSandbox_Run_fuelBudget: a budget of 1,000 stops a checker that needs
// more, and fuel used is the same on every run.
func TestSandbox_Run_fuelBudget(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := fixture(t, "primes.wasm")
	in := wasm.Input{Artifact: []byte("1000 168")}
	out := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: 1000})
	if out.Kind != wasm.KindFuelExhausted || out.FuelUsed != 1000 {
		t.Fatalf("kind %s fuel %d, want fuel_exhausted at 1000", out.Kind, out.FuelUsed)
	}
	full := sb.Run(context.Background(), module, in, wasm.DefaultLimits())
	if full.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s", full.Kind, full.Detail)
	}
	for range 3 {
		again := sb.Run(context.Background(), module, in, wasm.DefaultLimits())
		if again.FuelUsed != full.FuelUsed {
			t.Fatalf("fuel used %d then %d", full.FuelUsed, again.FuelUsed)
		}
	}
	// Exactly the fuel it needs is enough; one less is not.
	exact := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: full.FuelUsed})
	short := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: full.FuelUsed - 1})
	if exact.Kind != wasm.KindPass || short.Kind != wasm.KindFuelExhausted {
		t.Errorf("with %d fuel: %s; with one less: %s", full.FuelUsed, exact.Kind, short.Kind)
	}
}

// TestSandbox_Run_concurrent hammers one sandbox from many goroutines: every
// run gets its own instance and the same outcome.
func TestSandbox_Run_concurrent(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := fixture(t, "primes.wasm")
	want := sb.Run(context.Background(), module, wasm.Input{Artifact: []byte("2000 303")}, wasm.DefaultLimits())
	if want.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s", want.Kind, want.Detail)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := "2000 303"
			if i%2 == 1 {
				in = "2000 304"
			}
			out := sb.Run(context.Background(), module, wasm.Input{Artifact: []byte(in)}, wasm.DefaultLimits())
			if (i%2 == 0) != out.Pass || out.FuelUsed == 0 {
				t.Errorf("run %d: kind %s fuel %d", i, out.Kind, out.FuelUsed)
			}
		}()
	}
	wg.Wait()
}

// TestSandbox_cacheDir: a second sandbox over the same cache directory
// compiles nothing new and gives the same outcome.
func TestSandbox_cacheDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	module := fixture(t, "rows.wasm")
	in := wasm.Input{Artifact: []byte(`{"min_rows":0}`)}
	first := newSandbox(t, wasm.Config{CacheDir: dir}).Run(context.Background(), module, in, wasm.DefaultLimits())
	second := newSandbox(t, wasm.Config{CacheDir: dir}).Run(context.Background(), module, in, wasm.DefaultLimits())
	first.WallNS, second.WallNS = 0, 0
	if first != second || first.Kind != wasm.KindPass {
		t.Fatalf("outcomes differ or failed:\n%+v\n%+v", first, second)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "compiled"))
	if len(entries) == 0 {
		t.Errorf("nothing in the compilation cache directory")
	}
}

func TestSandbox_Validate(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	if err := sb.Validate(context.Background(), fixture(t, "pass.wasm")); err != nil {
		t.Errorf("pass.wasm: %v", err)
	}
	for name, want := range map[string]string{"badimport.wasm": "env.open_socket", "nostart.wasm": "_start"} {
		if err := sb.Validate(context.Background(), fixture(t, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, want)
		}
	}
	if err := sb.Validate(context.Background(), []byte("not wasm")); err == nil {
		t.Errorf("garbage validated")
	}
}

// goGuests are the fixtures built from Go.
var goGuests = map[string]bool{"rows.wasm": true, "probe.wasm": true, "oom.wasm": true}

// TestSandbox_meteringPreservesSemantics runs every fixture checker metered
// and unmetered: exit code, stdout and stderr must be the same.
func TestSandbox_meteringPreservesSemantics(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	for _, tc := range []struct {
		module, in string
		mib        uint32 // the memory limit; 0 is 32 MiB
	}{
		{"pass.wasm", "", 0},
		{"fail.wasm", "", 0},
		{"divzero.wasm", "", 0},
		{"unreachable.wasm", "", 0},
		{"flood.wasm", "", 0},
		{"grow.wasm", "", 0},
		{"primes.wasm", "5000 669", 0},
		{"primes.wasm", "5000 670", 0},
		{"primes.wasm", "garbage", 0},
		{"rows.wasm", `{"min_rows":2,"rows":[{"id":"a"},{"id":"b"}]}`, 0},
		{"rows.wasm", `{"rows":[{"id":""}],"min_rows":1}`, 0},
		{"rows.wasm", `not json`, 0},
		{"probe.wasm", "probe", 0},
		{"oom.wasm", "", 8}, // the least Go's runtime starts in: the limit is reached sooner
	} {
		t.Run(tc.module+"/"+tc.in, func(t *testing.T) {
			if goGuests[tc.module] {
				skipGoGuestUnderRace(t)
			}
			module := fixture(t, tc.module)
			in := wasm.Input{Artifact: []byte(tc.in)}
			lim := wasm.Limits{MemoryMiB: cmp.Or(tc.mib, 32), Timeout: time.Minute}
			plain := sb.Run(context.Background(), module, in, lim)
			lim.Fuel = wasm.DefaultFuel
			metered := sb.Run(context.Background(), module, in, lim)
			if plain.Kind != metered.Kind || plain.ExitCode != metered.ExitCode ||
				plain.Stdout != metered.Stdout || plain.Stderr != metered.Stderr ||
				plain.StdoutSHA256 != metered.StdoutSHA256 || plain.StderrSHA256 != metered.StderrSHA256 {
				t.Fatalf("metering changed the run:\nunmetered %s %d %q %q\nmetered   %s %d %q %q",
					plain.Kind, plain.ExitCode, plain.Stdout, plain.Stderr,
					metered.Kind, metered.ExitCode, metered.Stdout, metered.Stderr)
			}
		})
	}
}

// TestSandbox_fuelUnderLoad: the fuel a run uses does not depend on what
// else the machine is doing.
func TestSandbox_fuelUnderLoad(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := fixture(t, "primes.wasm")
	in := wasm.Input{Artifact: []byte("20000 2262")}
	quiet := sb.Run(context.Background(), module, in, wasm.DefaultLimits())
	if quiet.Kind != wasm.KindPass {
		t.Fatalf("kind %s: %s", quiet.Kind, quiet.Detail)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 { // keep both cores busy
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
					for i := range 100_000 {
						x += i
					}
				}
			}
		}()
	}
	for range 5 {
		busy := sb.Run(context.Background(), module, in, wasm.DefaultLimits())
		if busy.FuelUsed != quiet.FuelUsed || busy.Stdout != quiet.Stdout {
			t.Errorf("under load: fuel %d, quiet: %d", busy.FuelUsed, quiet.FuelUsed)
		}
	}
	close(stop)
	wg.Wait()
}

// TestSandbox_Run_limits: a fuel budget over MaxFuel is refused, and a run
// on a closed sandbox decides nothing.
func TestSandbox_Run_limits(t *testing.T) {
	t.Parallel()
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := sb.Run(context.Background(), fixture(t, "pass.wasm"), wasm.Input{}, wasm.Limits{Fuel: wasm.MaxFuel + 1})
	if out.Kind != wasm.KindInvalidChecker || !strings.Contains(out.Detail, "over the most") {
		t.Errorf("fuel over MaxFuel: %s %q", out.Kind, out.Detail)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	out = sb.Run(context.Background(), fixture(t, "pass.wasm"), wasm.Input{}, wasm.DefaultLimits())
	if out.Kind.Decides() {
		t.Errorf("a run on a closed sandbox decided: %s %q", out.Kind, out.Detail)
	}
}
