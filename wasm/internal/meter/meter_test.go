package meter

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// engines are the two wazero engines every differential test runs on.
var engines = []struct {
	name string
	cfg  func() wazero.RuntimeConfig
}{
	{"compiler", wazero.NewRuntimeConfigCompiler},
	{"interpreter", wazero.NewRuntimeConfigInterpreter},
}

func readWasm(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustInstrument(tb testing.TB, b []byte) []byte {
	tb.Helper()
	out, err := Instrument(b)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// errOutOfFuel is what the test host panics with when a run's fuel is
// spent.
var errOutOfFuel = errors.New("out of fuel")

// host is the environment the test modules import: the "assay" module
// whose fuel_slice hands out fuel in slices, as the sandbox does; env.charge,
// which charges fuel the way the sandbox's I/O functions do; and g.base.
type host struct {
	limit int64   // the run's fuel
	slice int64   // fuel handed out at a time
	given int64   // fuel handed out so far
	calls int     // calls of fuel_slice
	seen  []int64 // fuel used as env.charge found it
	// stop, when set, makes fuel_slice end the run at once, as a host
	// does when a run's deadline passes.
	stop bool
}

// testSlice is the slice the tests hand out unless they say otherwise:
// small and odd, so that slices end at many different points.
const testSlice = 997

// begin sets the counter of an instrumented module to the first slice of
// a run of limit fuel.
func (h *host) begin(g api.MutableGlobal, limit int64) {
	h.limit, h.given, h.calls = limit, min(h.slice, limit), 0
	g.Set(uint64(h.given))
}

// refill hands out slices until the counter is >= 0, or panics when the
// fuel is spent.
func (h *host) refill(g api.MutableGlobal) {
	if h.stop {
		panic(errStopped)
	}
	left := int64(g.Get())
	for left < 0 && h.given < h.limit {
		add := min(h.slice, h.limit-h.given)
		h.given += add
		left += add
	}
	g.Set(uint64(left))
	if left < 0 {
		panic(errOutOfFuel)
	}
}

// used is the fuel a run used: given less what is left.
func (h *host) used(g api.MutableGlobal) int64 { return h.given - int64(g.Get()) }

var errStopped = errors.New("stopped")

func fuelGlobal(mod api.Module) api.MutableGlobal {
	g, _ := mod.ExportedGlobal(GlobalExport).(api.MutableGlobal)
	return g
}

func (h *host) instantiate(tb testing.TB, ctx context.Context, r wazero.Runtime) {
	tb.Helper()
	if h.slice == 0 {
		h.slice = testSlice
	}
	_, err := r.NewHostModuleBuilder(SliceModule).NewFunctionBuilder().
		WithFunc(func(ctx context.Context, mod api.Module) {
			h.calls++
			h.refill(fuelGlobal(mod))
		}).Export(SliceFunc).Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(ctx context.Context, mod api.Module, n uint32) {
			g := fuelGlobal(mod)
			if g == nil {
				return // an uninstrumented module
			}
			h.seen = append(h.seen, h.used(g))
			g.Set(uint64(int64(g.Get()) - int64(n)))
			if int64(g.Get()) < 0 {
				h.refill(g)
			}
		}).Export("charge").Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := r.InstantiateWithConfig(ctx, readWasm(tb, "globalenv"), wazero.NewModuleConfig().WithName("g")); err != nil {
		tb.Fatal(err)
	}
}

// run is one call of an exported function.
type run struct {
	results []uint64
	err     error
	used    int64 // fuel used after the call (metered runs)
}

// instance is a module instantiated for the host contract: no start
// functions, fuel set, StartExport called.
type instance struct {
	r   wazero.Runtime
	mod api.Module
	h   *host
}

func newInstance(tb testing.TB, cfg wazero.RuntimeConfig, wasm []byte, metered bool, fuel int64) (*instance, error) {
	tb.Helper()
	return newInstanceWith(tb, cfg, wasm, metered, fuel, &host{})
}

func newInstanceWith(tb testing.TB, cfg wazero.RuntimeConfig, wasm []byte, metered bool, fuel int64, h *host) (*instance, error) {
	tb.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { r.Close(ctx) })
	h.instantiate(tb, ctx, r)
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		tb.Fatalf("instantiate: %v", err)
	}
	in := &instance{r: r, mod: mod, h: h}
	if metered {
		h.begin(in.global(), fuel)
		if start := mod.ExportedFunction(StartExport); start != nil {
			if _, err := start.Call(ctx); err != nil {
				return in, err
			}
		}
	}
	return in, nil
}

func (in *instance) global() api.MutableGlobal { return fuelGlobal(in.mod) }

