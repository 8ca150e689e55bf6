package wasm_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/wasm"
)

// testdata reads one of the package's own fixtures (wasm/testdata, each
// .wasm beside its .wat).
func testdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitFor polls cond until it holds, and fails the test when it does not
// within a minute.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("waited a minute for %s", what)
		}
	}
}

// running reports whether sb runs n guests or more.
func running(sb *wasm.Sandbox, n int) func() bool {
	return func() bool { return sb.Stats().Guests >= n }
}

// assertIdle fails when the process burns a core's worth of CPU over a
// while after a run returned: a guest left running in the background
// would use about all of it.
func assertIdle(tb testing.TB) {
	tb.Helper()
	const window = 500 * time.Millisecond
	before := processCPU(tb)
	time.Sleep(window) // the window the CPU is measured over, not a wait for something to happen
	if used := processCPU(tb) - before; used > window/3 {
		tb.Errorf("the process used %s of CPU in the %s after the run returned: a guest runs on", used, window)
	}
}

// stopBound is how long after its deadline a spinning guest may take to
// stop: a few fuel slices, generously (the interpreter is tens of times
// slower per fuel than the compiler, and the machine is shared). A guest
// that is not stopped runs until MaxFuel (2.4 s of slowspin on the
// compiler here, minutes on the interpreter) and ends fuel_exhausted, not
// timeout.
func stopBound(tb testing.TB, cfg wasm.Config) time.Duration {
	tb.Helper()
	if cfg.Interpreter && raceEnabled {
		tb.Skip("under the race detector a fuel slice takes the interpreter about ten seconds")
	}
	if cfg.Interpreter {
		return 10 * time.Second
	}
	return time.Second
}

// spinners are guests that never end before MaxFuel, seconds of wall time
// (dependent divisions, 0.6 ns a fuel here), in every form a run takes: a
// command, a reactor from its snapshot, a reactor cold.
var spinners = []struct {
	name   string
	module string
	cold   bool
}{
	{"command", "slowspin.wasm", false},
	{"reactor snapshot", "reactor_spin.wasm", false},
	{"reactor cold", "reactor_spin.wasm", true},
}

func run(sb *wasm.Sandbox, ctx context.Context, module []byte, lim wasm.Limits, cold bool) wasm.Outcome {
	if cold {
		return sb.RunCold(ctx, module, wasm.Input{}, lim)
	}
	return sb.Run(ctx, module, wasm.Input{}, lim)
}

// TestSandbox_Run_deadlineStopsGuest: a spinning guest on a short deadline
// stops within a few slices, Run returns then with a timeout that decides
// nothing, and no CPU is burnt afterwards, on both engines, for commands
// and reactors, metered and unmetered.
func TestSandbox_Run_deadlineStopsGuest(t *testing.T) {
	for _, eng := range engines {
		sb := newSandbox(t, eng.cfg)
		for _, sp := range spinners {
			for _, fuel := range []uint64{wasm.MaxFuel, 0} {
				name := eng.name + "/" + sp.name
				if fuel == 0 {
					name += "/unmetered"
				}
				t.Run(name, func(t *testing.T) {
					bound := stopBound(t, eng.cfg)
					module := testdata(t, sp.module)
					const deadline = 100 * time.Millisecond
					start := time.Now()
					out := run(sb, context.Background(), module, wasm.Limits{Fuel: fuel, Timeout: deadline}, sp.cold)
					took := time.Since(start)
					if out.Kind != wasm.KindTimeout || out.Kind.Decides() || !strings.Contains(out.Detail, "backstop") {
						t.Fatalf("kind %s detail %q, want a timeout of the backstop", out.Kind, out.Detail)
					}
					if took > deadline+bound {
						t.Errorf("Run returned %s after a %s deadline", took, deadline)
					}
					assertIdle(t)
				})
			}
		}
	}
}

// TestSandbox_Run_cancelStopsGuest: cancelling a run's context mid-run
// stops its guest, and the outcome says so.
func TestSandbox_Run_cancelStopsGuest(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			bound := stopBound(t, eng.cfg)
			sb := newSandbox(t, eng.cfg)
			ctx, cancel := context.WithCancel(context.Background())
			const after = 100 * time.Millisecond
			time.AfterFunc(after, cancel)
			start := time.Now()
			out := sb.Run(ctx, testdata(t, "slowspin.wasm"), wasm.Input{}, wasm.Limits{Fuel: wasm.MaxFuel, Timeout: time.Hour})
			took := time.Since(start)
			if out.Kind != wasm.KindTimeout || !strings.Contains(out.Detail, "cancelled") {
				t.Fatalf("kind %s detail %q, want a cancelled timeout", out.Kind, out.Detail)
			}
			if took > after+bound {
				t.Errorf("Run returned %s after a cancellation at %s", took, after)
			}
			assertIdle(t)
		})
	}
}

