package python_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// benchChecker is the checker both benchmarks replay: a small,
// SOLVED-style check of a JSON solution.
const (
	benchChecker  = "import json, re\nfrom dataclasses import dataclass\n\n@dataclass\nclass Row:\n    id: int\n    ok: bool\n\nrows = [Row(**r) for r in data['rows']]\nassert all(r.ok for r in rows), f'{sum(not r.ok for r in rows)} rows fail'\nassert re.fullmatch(r'[a-z]+', data['name'])\n"
	benchArtifact = `{"name": "primes", "rows": [{"id": 1, "ok": true}, {"id": 2, "ok": true}]}`
)

// hostHarness is what a Python-native market would run per replay: the
// checker in a fresh host python3 with the artifact as artifact and data.
const hostHarness = `import json, sys
raw = open(sys.argv[2], 'rb').read()
ns = {'__name__': '__main__', 'artifact': raw.decode(), 'data': None}
try:
    ns['data'] = json.loads(raw)
except ValueError:
    pass
exec(compile(open(sys.argv[1], 'rb').read(), 'check.py', 'exec'), ns)
`

// BenchmarkReplay is one Python checker replay from a warm cache (the
// interpreter compiled, the sandbox reused), and the same check done by
// starting a host python3 per replay. The startup sub-benchmarks show where
// a replay's time goes: the interpreter alone (-c pass, no site), then the
// harness with an empty checker.
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
	sandboxed("wasm/interpreter-only", func() wasm.Outcome {
		pin, err := python.Input([]byte("pass"), "", in)
		if err != nil {
			b.Fatal(err)
		}
		pin.Args = []string{"/usr/local/bin/python3.11", "-I", "-S", "-B", "-c", "pass"}
		return sb.Run(ctx, python.Module(), pin, lim)
	})
	sandboxed("wasm/empty-checker", func() wasm.Outcome {
		return python.Run(ctx, sb, []byte("pass\n"), "", in, lim)
	})
	sandboxed("wasm/checker", func() wasm.Outcome {
		return python.Run(ctx, sb, []byte(benchChecker), "", in, lim)
	})

	// The host runs: with the sandbox's flags (isolated, no site), and as
	// plain python3 with site, as a market would most likely start it.
	dir := b.TempDir()
	for name, body := range map[string]string{"harness.py": hostHarness, "check.py": benchChecker, "artifact": benchArtifact} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	files := []string{filepath.Join(dir, "harness.py"), filepath.Join(dir, "check.py"), filepath.Join(dir, "artifact")}
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
				cmd := exec.Command(py, append(append([]string(nil), h.flags...), files...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
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
