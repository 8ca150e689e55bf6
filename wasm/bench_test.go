package wasm

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/wasm/internal/meter"
)

func benchFixture(b *testing.B, name string) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchSandbox(b *testing.B, cfg Config) *Sandbox {
	b.Helper()
	s, err := NewSandbox(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCompile measures compiling a Go-compiled checker (3 MB of wasm)
// cold, and again from a warm compilation cache directory in a new sandbox,
// which is what a restarted server or a second `assay check` pays.
func BenchmarkCompile(b *testing.B) {
	module := benchFixture(b, "rows.wasm")
	in := Input{Artifact: []byte(`{"min_rows":0}`)}
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			s := benchSandbox(b, Config{})
			if c, err := s.metered.compile(ctx, [32]byte{1}, module); err != nil || c.err != nil {
				b.Fatal(err, c)
			}
			s.Close(ctx)
		}
	})
	b.Run("dircache", func(b *testing.B) {
		dir := b.TempDir()
		warm := benchSandbox(b, Config{CacheDir: dir})
		if out := warm.Run(ctx, module, in, DefaultLimits()); out.Kind != KindPass {
			b.Fatal(out.Detail)
		}
		warm.Close(ctx)
		for b.Loop() {
			s := benchSandbox(b, Config{CacheDir: dir})
			if c, err := s.metered.compile(ctx, [32]byte{1}, module); err != nil || c.err != nil {
				b.Fatal(err, c)
			}
			s.Close(ctx)
		}
	})
}

// BenchmarkRun measures a replay from a warm cache: a fresh instance, the
// run, the outcome.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	s := benchSandbox(b, Config{})
	defer s.Close(ctx)
	for _, bc := range []struct {
		name, module, in string
	}{
		{"wat-trivial", "pass.wasm", ""},
		{"go-checker", "rows.wasm", `{"min_rows":1,"rows":[{"id":"a"}]}`},
		{"c-checker", "primes.wasm", "100 25"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			module := benchFixture(b, bc.module)
			in := Input{Artifact: []byte(bc.in)}
			if out := s.Run(ctx, module, in, DefaultLimits()); out.Kind != KindPass {
				b.Fatal(out.Detail)
			}
			b.ReportAllocs()
			for b.Loop() {
				if out := s.Run(ctx, module, in, DefaultLimits()); out.Kind != KindPass {
					b.Fatal(out.Detail)
				}
			}
		})
	}
}

// BenchmarkMetering compares, in one run on the same modules, a metered run
// with an unmetered one on an engine without context-done checks (the
// floor), and with an unmetered one under WithCloseOnContextDone (what a
// wall-clock bound would cost instead of fuel). Divide the ns/op figures.
func BenchmarkMetering(b *testing.B) {
	ctx := context.Background()
	s := benchSandbox(b, Config{})
	defer s.Close(ctx)
	bare, err := s.newEngine(ctx, false, false)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.rt.Close(ctx)
	for _, bc := range []struct {
		name, module, in string
	}{
		{"c-primes", "primes.wasm", "300000 25997"},
		{"go-checker", "rows.wasm", `{"min_rows":1,"rows":[{"id":"a"}]}`},
	} {
		module := benchFixture(b, bc.module)
		in := Input{Artifact: []byte(bc.in)}
		for _, mode := range []struct {
			name string
			e    *engine
			fuel uint64
		}{
			{"unmetered", bare, 0},
			{"metered", s.metered, DefaultFuel},
			{"closeOnDone", s.unmetered, 0},
		} {
			b.Run(bc.name+"/"+mode.name, func(b *testing.B) {
				lim := Limits{Fuel: mode.fuel}
				if out := s.runOn(ctx, mode.e, sha256.Sum256(module), module, in, lim, false); out.Kind != KindPass {
					b.Fatal(out.Kind, out.Detail)
				}
				for b.Loop() {
					s.runOn(ctx, mode.e, sha256.Sum256(module), module, in, lim, false)
				}
			})
		}
	}
}