// TestSandbox_Close_stopsGuests: Close during spinning runs, a command and
// a reactor's _initialize being snapshotted, stops them and returns
// promptly; the runs end in outcomes that decide nothing.
func TestSandbox_Close_stopsGuests(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			bound := stopBound(t, eng.cfg)
			sb, err := wasm.NewSandbox(context.Background(), wasm.Config{Interpreter: eng.cfg.Interpreter, CacheDir: cacheDir})
			if err != nil {
				t.Fatal(err)
			}
			lim := wasm.Limits{Fuel: wasm.MaxFuel, Timeout: time.Hour}
			outs := make([]wasm.Outcome, 2)
			var wg sync.WaitGroup
			for i, module := range []string{"slowspin.wasm", "reactor_initspin.wasm"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[i] = sb.Run(context.Background(), testdata(t, module), wasm.Input{}, lim)
				}()
			}
			// The command holds a guest slot; the reactor's _initialize
			// runs as its snapshot is taken, beside the slots.
			waitFor(t, "both guests to spin", func() bool { return sb.Stats().Guests >= 1 && wasm.SnapshotsTaken(sb) >= 1 })
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := sb.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > bound {
				t.Errorf("Close took %s", took)
			}
			wg.Wait()
			for i, out := range outs {
				if out.Kind.Decides() {
					t.Errorf("run %d decided after Close: %s %q", i, out.Kind, out.Detail)
				}
			}
			assertIdle(t)
		})
	}
}

// TestSandbox_Run_gcWhileSpinning: a collection started while a guest
// spins does not wait for it: the guest meets a safe point at every fuel
// slice. Before slices stopping the world for a collection waited for the
// whole run (seconds), and every goroutine with it. The test reads the
// runtime's own measure of that wait (/sched/pauses/stopping/gc:seconds),
// not the collections' wall time, which a loaded machine stretches.
func TestSandbox_Run_gcWhileSpinning(t *testing.T) {
	sb := newSandbox(t, wasm.Config{})
	module := testdata(t, "slowspin.wasm")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan wasm.Outcome)
	go func() { done <- sb.Run(ctx, module, wasm.Input{}, wasm.Limits{Fuel: wasm.MaxFuel, Timeout: time.Hour}) }()
	waitFor(t, "the guest to spin", running(sb, 1))
	before := stoppingForGC()
	for range 5 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // spaces the collections over the guest's run; nothing to wait for
	}
	worst := worstSince(before, stoppingForGC())
	cancel()
	if out := <-done; out.Kind != wasm.KindTimeout {
		t.Fatalf("kind %s, want timeout: the guest ended before the collections", out.Kind)
	}
	if worst > 250*time.Millisecond {
		t.Errorf("stopping the world for a collection took up to %s while a guest spun", worst)
	}
}

// stoppingForGC reads the distribution of how long the runtime took to
// stop the world for a collection.
func stoppingForGC() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// worstSince is the upper bound of the highest bucket that gained a count
// between two readings of one histogram.
func worstSince(before, after *metrics.Float64Histogram) time.Duration {
	var worst float64
	for i := range after.Counts {
		if after.Counts[i] > before.Counts[i] {
			worst = after.Buckets[i+1]
		}
	}
	if math.IsInf(worst, 1) {
		worst = after.Buckets[len(after.Buckets)-2]
	}
	return time.Duration(worst * float64(time.Second))
}

// TestSandbox_Run_fuelEndsLoop: the cheapest loop ends fuel_exhausted
// with exactly its fuel used, on both engines, at limits about a fuel
// slice. That the default budget ends it well before the backstop is
// BenchmarkSpin's to show (its backstop-share), not a test's: how long it
// takes depends on the machine's load.
func TestSandbox_Run_fuelEndsLoop(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := testdata(t, "spin.wasm")
	interp := newSandbox(t, wasm.Config{Interpreter: true})
	// Under the race detector a fuel slice takes the interpreter about ten
	// seconds: its -short pass (make race) checks the compiler, and the
	// plain pass both.
	both := !raceEnabled || !testing.Short()
	for _, fuel := range []uint64{wasm.FuelSlice - 1, wasm.FuelSlice, wasm.FuelSlice + 1, 3*wasm.FuelSlice + 7} {
		lim := wasm.Limits{Fuel: fuel, Timeout: time.Minute}
		c := sb.Run(context.Background(), module, wasm.Input{}, lim)
		if c.Kind != wasm.KindFuelExhausted || c.FuelUsed != fuel {
			t.Errorf("fuel %d: compiler %s %d", fuel, c.Kind, c.FuelUsed)
		}
		if !both {
			continue
		}
		i := interp.Run(context.Background(), module, wasm.Input{}, lim)
		if i.Kind != wasm.KindFuelExhausted || i.FuelUsed != fuel {
			t.Errorf("fuel %d: interpreter %s %d", fuel, i.Kind, i.FuelUsed)
		}
	}
}