func (in *instance) used() int64 { return in.h.used(in.global()) }

func (in *instance) call(tb testing.TB, fn string, args ...uint64) run {
	tb.Helper()
	f := in.mod.ExportedFunction(fn)
	if f == nil {
		tb.Fatalf("no export %q", fn)
	}
	res, err := f.Call(context.Background(), args...)
	out := run{results: res, err: err}
	if in.global() != nil {
		out.used = in.used()
	}
	return out
}

// calls are the exported functions the differential tests run.
var calls = []struct {
	file, fn string
	args     []uint64
}{
	{"loop", "sum", []uint64{1000}},
	{"loop", "sum", []uint64{0}},
	{"exact", "add", []uint64{2, 3}},
	{"exact", "pick", []uint64{0}},
	{"exact", "pick", []uint64{1}},
	{"exact", "three", nil},
	{"blocks", "classify", []uint64{0}},
	{"blocks", "classify", []uint64{1}},
	{"blocks", "classify", []uint64{2}},
	{"blocks", "classify", []uint64{3}},
	{"blocks", "classify", []uint64{99}},
	{"blocks", "sign", []uint64{api.EncodeI32(-4)}},
	{"blocks", "sign", []uint64{0}},
	{"blocks", "sign", []uint64{9}},
	{"blocks", "clamp", []uint64{api.EncodeI32(-4)}},
	{"blocks", "clamp", []uint64{5}},
	{"blocks", "clamp", []uint64{50}},
	{"blocks", "mix", []uint64{500}},
	{"recursion", "fib", []uint64{15}},
	{"indirect", "apply", []uint64{0, 21}},
	{"indirect", "apply", []uint64{1, 9}},
	{"indirect", "apply", []uint64{2, 6}},
	{"indirect", "apply", []uint64{7, 6}}, // traps: undefined element
	{"multivalue", "divmod", []uint64{17, 5}},
	{"multivalue", "divmod", []uint64{17, 0}}, // traps: division by zero
	{"multivalue", "tri", []uint64{100}},
	{"multivalue", "order", []uint64{9, 4}},
	{"multivalue", "order", []uint64{4, 9}},
	{"bulk", "fillcopy", []uint64{300, 7}},
	{"bulk", "init", []uint64{16}},
	{"bulk", "init", []uint64{17}}, // traps: out of bounds
	{"bulk", "grow", []uint64{2}},
	{"bulk", "grow", []uint64{9}}, // fails: above the maximum
	{"bulk", "size", nil},
	{"bulk", "tables", nil},
	{"simd", "simd", []uint64{12345}},
	{"start", "get", nil},
	{"import", "work", nil},
	{"import", "loop", []uint64{5}},
	{"renumber", "apply", []uint64{0, 7}},
	{"renumber", "apply", []uint64{1, 7}},
	{"renumber", "apply", []uint64{2, 7}},
	{"renumber", "apply", []uint64{3, 7}},
	{"renumber", "apply", []uint64{4, 7}}, // traps: null element
	{"renumber", "apply", []uint64{5, 7}}, // traps: unreachable in $deeper
	{"renumber", "passive", []uint64{4}},
	{"renumber", "refs", []uint64{4}},
	{"renumber", "direct", []uint64{4}},
	{"renumber", "fact", []uint64{6}},
	{"renumber", "boom", []uint64{1}}, // traps
}

const bigFuel = 1 << 40

// TestInstrument_SameResults runs every call unmetered and metered on both
// engines: results and traps must match, and fuel used must be the same on
// both engines and on a repeated run.
func TestInstrument_SameResults(t *testing.T) {
	t.Parallel()
	for _, c := range calls {
		t.Run(c.file+"/"+c.fn, func(t *testing.T) {
			orig := readWasm(t, c.file)
			metered := mustInstrument(t, orig)
			var used []int64
			trapped := false
			for _, e := range engines {
				o, err := newInstance(t, e.cfg(), orig, false, 0)
				if err != nil {
					t.Fatal(err)
				}
				want := o.call(t, c.fn, c.args...)
				trapped = want.err != nil
				for rep := 0; rep < 2; rep++ {
					m, err := newInstance(t, e.cfg(), metered, true, bigFuel)
					if err != nil {
						t.Fatal(err)
					}
					got := m.call(t, c.fn, c.args...)
					if (want.err == nil) != (got.err == nil) {
						t.Fatalf("%s: error %v, want %v", e.name, got.err, want.err)
					}
					if !equalResults(got.results, want.results) {
						t.Fatalf("%s: results %v, want %v", e.name, got.results, want.results)
					}
					if got.used > bigFuel {
						t.Fatalf("%s: used %d, more than the fuel", e.name, got.used)
					}
					used = append(used, got.used)
				}
			}
			for _, u := range used[1:] {
				if u != used[0] {
					t.Fatalf("fuel used differs between runs or engines: %v", used)
				}
			}
			// A trap other than unreachable leaves the global at its last
			// sync point, here the entry of the called function.
			if used[0] <= 0 && !trapped {
				t.Fatalf("fuel used %d, want > 0", used[0])
			}
		})
	}
}

