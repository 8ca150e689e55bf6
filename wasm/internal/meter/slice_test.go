package meter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// TestInstrument_Slices: a loop of 1 fuel an iteration, run out of fuel
// in slices, calls fuel_slice once per slice handed out and once more to
// be ended, whatever the slice, and uses exactly one fuel more than its
// limit, as it would with all of it at once.
func TestInstrument_Slices(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "loop"))
	tests := []struct {
		limit, slice int64
		calls        int
	}{
		{10_000, 997, 11},      // ten whole slices and 30
		{9_970, 997, 10},       // exactly ten slices
		{10_000, 10_000, 1},    // one slice: only the call that ends it
		{10_000, 1 << 40, 1},   // a slice larger than the fuel
		{5, 1, 5},              // a slice an iteration
		{1_000_000, 4096, 245}, // 244 whole slices and 576
	}
	for _, tt := range tests {
		for _, e := range engines {
			h := &host{slice: tt.slice}
			m, err := newInstanceWith(t, e.cfg(), metered, true, tt.limit, h)
			if err != nil {
				t.Fatal(err)
			}
			got := m.call(t, "forever")
			if !errors.Is(got.err, errOutOfFuel) {
				t.Fatalf("%s %d/%d: %v, want out of fuel", e.name, tt.limit, tt.slice, got.err)
			}
			if h.calls != tt.calls || got.used != tt.limit+1 {
				t.Errorf("%s %d/%d: %d calls, used %d; want %d calls, used %d",
					e.name, tt.limit, tt.slice, h.calls, got.used, tt.calls, tt.limit+1)
			}
		}
	}
}

// TestInstrument_SliceSize: the fuel a run uses does not depend on the
// slice it is handed out in, for runs that end and runs that run out.
func TestInstrument_SliceSize(t *testing.T) {
	t.Parallel()
	for _, c := range calls {
		metered := mustInstrument(t, readWasm(t, c.file))
		var used []int64
		var errs []bool
		for _, slice := range []int64{1, 2, 3, 64, 997, 1 << 40} {
			for _, limit := range []int64{bigFuel, 50} {
				h := &host{slice: slice}
				m, err := newInstanceWith(t, engines[0].cfg(), metered, true, limit, h)
				got := run{err: err}
				if err == nil {
					got = m.call(t, c.fn, c.args...)
				} else {
					got.used = m.used() // the start function ran out
				}
				used = append(used, got.used)
				errs = append(errs, got.err != nil)
			}
		}
		for i := 2; i < len(used); i++ {
			if used[i] != used[i%2] || errs[i] != errs[i%2] {
				t.Fatalf("%s/%s%v: used %v, errors %v: differ between slice sizes", c.file, c.fn, c.args, used, errs)
			}
		}
	}
}

// TestInstrument_SliceStop: a host that ends the run from fuel_slice (a
// deadline passed) ends the guest call with its error at the first slice
// boundary, on both engines.
func TestInstrument_SliceStop(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "loop"))
	for _, e := range engines {
		h := &host{slice: 1000, stop: true}
		m, err := newInstanceWith(t, e.cfg(), metered, true, bigFuel, h)
		if err != nil {
			t.Fatal(err)
		}
		got := m.call(t, "forever")
		if !errors.Is(got.err, errStopped) || h.calls != 1 || got.used != 1001 {
			t.Fatalf("%s: %v after %d calls, used %d; want stopped after 1, used 1001", e.name, got.err, h.calls, got.used)
		}
	}
}

// renumberNames is a name section for testdata/renumber.wasm: its
// functions' names in index order, and the names of apply's parameters.
func renumberNames() []byte {
	var funcs []byte
	names := []string{"charge", "double", "square", "inc", "triple", "fact", "boom", "deeper", "init", "apply", "passive", "refs", "direct"}
	funcs = appendU32(funcs, uint32(len(names)))
	for i, n := range names {
		funcs = appendName(appendU32(funcs, uint32(i)), n)
	}
	locals := []byte{0x01, 0x09, 0x02} // one function, apply, two names
	locals = appendName(append(locals, 0x00), "f")
	locals = appendName(append(locals, 0x01), "x")
	body := appendName(nil, "name")
	body = append(appendU32(append(body, 0x01), uint32(len(funcs))), funcs...)
	body = append(appendU32(append(body, 0x02), uint32(len(locals))), locals...)
	return appendSection(nil, secCustom, body)
}

