package meter

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// benchSlice is the slice the benchmarks hand out: about what the sandbox
// hands out (a few milliseconds of work).
const benchSlice = 10_000_000

// BenchmarkMeteredLoop compares loop.wasm's sum, unmetered and metered, per
// engine. The design target is a ratio of at most 1.3 on the compiler. A
// call uses 1.4 million fuel, so fuel_slice runs once in about 7 calls.
func BenchmarkMeteredLoop(b *testing.B) {
	orig := readWasm(b, "loop")
	metered := mustInstrument(b, orig)
	for _, e := range engines {
		for _, v := range []struct {
			name string
			wasm []byte
		}{{"unmetered", orig}, {"metered", metered}} {
			b.Run(e.name+"/"+v.name, func(b *testing.B) {
				ctx := context.Background()
				r := wazero.NewRuntimeWithConfig(ctx, e.cfg())
				defer r.Close(ctx)
				h := &host{slice: benchSlice}
				h.instantiate(b, ctx, r)
				mod, err := r.InstantiateWithConfig(ctx, v.wasm, wazero.NewModuleConfig().WithStartFunctions())
				if err != nil {
					b.Fatal(err)
				}
				g := fuelGlobal(mod)
				sum := mod.ExportedFunction("sum")
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if g != nil {
						h.begin(g, bigFuel)
					}
					if _, err := sum.Call(ctx, 100_000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInstrument measures the pass itself on the Go hello module.
func BenchmarkInstrument(b *testing.B) {
	in := readWasm(b, "gohello")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Instrument(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckLimits measures CheckLimits on the largest real module,
// the Python runtime.
func BenchmarkCheckLimits(b *testing.B) {
	in := realModules(b)["python.wasm"]
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := CheckLimits(in); err != nil {
			b.Fatal(err)
		}
	}
}