func equalResults(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fuelUsed runs one call on both engines and returns the fuel it used,
// failing unless both agree.
func fuelUsed(t *testing.T, file, fn string, args ...uint64) int64 {
	t.Helper()
	metered := mustInstrument(t, readWasm(t, file))
	used := int64(-1)
	for _, e := range engines {
		m, err := newInstance(t, e.cfg(), metered, true, bigFuel)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.call(t, fn, args...); got.err != nil {
			t.Fatalf("%s: %v", e.name, got.err)
		}
		u := m.used()
		if used >= 0 && u != used {
			t.Fatalf("%s used %d, the other engine %d", e.name, u, used)
		}
		used = u
	}
	return used
}

// TestInstrument_ExactFuel checks hand-counted costs (see the comments in
// testdata/exact.wat and friends).
func TestInstrument_ExactFuel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, fn string
		args     []uint64
		want     int64
	}{
		{"exact", "add", []uint64{1, 2}, 3},
		{"exact", "pick", []uint64{0}, 4},
		{"exact", "pick", []uint64{1}, 4},
		{"exact", "three", nil, 26},
		{"start", "get", nil, 120 + 1}, // the start function, then get
		{"import", "work", nil, 9 + HostCallCost + 100},
		{"import", "loop", []uint64{5}, 5 * (8 + HostCallCost + 1)},
		// fillcopy: 2 bulk ops of n bytes plus 14 static.
		{"bulk", "fillcopy", []uint64{100, 1}, 14 + 200},
		{"bulk", "fillcopy", []uint64{1000, 1}, 14 + 2000},
		// grow: local.get, memory.grow = 2, GrowCost granted or not, plus
		// PageCost per page granted.
		{"bulk", "grow", []uint64{0}, 2 + GrowCost},
		{"bulk", "grow", []uint64{3}, 2 + GrowCost + 3*PageCost},
		{"bulk", "grow", []uint64{4}, 2 + GrowCost}, // refused: 1+4 pages > max 4
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.fn, func(t *testing.T) {
			if got := fuelUsed(t, tt.file, tt.fn, tt.args...); got != tt.want {
				t.Fatalf("fuel used %d, want %d", got, tt.want)
			}
		})
	}
}

// TestInstrument_Exhausted runs code that never ends on its own: the host
// must end it when the fuel is spent, having handed out all of it, with
// more than that used.
func TestInstrument_Exhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, fn string
		args     []uint64
		fuel     int64
	}{
		{"loop", "forever", nil, 1_000_000},
		{"recursion", "down", []uint64{0}, 4_000}, // within the interpreter's depth limit
		{"bulk", "fillforever", nil, 100_000_000},
		{"loop", "sum", []uint64{1000}, 1000}, // needs more than 1000
		{"recursion", "fib", []uint64{20}, 1000},
		{"import", "loop", []uint64{1000}, 1000}, // the host runs it out
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.fn, func(t *testing.T) {
			metered := mustInstrument(t, readWasm(t, tt.file))
			for _, e := range engines {
				m, err := newInstance(t, e.cfg(), metered, true, tt.fuel)
				if err != nil {
					t.Fatal(err)
				}
				got := m.call(t, tt.fn, tt.args...)
				if !errors.Is(got.err, errOutOfFuel) {
					t.Fatalf("%s: error %v, used %d; want out of fuel", e.name, got.err, got.used)
				}
				if m.h.given != tt.fuel || got.used <= tt.fuel {
					t.Fatalf("%s: given %d, used %d; want all %d given and more used", e.name, m.h.given, got.used, tt.fuel)
				}
			}
		})
	}
}