// TestInstrument_Names: the name section follows the renumbering, so that
// function and parameter names and a trap's stack trace read the same
// metered and unmetered.
func TestInstrument_Names(t *testing.T) {
	t.Parallel()
	orig := append(readWasm(t, "renumber"), renumberNames()...)
	metered := mustInstrument(t, orig)
	for _, e := range engines {
		o, err := newInstance(t, e.cfg(), orig, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := newInstance(t, e.cfg(), metered, true, bigFuel)
		if err != nil {
			t.Fatal(err)
		}
		for name, def := range o.mod.ExportedFunctionDefinitions() {
			got := m.mod.ExportedFunction(name).Definition()
			if got.Name() != def.Name() || got.DebugName() != def.DebugName() || !slices.Equal(got.ParamNames(), def.ParamNames()) {
				t.Errorf("%s: export %s is %q (%s, %q), want %q (%s, %q)", e.name, name,
					got.Name(), got.DebugName(), got.ParamNames(), def.Name(), def.DebugName(), def.ParamNames())
			}
			if name == "apply" && !slices.Equal(def.ParamNames(), []string{"f", "x"}) {
				t.Errorf("apply's parameters are %q: the name section was not read", def.ParamNames())
			}
		}
		want := o.call(t, "boom", 1).err
		got := m.call(t, "boom", 1).err
		if want == nil || got == nil || got.Error() != want.Error() || !strings.Contains(want.Error(), ".deeper(") {
			t.Errorf("%s: trap %q, want %q naming $deeper", e.name, got, want)
		}
	}
}

// TestPrepareReactor_Instrument: a reactor prepared and then instrumented
// initialises and checks as the prepared form does unmetered: the same
// results and the same memory.
func TestPrepareReactor_Instrument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, b := range reactorModules(t) {
		if !strings.HasPrefix(name, "reactor_") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rc, err := PrepareReactor(b)
			if err != nil {
				t.Fatal(err)
			}
			metered := mustInstrument(t, rc.Module)
			type result struct {
				res []uint64
				err bool
				mem []byte
			}
			runOne := func(wasm []byte, h *host) (result, error) {
				// 256 MiB, the memory a start-up may have in the sandbox
				// (wasm.InitMemoryMiB): a module that asks for more is
				// refused here as there.
				cfg := wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(4096)
				r := wazero.NewRuntimeWithConfig(ctx, cfg)
				defer r.Close(ctx)
				wasi_snapshot_preview1.MustInstantiate(ctx, r)
				h.instantiate(t, ctx, r)
				c, err := r.CompileModule(ctx, wasm)
				if err != nil {
					return result{}, err
				}
				mod, err := r.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithStartFunctions())
				if err != nil {
					return result{}, err
				}
				// Enough fuel for every reactor fixture but the ones that
				// loop forever, which are not run unmetered.
				if g := fuelGlobal(mod); g != nil {
					h.begin(g, 10_000_000)
				}
				var out result
				for _, fn := range []string{DataExport, StartFuncExport, InitExport, CheckExport} {
					f := mod.ExportedFunction(fn)
					if f == nil {
						continue
					}
					res, err := f.Call(ctx)
					if errors.Is(err, errOutOfFuel) {
						return out, err
					}
					out.res, out.err = append(out.res, res...), err != nil
					if err != nil {
						break
					}
				}
				if mem := mod.Memory(); mem != nil {
					out.mem, _ = mem.Read(0, mem.Size())
				}
				return out, nil
			}
			got, err := runOne(metered, &host{slice: testSlice})
			if errors.Is(err, errOutOfFuel) {
				t.Skip("runs out of fuel: not run unmetered")
			}
			if err != nil {
				t.Skipf("does not instantiate here: %v", err)
			}
			want, err := runOne(rc.Module, &host{})
			if err != nil {
				t.Fatal(err)
			}
			if !equalResults(got.res, want.res) || got.err != want.err || string(got.mem) != string(want.mem) {
				t.Fatalf("metered %v (error %v), unmetered %v (error %v), memory equal %v",
					got.res, got.err, want.res, want.err, string(got.mem) == string(want.mem))
			}
		})
	}
}
