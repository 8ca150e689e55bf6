package checkers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/wasm"
)

func copyFixture(tb testing.TB, dir, name, as string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, as), b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestDir_Checker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pass := copyFixture(t, dir, "pass.wasm", "any-name.wasm")
	copyFixture(t, dir, "fail.wasm", "fail.wasm")
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644)
	d, err := checkers.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		got, err := d.Checker(checkers.SHA256(pass))
		if err != nil || string(got) != string(pass) {
			t.Fatalf("Checker: %v", err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := d.Checker(strings.Repeat("0", 64)); !errors.Is(err, checkers.ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
	t.Run("ErrChanged", func(t *testing.T) {
		// A file rewritten after indexing is not run under its old hash.
		os.WriteFile(filepath.Join(dir, "any-name.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644)
		if _, err := d.Checker(checkers.SHA256(pass)); !errors.Is(err, checkers.ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound for a changed file", err)
		}
	})
	if _, err := checkers.OpenDir(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("OpenDir of a missing directory succeeded")
	}
}

func TestRef_Validate(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		ref  checkers.Ref
		ok   bool
	}{
		{"OK", checkers.Ref{SHA256: good}, true},
		{"OKKind", checkers.Ref{SHA256: good, Kind: checkers.KindWasm, Fuel: 10, MemoryMiB: 16}, true},
		{"ErrShort", checkers.Ref{SHA256: "abc"}, false},
		{"ErrUpper", checkers.Ref{SHA256: strings.ToUpper(good)}, false},
		{"ErrNotHex", checkers.Ref{SHA256: strings.Repeat("zz", 32)}, false},
		{"OKPython", checkers.Ref{SHA256: good, Kind: checkers.KindPython}, true},
		{"OKPythonType", checkers.Ref{SHA256: good, Kind: checkers.KindPython, ArtifactType: "code"}, true},
		{"ErrKind", checkers.Ref{SHA256: good, Kind: "lua"}, false},
		{"ErrPythonType", checkers.Ref{SHA256: good, Kind: checkers.KindPython, ArtifactType: "blob"}, false},
		{"ErrWasmType", checkers.Ref{SHA256: good, ArtifactType: "code"}, false},
		{"ErrMemory", checkers.Ref{SHA256: good, MemoryMiB: wasm.MaxMemoryMiB + 1}, false},
		{"ErrFuel", checkers.Ref{SHA256: good, Fuel: wasm.MaxFuel + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.ref.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	lim := checkers.Ref{SHA256: good, Fuel: 123, MemoryMiB: 8}.Limits()
	if lim.Fuel != 123 || lim.MemoryMiB != 8 {
		t.Errorf("Limits() = %+v", lim)
	}
	if def := (checkers.Ref{SHA256: good}).Limits(); def.Fuel != wasm.DefaultFuel {
		t.Errorf("default fuel %d, want %d", def.Fuel, wasm.DefaultFuel)
	}
}

func TestRunner_Run(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	primes := copyFixture(t, dir, "primes.wasm", "primes.wasm")
	d, err := checkers.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	r := checkers.NewRunner(sb, d)
	ref := checkers.Ref{SHA256: checkers.SHA256(primes)}
	out, err := r.Run(context.Background(), ref, wasm.Input{Artifact: []byte("100 25")})
	if err != nil || out.Kind != wasm.KindPass {
		t.Fatalf("Run: %v %s %s", err, out.Kind, out.Detail)
	}
	ref.Fuel = 500
	if out, _ := r.Run(context.Background(), ref, wasm.Input{Artifact: []byte("100 25")}); out.Kind != wasm.KindFuelExhausted {
		t.Errorf("with 500 fuel: %s, want fuel_exhausted", out.Kind)
	}
	if _, err := r.Run(context.Background(), checkers.Ref{SHA256: strings.Repeat("0", 64)}, wasm.Input{}); !errors.Is(err, checkers.ErrNotFound) {
		t.Errorf("unknown checker: %v, want ErrNotFound", err)
	}
	if _, err := r.Run(context.Background(), checkers.Ref{SHA256: "nope"}, wasm.Input{}); err == nil {
		t.Errorf("malformed ref ran")
	}
}

func TestRunner_RunPython(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	check := []byte("assert add(2, 2) == 4, 'add is wrong'\n")
	if err := os.WriteFile(filepath.Join(dir, "check.py"), check, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := checkers.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	if err := checkers.Validate(context.Background(), sb, checkers.KindPython, check); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := checkers.Validate(context.Background(), sb, checkers.KindPython, []byte("\xff")); err == nil {
		t.Errorf("Validate of non-UTF-8 python succeeded")
	}
	if err := checkers.Validate(context.Background(), sb, checkers.KindPython, []byte("def f(:\n")); err == nil || !strings.Contains(err.Error(), "SyntaxError at line 1") {
		t.Errorf("Validate of a syntax error: %v", err)
	}
	r := checkers.NewRunner(sb, d)
	ref := checkers.Ref{SHA256: checkers.SHA256(check), Kind: checkers.KindPython, ArtifactType: "code"}
	for _, tc := range []struct {
		name, artifact string
		kind           wasm.Kind
	}{
		{"OK", "def add(a, b):\n    return a + b\n", wasm.KindPass},
		{"ErrWrong", "def add(a, b):\n    return a - b\n", wasm.KindFail},
		{"ErrExit", "import sys\nsys.exit(0)\n", wasm.KindFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Run(context.Background(), ref, wasm.Input{Artifact: []byte(tc.artifact)})
			if err != nil || out.Kind != tc.kind {
				t.Fatalf("Run: %v %s %s", err, out.Kind, out.Detail)
			}
			if out.CheckerSHA256 != ref.SHA256 {
				t.Errorf("checker_sha256 %s, want the source's %s", out.CheckerSHA256, ref.SHA256)
			}
		})
	}
}

// TestRunner_jobLimits: a Job's own Limits replace its Ref's wholly (fuel
// 0 runs unmetered), and such a job is never memoised; Modules is a
// Source of the checkers it was given and of nothing else.
func TestRunner_jobLimits(t *testing.T) {
	t.Parallel()
	primes, err := os.ReadFile("../fixtures/checkers/primes.wasm")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	r := checkers.NewRunner(sb, checkers.Modules(primes), checkers.WithMemo(checkers.NewMemo(checkers.MemoConfig{})))
	// The Ref asks for 500 fuel, which primes exhausts; the Job's limits win.
	job := checkers.Job{Ref: checkers.Ref{SHA256: checkers.SHA256(primes), Fuel: 500}, Input: wasm.Input{Artifact: []byte("100 25")},
		Limits: &wasm.Limits{Fuel: 0, MemoryMiB: wasm.DefaultMemoryMiB, Timeout: wasm.DefaultTimeout}}
	for i := range 2 {
		res := r.Do(context.Background(), job)
		if res.Err != nil || res.Outcome.Kind != wasm.KindPass || res.Outcome.FuelLimit != 0 || res.Memo {
			t.Fatalf("run %d: %v %s (fuel limit %d, memo %v), want an unmetered pass, run", i, res.Err, res.Outcome.Kind, res.Outcome.FuelLimit, res.Memo)
		}
	}
	if r.Runs() != 2 {
		t.Errorf("%d runs, want 2: a job with its own limits is not memoised", r.Runs())
	}
	if res := r.Do(context.Background(), checkers.Job{Ref: checkers.Ref{SHA256: strings.Repeat("0", 64)}}); !errors.Is(res.Err, checkers.ErrNotFound) {
		t.Errorf("a checker Modules was not given: %v, want ErrNotFound", res.Err)
	}
}