// BenchmarkReplay measures replays from a warm cache (module compiled,
// snapshot taken), through RunSum as the runner at scale calls it (the
// module is not hashed per run): a reactor from its snapshot, the same
// reactor cold (_initialize in every run), and commands beside them.
// Snapshot images are copied into pooled buffers up to copyMax bytes and
// mapped copy-on-write above, unless the first replay touched much of the
// image: the -mapped and -copied cases force one or the other. big-reactor has a 20 MiB state, written in full by
// _initialize (an interpreter's is 10-30 MiB), and touches three pages
// per check; goreactor (3.4 MiB) touches most of its. The Go cases run
// when fixtures/checkers/goreactor.wasm and gocommand.wasm are built.
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	auto := benchSandbox(b, Config{})
	defer auto.Close(ctx)
	mapped := benchSandbox(b, Config{})
	mapped.copyMax, mapped.noAdapt = 0, true
	defer mapped.Close(ctx)
	copied := benchSandbox(b, Config{})
	copied.copyMax = 1 << 40
	defer copied.Close(ctx)
	type runFunc func(*Sandbox, context.Context, [32]byte, []byte, Input, Limits) Outcome
	const rows = `{"min_rows":1,"rows":[{"id":"a"}]}`
	for _, bc := range []struct {
		name, module, in string
		s                *Sandbox
		run              runFunc
	}{
		{"trivial-reactor-snapshot", "reactor_pass.wasm", "", auto, (*Sandbox).RunSum},
		{"trivial-reactor-cold", "reactor_pass.wasm", "", auto, (*Sandbox).RunColdSum},
		{"trivial-command", "pass.wasm", "", auto, (*Sandbox).RunSum},
		{"state-reactor-snapshot", "reactor_state.wasm", "", auto, (*Sandbox).RunSum},
		{"big-reactor-snapshot", "reactor_big.wasm", "", auto, (*Sandbox).RunSum},
		{"big-reactor-snapshot-mapped", "reactor_big.wasm", "", mapped, (*Sandbox).RunSum},
		{"big-reactor-snapshot-copied", "reactor_big.wasm", "", copied, (*Sandbox).RunSum},
		{"big-reactor-cold", "reactor_big.wasm", "", auto, (*Sandbox).RunColdSum},
		{"goreactor-snapshot", "goreactor.wasm", rows, auto, (*Sandbox).RunSum},
		{"goreactor-snapshot-mapped", "goreactor.wasm", rows, mapped, (*Sandbox).RunSum},
		{"goreactor-snapshot-copied", "goreactor.wasm", rows, copied, (*Sandbox).RunSum},
		{"goreactor-cold", "goreactor.wasm", rows, auto, (*Sandbox).RunColdSum},
		{"gocommand", "gocommand.wasm", rows, auto, (*Sandbox).RunSum},
	} {
		b.Run(bc.name, func(b *testing.B) {
			module, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", bc.module))
			if os.IsNotExist(err) {
				b.Skipf("%s is not built", bc.module)
			} else if err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(module)
			in := Input{Artifact: []byte(bc.in)}
			lim := DefaultLimits()
			lim.Timeout = 5 * time.Minute // the first run compiles
			if out := bc.run(bc.s, ctx, sum, module, in, lim); !out.Kind.Decides() {
				b.Fatal(out.Kind, out.Detail)
			}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if out := bc.run(bc.s, ctx, sum, module, in, lim); !out.Kind.Decides() {
					b.Fatal(out.Kind, out.Detail)
				}
			}
			// The process's CPU time per replay (GC included), which a
			// machine shared with other work inflates less than ns/op.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompilePeak reports the peak resident memory one compilation
// adds to the process (peak-rss-MiB: the high-water mark, reset before it,
// less the resident set before it) and its wall time, for the largest real
// module (CPython) and for synthetic modules at the meter's upload limits:
// meter.MaxCodeSize of code, in bodies of meter.MaxBodySize or in
// meter.MaxFunctions small ones, each with meter.MaxLocals locals and all
// straight-line arithmetic on them. The package documentation states the
// bound from it. The interpreter is measured on the smaller cases only: it
// serves differential tests, not servers.
func BenchmarkCompilePeak(b *testing.B) {
	python, err := os.ReadFile(filepath.Join("..", "checkers", "python", "runtime", "python.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		module []byte
		interp bool
	}{
		{"python/compiler", python, false},
		{"python/interpreter", python, true},
		{"limits-big-bodies/compiler", limitsModule(b, meter.MaxBodySize), false},
		{"limits-big-bodies/interpreter", limitsModule(b, meter.MaxBodySize), true},
		{"limits-many-functions/compiler", limitsModule(b, meter.MaxCodeSize/meter.MaxFunctions), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			var peak uint64
			for i := 0; b.Loop(); i++ {
				s := benchSandbox(b, Config{Interpreter: bc.interp})
				runtime.GC()
				debug.FreeOSMemory()
				before := residentBytes()
				if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
					b.Skip("cannot reset the resident high-water mark:", err)
				}
				if c, err := s.metered.compile(ctx, [32]byte{byte(i), 2}, bc.module); err != nil || c.err != nil {
					b.Fatal(err, c.err)
				}
				peak = max(peak, peakResidentBytes()-before)
				s.Close(ctx)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
		})
	}
}

// peakResidentBytes is the process's resident high-water mark (VmHWM).
func peakResidentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			fmt.Sscan(v, &kb)
			return kb << 10
		}
	}
	return 0
}

