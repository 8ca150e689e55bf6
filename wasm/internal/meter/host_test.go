package meter

import (
	"context"
	"io"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// wasiInstance instantiates an instrumented module with WASI, stdout
// discarded, and the test host, with fuel set.
func wasiInstance(tb testing.TB, cfg wazero.RuntimeConfig, wasm []byte, h *host, fuel int64) *instance {
	tb.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	h.instantiate(tb, ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStdout(io.Discard).WithStartFunctions())
	if err != nil {
		tb.Fatal(err)
	}
	in := &instance{r: r, mod: mod, h: h}
	if g := in.global(); g != nil {
		h.begin(g, fuel)
	}
	return in
}

// TestInstrument_HostCalls: a call to an imported function pays
// HostCallCost, and poll_oneoff, fd_write and fd_pwrite pay for their
// subscriptions and iovecs, the same on both engines, called directly or
// through a table (the per-iteration static costs are counted in
// testdata/hostcalls.wat's terms).
func TestInstrument_HostCalls(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "hostcalls"))
	tests := []struct {
		fn   string
		args []uint64
		want int64
	}{
		{"random", []uint64{10}, 10 * (10 + HostCallCost)},
		{"poll", []uint64{10, 1}, 10 * (12 + HostCallCost + PollSubscriptionCost)},
		{"poll", []uint64{3, 40}, 3 * (12 + HostCallCost + 40*PollSubscriptionCost)},
		{"write", []uint64{10, 0}, 10 * (12 + HostCallCost)},
		{"write", []uint64{2, 500}, 2 * (12 + HostCallCost + 500*IovecCost)},
		{"pwrite", []uint64{300}, 6 + HostCallCost + 300*IovecCost},
		{"arith", []uint64{10}, 10 * 12},
		// i32.const, ref.func, table.set, 4 arguments, local.get,
		// call_indirect = 9; the wrapper's 4 local.get and call = 5.
		{"pollindirect", []uint64{3, 0}, 9 + 5 + HostCallCost + 3*PollSubscriptionCost},
		{"pollindirect", []uint64{3, 1}, 9 + 5 + HostCallCost + 3*PollSubscriptionCost},
	}
	for _, tt := range tests {
		for _, e := range engines {
			m := wasiInstance(t, e.cfg(), metered, &host{slice: testSlice}, bigFuel)
			if got := m.call(t, tt.fn, tt.args...); got.err != nil || got.used != tt.want {
				t.Errorf("%s: %s%v used %d (%v), want %d", e.name, tt.fn, tt.args, got.used, got.err, tt.want)
			}
		}
	}
	// A poll_oneoff asking for more subscriptions than the fuel pays for
	// ends the run before the host does any of the work.
	m := wasiInstance(t, engines[0].cfg(), metered, &host{slice: testSlice}, 10_000)
	if got := m.call(t, "poll", 1, 1_000_000); got.err == nil || got.used < 1_000_000*PollSubscriptionCost {
		t.Errorf("poll of a million subscriptions: %v, used %d", got.err, got.used)
	}
}

// BenchmarkHostCalls calibrates the host call costs: each loop runs
// metered, on the compiler, and reports the time it takes per unit of
// fuel it uses (ns/fuel); the host call loops should spend fuel about as
// fast as the arithmetic loop does.
func BenchmarkHostCalls(b *testing.B) {
	metered := mustInstrument(b, readWasm(b, "hostcalls"))
	const n = 1000
	for _, bc := range []struct {
		name string
		fn   string
		args []uint64
	}{
		{"arith", "arith", []uint64{n}},
		{"random_get/1byte", "random", []uint64{n}},
		{"poll_oneoff/1sub", "poll", []uint64{n, 1}},
		{"poll_oneoff/16subs", "poll", []uint64{n, 16}},
		{"fd_write/1iovec", "write", []uint64{n, 1}},
		{"fd_write/100iovecs", "write", []uint64{n, 100}},
		{"fd_write/1000iovecs", "write", []uint64{n, 1000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := &host{slice: benchSlice}
			m := wasiInstance(b, wazero.NewRuntimeConfigCompiler(), metered, h, bigFuel)
			f := m.mod.ExportedFunction(bc.fn)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.Call(ctx, bc.args...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(m.used()), "ns/fuel")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
