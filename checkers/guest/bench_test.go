package guest_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/assayhq/assay/wasm"
)

// benchSizes are the artifacts the benchmarks replay: the fixtures' rows
// check on n rows (min_rows n), a pass. The check's own cost grows with the
// rows (BenchmarkGoCheck); a replay's overhead does not.
var benchSizes = []int{10, 100}

func benchArtifactOf(n int) []byte { return []byte(rows(n, fmt.Sprintf(`"min_rows": %d`, n))) }

// BenchmarkGoReplay is one replay of the same Go check on the same artifact
// from a warm cache: the module metered and compiled, the snapshot taken,
// all by one run before the timer. reactor-snapshot is the goreactor
// fixture restored from its snapshot, reactor-cold the same module
// instantiated fresh with _initialize run again, command the gocommand
// fixture, which starts the Go runtime on every run. These three pass the
// module's SHA-256 (RunSum, RunColdSum), as a caller that keeps checkers by
// hash does; reactor-snapshot-Run is the first through Run, which hashes the
// 3.4 MB module on every call. Each runs under the default fuel (and a long
// backstop) and reports the fuel and memory one replay used.
func BenchmarkGoReplay(b *testing.B) {
	reactor, command := readFixture(b, reactorFixture), readFixture(b, commandFixture)
	reactorSum, commandSum := sha256.Sum256(reactor), sha256.Sum256(command)
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close(context.Background()) })
	lim := wasm.DefaultLimits()
	lim.Timeout = 5 * time.Minute // the first run compiles; a busy machine must not make it a timeout

	type runFunc func(context.Context, wasm.Input) wasm.Outcome
	for _, bc := range []struct {
		name string
		run  runFunc
	}{
		{"reactor-snapshot", func(ctx context.Context, in wasm.Input) wasm.Outcome {
			return sb.RunSum(ctx, reactorSum, reactor, in, lim)
		}},
		{"reactor-cold", func(ctx context.Context, in wasm.Input) wasm.Outcome {
			return sb.RunColdSum(ctx, reactorSum, reactor, in, lim)
		}},
		{"command", func(ctx context.Context, in wasm.Input) wasm.Outcome {
			return sb.RunSum(ctx, commandSum, command, in, lim)
		}},
		{"reactor-snapshot-Run", func(ctx context.Context, in wasm.Input) wasm.Outcome {
			return sb.Run(ctx, reactor, in, lim)
		}},
	} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/rows=%d", bc.name, n), func(b *testing.B) {
				ctx := context.Background()
				in := wasm.Input{Artifact: benchArtifactOf(n)}
				if out := bc.run(ctx, in); out.Kind != wasm.KindPass {
					b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
				}
				b.ReportAllocs()
				var out wasm.Outcome
				for b.Loop() {
					out = bc.run(ctx, in)
				}
				if out.Kind != wasm.KindPass {
					b.Fatalf("%s: %s %s", out.Kind, out.Detail, out.Stderr)
				}
				b.ReportMetric(float64(out.FuelUsed), "fuel/op")
				b.ReportMetric(float64(out.MemoryPages)/16, "MiB/op")
			})
		}
	}
}

// BenchmarkGoCheck is the floor under a replay: assay_check alone, called
// again and again in one warm instance of goreactor on plain wazero (no
// fuel, no fresh instance), on the artifacts of BenchmarkGoReplay.
func BenchmarkGoCheck(b *testing.B) {
	rt := newRuntime(b)
	in := startReactor(b, rt, compile(b, rt, readFixture(b, reactorFixture)))
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			artifact := string(benchArtifactOf(n))
			for b.Loop() {
				if status, _, stderr := in.call(b, artifact, nil, false); status != 0 {
					b.Fatalf("status %d: %s", status, stderr)
				}
			}
		})
	}
}
