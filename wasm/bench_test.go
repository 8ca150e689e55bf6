package wasm

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
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
			if c := s.metered.compile(ctx, [32]byte{1}, module); c.err != nil {
				b.Fatal(c.err)
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
			if c := s.metered.compile(ctx, [32]byte{1}, module); c.err != nil {
				b.Fatal(c.err)
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