// TestSandbox_Run_exitStatus: only status exactly 0 passes. proc_exit(256),
// whose low byte is 0, fails with its whole status; a reactor that calls
// proc_exit(0) before assay_check returns fails, from a snapshot and cold.
func TestSandbox_Run_exitStatus(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		sb := newSandbox(t, eng.cfg)
		for _, fuel := range []uint64{wasm.DefaultFuel, 0} {
			t.Run(eng.name, func(t *testing.T) {
				lim := wasm.Limits{Fuel: fuel}
				out := sb.Run(context.Background(), testdata(t, "exit256.wasm"), wasm.Input{}, lim)
				if out.Kind != wasm.KindFail || out.ExitCode != 256 || out.Pass {
					t.Errorf("proc_exit(256): kind %s exit %d %q, want fail with 256", out.Kind, out.ExitCode, out.Detail)
				}
				module := testdata(t, "reactor_exit0.wasm")
				for _, cold := range []bool{false, true, false} {
					out := run(sb, context.Background(), module, lim, cold)
					if out.Kind != wasm.KindFail || out.Pass || out.ExitCode != 0 ||
						!strings.Contains(out.Detail, "called proc_exit(0) before assay_check returned") {
						t.Errorf("reactor proc_exit(0), cold %v: kind %s exit %d %q, want a fail", cold, out.Kind, out.ExitCode, out.Detail)
					}
				}
			})
		}
	}
}

// BenchmarkSpin reports how long the cheapest loop, (loop (br 0)), takes
// to spend DefaultFuel and MaxFuel on the compiler: what a runaway checker
// costs before fuel decides it; backstop-share is that time over the
// backstop (DefaultTimeout), which must stay well under 1 for fuel, not
// the clock, to decide.
func BenchmarkSpin(b *testing.B) {
	sb := newSandbox(b, wasm.Config{})
	module := testdata(b, "spin.wasm")
	for _, bc := range []struct {
		name string
		fuel uint64
	}{{"default", wasm.DefaultFuel}, {"max", wasm.MaxFuel}} {
		b.Run(bc.name, func(b *testing.B) {
			lim := wasm.Limits{Fuel: bc.fuel, Timeout: 10 * time.Minute}
			for b.Loop() {
				if out := sb.Run(context.Background(), module, wasm.Input{}, lim); out.Kind != wasm.KindFuelExhausted {
					b.Fatal(out.Kind, out.Detail)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bc.fuel), "ns/fuel")
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(wasm.DefaultTimeout), "backstop-share")
		})
	}
}