// TestInstrument_Start checks that the start function does not run at
// instantiation, runs under StartExport, and is metered.
func TestInstrument_Start(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "start"))
	for _, e := range engines {
		m, err := newInstance(t, e.cfg(), metered, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.h.begin(m.global(), 5001)
		if got := m.call(t, "get"); got.err != nil || got.results[0] != 0 {
			t.Fatalf("%s: start ran at instantiation: %v %v", e.name, got.results, got.err)
		}
		m.h.begin(m.global(), 5000)
		if _, err := m.mod.ExportedFunction(StartExport).Call(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Ten iterations of a 12-instruction loop body.
		if used := m.used(); used != 120 {
			t.Fatalf("%s: start used %d, want 120", e.name, used)
		}
		if got := m.call(t, "get"); got.results[0] != 45 {
			t.Fatalf("%s: get = %d, want 45", e.name, got.results[0])
		}
	}
}

// TestInstrument_HostSync checks that the counter is in the global when a
// host function runs, and that the host's charge is seen after it returns.
func TestInstrument_HostSync(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "import"))
	for _, e := range engines {
		m, err := newInstance(t, e.cfg(), metered, true, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		m.call(t, "loop", 3)
		// Each iteration charges its 8 instructions and the host call,
		// then the host takes 1.
		const it = 8 + HostCallCost
		want := []int64{it, 2*it + 1, 3*it + 2}
		if !equalInts(m.h.seen, want) {
			t.Fatalf("%s: host saw %v used, want %v", e.name, m.h.seen, want)
		}
		if used := m.used(); used != 3*it+3 {
			t.Fatalf("%s: used %d, want %d", e.name, used, 3*it+3)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInstrument_GoHello instruments a Go wasip1 program and runs it to the
// same output and exit code as the original.
func TestInstrument_GoHello(t *testing.T) {
	t.Parallel()
	orig := readWasm(t, "gohello")
	metered := mustInstrument(t, orig)
	runGo := func(cfg wazero.RuntimeConfig, wasm []byte, fuel int64) (string, uint32, int64) {
		ctx := context.Background()
		r := wazero.NewRuntimeWithConfig(ctx, cfg)
		defer r.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
		h := &host{slice: 1 << 20}
		h.instantiate(t, ctx, r)
		var stdout bytes.Buffer
		mc := wazero.NewModuleConfig().WithStdout(&stdout).WithStdin(strings.NewReader("world")).
			WithStartFunctions()
		mod, err := r.InstantiateWithConfig(ctx, wasm, mc)
		if err != nil {
			t.Fatal(err)
		}
		g := fuelGlobal(mod)
		if g != nil {
			h.begin(g, fuel)
		}
		_, err = mod.ExportedFunction("_start").Call(ctx)
		var exit *sys.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("_start: %v", err)
		}
		used := int64(0)
		if g != nil {
			used = h.used(g)
		}
		return stdout.String(), exit.ExitCode(), used
	}
	wantOut, wantCode, _ := runGo(wazero.NewRuntimeConfigInterpreter(), orig, 0)
	if !strings.HasPrefix(wantOut, "hello world ") || wantCode != 3 {
		t.Fatalf("original: %q, exit %d", wantOut, wantCode)
	}
	var used []int64
	for _, e := range engines {
		out, code, u := runGo(e.cfg(), metered, bigFuel)
		if out != wantOut || code != wantCode {
			t.Fatalf("%s: %q exit %d, want %q exit %d", e.name, out, code, wantOut, wantCode)
		}
		used = append(used, u)
	}
	if used[0] != used[1] || used[0] <= 0 {
		t.Fatalf("fuel used %v", used)
	}
	t.Logf("gohello: %d bytes -> %d bytes, fuel used %d", len(orig), len(metered), used[0])
}

// TestInstrument_Depth: a call chain deeper than MaxDepth traps with the
// depth counter at DepthExceeded on the compiler, whose own stack would
// allow far more; calls that return leave the counter at zero.
func TestInstrument_Depth(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "recursion"))
	depth := func(in *instance) int32 {
		return int32(in.mod.ExportedGlobal(DepthExport).Get())
	}
	for _, e := range engines {
		m, err := newInstance(t, e.cfg(), metered, true, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.call(t, "fib", 15); got.err != nil || got.results[0] != 610 {
			t.Fatalf("%s: fib(15) = %v, %v", e.name, got.results, got.err)
		}
		if d := depth(m); d != 0 {
			t.Fatalf("%s: depth %d after returning, want 0", e.name, d)
		}
	}
	// The interpreter's own limit (2,000 frames) is lower than MaxDepth,
	// so only the compiler reaches the module's.
	m, err := newInstance(t, engines[0].cfg(), metered, true, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	got := m.call(t, "down", 0)
	if got.err == nil || depth(m) != DepthExceeded {
		t.Fatalf("down: depth %d, err %v; want a trap at DepthExceeded", depth(m), got.err)
	}
	if got.used > 1<<40 {
		t.Fatalf("down: used %d, want it synced and within the fuel", got.used)
	}
}