// residentBytes is the process's resident set, from /proc (0 elsewhere).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident uint64
	fmt.Sscan(string(b), &size, &resident)
	return resident * uint64(os.Getpagesize())
}

// limitsModule builds a command at the meter's upload limits (see
// BenchmarkCompilePeak), its code in bodies of about bodySize bytes: as
// many as meter.MaxCodeSize holds, at most meter.MaxFunctions.
func limitsModule(tb testing.TB, bodySize int) []byte {
	tb.Helper()
	leb := func(b []byte, v uint32) []byte {
		for v >= 0x80 {
			b = append(b, byte(v)|0x80)
			v >>= 7
		}
		return append(b, byte(v))
	}
	section := func(out []byte, id byte, body []byte) []byte {
		return append(leb(append(out, id), uint32(len(body))), body...)
	}
	// One body: MaxLocals-1 i32 locals, then local.get a; local.get b;
	// i32.add; local.set c over them until MaxBodySize.
	var body []byte
	body = leb(body, 1)
	body = leb(body, meter.MaxLocals-1)
	body = append(body, 0x7f)
	for i := uint32(0); len(body) < bodySize-16; i++ {
		a, c := i%(meter.MaxLocals-1), (i*7+3)%(meter.MaxLocals-1)
		body = append(body, 0x20)
		body = leb(body, a)
		body = append(body, 0x20)
		body = leb(body, c)
		body = append(body, 0x6a, 0x21)
		body = leb(body, (a+c)%(meter.MaxLocals-1))
	}
	body = append(body, 0x0b)
	n := uint32(min(meter.MaxCodeSize/(len(body)+4), meter.MaxFunctions-1))
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = section(out, 1, []byte{1, 0x60, 0, 0})
	funcs := leb(nil, n)
	for range n {
		funcs = append(funcs, 0)
	}
	out = section(out, 3, funcs)
	out = section(out, 5, []byte{1, 0, 1})
	out = section(out, 7, append(append([]byte{2, 6}, "_start\x00\x00"...), append([]byte{6}, "memory\x02\x00"...)...))
	code := leb(nil, n)
	for range n {
		code = leb(code, uint32(len(body)))
		code = append(code, body...)
	}
	return section(out, 10, code)
}