// TestSandbox_memoryBudget: runs whose memory limits together exceed the
// budget run one after the other; runs that fit together run together; a
// run that could never fit is refused at once, and one that waits past
// its deadline decides nothing.
func TestSandbox_memoryBudget(t *testing.T) {
	// 128 MiB: a quarter for snapshots, 96 MiB for runs.
	sb := newSandbox(t, wasm.Config{MemoryBudgetMiB: 128})
	spin, pass := testdata(t, "spin.wasm"), fixture(t, "pass.wasm")
	for _, tc := range []struct {
		name  string
		mib   uint32
		waits bool
	}{
		{"OK", 32, false},
		{"ErrOverTogether", 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			spun := make(chan wasm.Outcome)
			go func() {
				// Unmetered, so that only the cancellation ends it.
				spun <- sb.Run(ctx, spin, wasm.Input{}, wasm.Limits{MemoryMiB: tc.mib, Timeout: time.Hour})
			}()
			waitFor(t, "the spinner to be admitted", running(sb, 1))
			passed := make(chan wasm.Outcome)
			go func() {
				passed <- sb.Run(context.Background(), pass, wasm.Input{}, wasm.Limits{Fuel: 1000, MemoryMiB: tc.mib, Timeout: time.Hour})
			}()
			select {
			case out := <-passed:
				if tc.waits {
					t.Errorf("the second run ended (%s) while the first held the budget", out.Kind)
				} else if out.Kind != wasm.KindPass {
					t.Errorf("the second run: %s %q", out.Kind, out.Detail)
				}
			case <-time.After(time.Second):
				if !tc.waits {
					t.Errorf("the second run waited although both fit")
				}
			}
			cancel()
			if out := <-spun; out.Kind != wasm.KindTimeout {
				t.Errorf("the spinner: %s %q", out.Kind, out.Detail)
			}
			if tc.waits {
				select {
				case out := <-passed:
					if out.Kind != wasm.KindPass {
						t.Errorf("the second run, after the first: %s %q", out.Kind, out.Detail)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the second run did not start when the first ended")
				}
			}
		})
	}
	t.Run("ErrNeverFits", func(t *testing.T) {
		start := time.Now()
		out := sb.Run(context.Background(), pass, wasm.Input{}, wasm.Limits{Fuel: 1000, MemoryMiB: 100})
		if out.Kind != wasm.KindInvalidChecker || out.Kind.Decides() || !strings.Contains(out.Detail, "over what this server lets runs hold") {
			t.Errorf("kind %s %q, want a refusal", out.Kind, out.Detail)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("refused after %s, not at once", took)
		}
	})
	t.Run("ErrCallerEndsWait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go sb.Run(ctx, spin, wasm.Input{}, wasm.Limits{MemoryMiB: 64, Timeout: time.Hour})
		waitFor(t, "the spinner to be admitted", running(sb, 1))
		wait, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer stop()
		out := sb.Run(wait, pass, wasm.Input{}, wasm.Limits{Fuel: 1000, MemoryMiB: 64, Timeout: time.Hour})
		if out.Kind != wasm.KindTimeout || !strings.Contains(out.Detail, "waiting for memory") {
			t.Errorf("kind %s %q, want a timeout waiting for memory", out.Kind, out.Detail)
		}
	})
	// The backstop starts when a run is admitted: waiting for memory does
	// not use it up (it did, and turned disputes into timeouts).
	t.Run("OKBackstopAfterWait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		spun := make(chan wasm.Outcome)
		go func() { spun <- sb.Run(ctx, spin, wasm.Input{}, wasm.Limits{MemoryMiB: 64, Timeout: time.Hour}) }()
		waitFor(t, "the spinner to be admitted", running(sb, 1))
		passed := make(chan wasm.Outcome)
		go func() {
			passed <- sb.Run(context.Background(), pass, wasm.Input{}, wasm.Limits{Fuel: 1000, MemoryMiB: 64, Timeout: 200 * time.Millisecond})
		}()
		// The waiting run's backstop must pass while it waits: time
		// passing is what the test needs, not an event.
		time.Sleep(500 * time.Millisecond)
		cancel()
		<-spun
		if out := <-passed; out.Kind != wasm.KindPass {
			t.Errorf("kind %s %q, want a pass once admitted", out.Kind, out.Detail)
		}
	})
}

// TestSandbox_uploadLimits: a module over the meter's upload limits is
// refused, naming the limit, before either engine compiles it: by
// Validate, and by a run metered or not.
func TestSandbox_uploadLimits(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := testdata(t, "manylocals.wasm")
	const want = "limit on locals"
	if err := sb.Validate(context.Background(), module); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate: %v, want an error naming the %s", err, want)
	}
	for _, fuel := range []uint64{wasm.DefaultFuel, 0} {
		out := sb.Run(context.Background(), module, wasm.Input{}, wasm.Limits{Fuel: fuel})
		if out.Kind != wasm.KindInvalidChecker || !strings.Contains(out.Detail, want) {
			t.Errorf("fuel %d: %s %q, want invalid_checker naming the %s", fuel, out.Kind, out.Detail, want)
		}
	}
}

// TestSandbox_Run_fuelAcrossSlices: a checker that runs through many fuel
// slices uses the same fuel every run, with every limit: exactly what it
// uses passes, one less is exhausted, whatever slice the limit ends in.
func TestSandbox_Run_fuelAcrossSlices(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	module := fixture(t, "primes.wasm")
	in := wasm.Input{Artifact: []byte("300000 25997")}
	full := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: wasm.MaxFuel})
	if full.Kind != wasm.KindPass || full.FuelUsed < 10*wasm.FuelSlice {
		t.Fatalf("kind %s fuel %d: want a pass over ten slices", full.Kind, full.FuelUsed)
	}
	for _, fuel := range []uint64{full.FuelUsed, wasm.DefaultFuel, full.FuelUsed + wasm.FuelSlice} {
		if out := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: fuel}); out.Kind != wasm.KindPass || out.FuelUsed != full.FuelUsed {
			t.Errorf("limit %d: %s with %d fuel, want a pass with %d", fuel, out.Kind, out.FuelUsed, full.FuelUsed)
		}
	}
	// One less; and a limit that is a whole number of slices.
	for _, fuel := range []uint64{full.FuelUsed - 1, full.FuelUsed / wasm.FuelSlice * wasm.FuelSlice} {
		if out := sb.Run(context.Background(), module, in, wasm.Limits{Fuel: fuel}); out.Kind != wasm.KindFuelExhausted || out.FuelUsed != fuel {
			t.Errorf("limit %d: %s with %d fuel, want fuel_exhausted at the limit", fuel, out.Kind, out.FuelUsed)
		}
	}
}
