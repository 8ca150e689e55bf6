package python_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// benchChecker is the checker both benchmarks replay: a small,
// SOLVED-style check of a JSON solution.
const (
	benchChecker  = "import json, re\nfrom dataclasses import dataclass\n\n@dataclass\nclass Row:\n    id: int\n    ok: bool\n\nrows = [Row(**r) for r in data['rows']]\nassert all(r.ok for r in rows), f'{sum(not r.ok for r in rows)} rows fail'\nassert re.fullmatch(r'[a-z]+', data['name'])\n"
	benchArtifact = `{"name": "primes", "rows": [{"id": 1, "ok": true}, {"id": 2, "ok": true}]}`
)

// hostBoot runs harness.py on the host the way python.wasm runs it in the
// sandbox, minus the preloading: the harness as a module, pointed at a
// directory with the checker and its input, then check(). Run as
//
//	python3 -I -S -B -c hostBoot harness.py DIR
const hostBoot = `import os, sys
h = type(sys)("_assay_harness")
h.__file__ = sys.argv[1]
exec(compile(open(sys.argv[1], "rb").read(), sys.argv[1], "exec"), h.__dict__)
h.CHECKER_DIR = h.IN_DIR = sys.argv[2]
os._exit(h.check())
`

// BenchmarkReplay is one Python checker replay from a warm cache (the
// interpreter compiled, the sandbox reused, its snapshot taken), from a
// cold start (the interpreter starting in the run's instance), and the
// same check done by starting a host python3 per replay through the same
// harness. wasm/snapshot/empty-checker is the harness's own cost.
func BenchmarkReplay(b *testing.B) {
	sb := newSandbox(b, wasm.Config{})
	ctx := context.Background()
	lim := wasm.DefaultLimits()
	in := wasm.Input{Artifact: []byte(benchArtifact)}
	if out := python.Run(ctx, sb, []byte(benchChecker), "", in, lim); out.Kind != wasm.KindPass {
		b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
	}

	sandboxed := func(name string, run func() wasm.Outcome) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var out wasm.Outcome
			for b.Loop() {
				out = run()
			}
			if out.Kind != wasm.KindPass {
				b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
			}
			b.ReportMetric(float64(out.FuelUsed), "fuel/op")
			b.ReportMetric(float64(out.MemoryPages)/16, "MiB/op")
		})
	}
	sandboxed("wasm/snapshot/empty-checker", func() wasm.Outcome {
		return python.Run(ctx, sb, []byte("pass\n"), "", in, lim)
	})
	sandboxed("wasm/snapshot/checker", func() wasm.Outcome {
		return python.Run(ctx, sb, []byte(benchChecker), "", in, lim)
	})
	sandboxed("wasm/cold/checker", func() wasm.Outcome {
		return python.RunCold(ctx, sb, []byte(benchChecker), "", in, lim)
	})

	// The host runs: with the sandbox's flags (isolated, no site), and as
	// plain python3 with site, as a market would most likely start it.
	dir := b.TempDir()
	for name, body := range map[string]string{"harness.py": string(harnessSource(b)), "check.py": benchChecker, "artifact": benchArtifact, "type": python.DefaultType} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	args := []string{"-c", hostBoot, filepath.Join(dir, "harness.py"), dir}
	for _, h := range []struct {
		name  string
		flags []string
	}{
		{"host-python3/isolated", []string{"-I", "-S", "-B"}},
		{"host-python3/plain", nil},
	} {
		b.Run(h.name, func(b *testing.B) {
			py := hostPython(b)
			b.ReportAllocs()
			for b.Loop() {
				cmd := exec.Command(py, append(append([]string(nil), h.flags...), args...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// BenchmarkReplayVsHost alternates one replay from the snapshot and one
// host python3 subprocess (isolated, no site) running the same checker
// through the same harness, so that both see the same load on a shared
// machine, and reports each one's mean and their ratio (host/wasm).
func BenchmarkReplayVsHost(b *testing.B) {
	sb := newSandbox(b, wasm.Config{})
	ctx := context.Background()
	lim := wasm.DefaultLimits()
	in := wasm.Input{Artifact: []byte(benchArtifact)}
	if out := python.Run(ctx, sb, []byte(benchChecker), "", in, lim); out.Kind != wasm.KindPass {
		b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
	}
	dir := b.TempDir()
	for name, body := range map[string]string{"harness.py": string(harnessSource(b)), "check.py": benchChecker, "artifact": benchArtifact, "type": python.DefaultType} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	py := hostPython(b)
	var wasmNS, hostNS time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if out := python.Run(ctx, sb, []byte(benchChecker), "", in, lim); out.Kind != wasm.KindPass {
			b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
		}
		t1 := time.Now()
		cmd := exec.Command(py, "-I", "-S", "-B", "-c", hostBoot, filepath.Join(dir, "harness.py"), dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		wasmNS += t1.Sub(t0)
		hostNS += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(wasmNS.Nanoseconds())/float64(n)/1e6, "wasm-ms/op")
	b.ReportMetric(float64(hostNS.Nanoseconds())/float64(n)/1e6, "host-ms/op")
	b.ReportMetric(float64(hostNS)/float64(wasmNS), "host/wasm")
}

// harnessSource is harness.py, as the sandbox mounts it.
func harnessSource(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("harness.py")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// hostPython returns the host's python3: the system's, when there is one,
// rather than whatever PATH finds first (a pyenv shim, say, which is a shell
// script that costs more than Python's own start).
func hostPython(b *testing.B) string {
	b.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("no python3")
	}
	return py
}
