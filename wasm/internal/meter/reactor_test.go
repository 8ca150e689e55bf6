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
)

// reactorModules are the modules PrepareReactor is tested on: the
// reactor fixtures, and this package's test modules, reactor or not (the
// pass does not care), among them Go's hello world with its tens of
// thousands of data segments.
func reactorModules(tb testing.TB) map[string][]byte {
	tb.Helper()
	mods := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "checkers", "reactor_*.wasm"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		mods[filepath.Base(p)] = b
	}
	if len(mods) < 10 {
		tb.Fatalf("only %d modules found", len(mods))
	}
	return mods
}

// TestPrepareReactor_memory: an instance of the prepared form, once the
// host has called DataExport and StartFuncExport, has the memory an
// instance of the original has after instantiation; every mutable global
// is exported; and instantiating the prepared form writes no memory at
// all.
func TestPrepareReactor_memory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	h := &host{}
	h.instantiate(t, ctx, r)
	for name, b := range reactorModules(t) {
		t.Run(name, func(t *testing.T) {
			compiled := mustCompile(t, r, b)
			if len(compiled.ExportedMemories()) == 0 {
				t.Skip("no exported memory to compare")
			}
			orig, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				t.Skipf("the original does not instantiate here: %v", err)
			}
			defer orig.Close(ctx)
			rc, err := PrepareReactor(b)
			if err != nil {
				t.Fatal(err)
			}
			prep, err := r.InstantiateModule(ctx, mustCompile(t, r, rc.Module), wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close(ctx)
			before, _ := prep.Memory().Read(0, prep.Memory().Size())
			if !bytes.Equal(before, make([]byte, len(before))) {
				t.Errorf("instantiating the prepared form wrote memory")
			}
			for _, fn := range []string{DataExport, StartFuncExport} {
				if f := prep.ExportedFunction(fn); f != nil {
					if _, err := f.Call(ctx); err != nil {
						t.Fatalf("%s: %v", fn, err)
					}
				}
			}
			want, _ := orig.Memory().Read(0, orig.Memory().Size())
			got, _ := prep.Memory().Read(0, prep.Memory().Size())
			if !bytes.Equal(got, want) {
				t.Errorf("memory differs after initialisation (%d and %d bytes)", len(got), len(want))
			}
			for _, g := range rc.Globals {
				if _, ok := prep.ExportedGlobal(g).(api.MutableGlobal); !ok {
					t.Errorf("%s is not an exported mutable global", g)
				}
			}
		})
	}
}

func mustCompile(tb testing.TB, r wazero.Runtime, b []byte) wazero.CompiledModule {
	tb.Helper()
	c, err := r.CompileModule(context.Background(), b)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestPrepareReactor_segments: Go's segments are merged into one, since
// no code names a segment; a module whose code drops a segment keeps its
// segments and cannot be snapshotted.
func TestPrepareReactor_segments(t *testing.T) {
	t.Parallel()
	mods := reactorModules(t)
	count := func(b []byte) uint32 {
		m, err := parse(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range m.sections {
			if s.id == secData {
				n, _ := countAndRest(s)
				return n
			}
		}
		return 0
	}
	gohello := mods["gohello.wasm"]
	rc, err := PrepareReactor(gohello)
	if err != nil {
		t.Fatal(err)
	}
	if before, after := count(gohello), count(rc.Module); before < 100 || after != 1 || rc.NoSnapshot != "" {
		t.Errorf("gohello: %d segments, then %d (want 1); NoSnapshot %q", before, after, rc.NoSnapshot)
	}
	rc, err = PrepareReactor(mods["reactor_nosnap.wasm"])
	if err != nil {
		t.Fatal(err)
	}
	if count(rc.Module) != 1 || rc.NoSnapshot != "it uses data.drop" {
		t.Errorf("reactor_nosnap: %d segments, NoSnapshot %q", count(rc.Module), rc.NoSnapshot)
	}
}

// TestPrepareReactor_reserved: an export named like the pass's own is
// refused.
func TestPrepareReactor_reserved(t *testing.T) {
	t.Parallel()
	b := readWasm(t, "loop")
	rc, err := PrepareReactor(b)
	if err != nil {
		t.Fatal(err)
	}
	// A second pass over the output meets its own exports.
	if len(rc.Globals) > 0 || strings.Contains(string(rc.Module), StartFuncExport) {
		if _, err := PrepareReactor(rc.Module); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("a second pass: %v, want a reserved-name error", err)
		}
	}
	for _, name := range []string{"reactor_state.wasm"} {
		rc, err := PrepareReactor(reactorModules(t)[name])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := PrepareReactor(rc.Module); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%s, a second pass: %v, want a reserved-name error", name, err)
		}
	}
}

// FuzzPrepareReactor checks that PrepareReactor never panics and keeps
// valid input valid, as FuzzInstrument does for Instrument.
func FuzzPrepareReactor(f *testing.F) {
	for name, b := range reactorModules(f) {
		if name != "gohello.wasm" {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, b []byte) {
		IsReactor(b)
		rc, err := PrepareReactor(b)
		if err != nil {
			var de *DecodeError
			var le *LimitError
			if !errors.As(err, &de) && !errors.As(err, &le) {
				t.Fatalf("error %T is not a *DecodeError or a *LimitError: %v", err, err)
			}
			return
		}
		if _, err := r.CompileModule(ctx, b); err != nil {
			return
		}
		c, err := r.CompileModule(ctx, rc.Module)
		if err != nil {
			t.Fatalf("wazero accepts the input but not the output: %v", err)
		}
		c.Close(ctx)
	})
}
