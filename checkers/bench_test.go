package checkers_test

import (
	"context"
	"os"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/wasm"
)

// BenchmarkMemoHit: a memoised replay, from the key's hashes to the
// outcome, beside the same replay run in the sandbox.
func BenchmarkMemoHit(b *testing.B) {
	ctx := context.Background()
	mod, err := os.ReadFile("../fixtures/checkers/pass.wasm")
	if err != nil {
		b.Fatal(err)
	}
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	// The checker from memory, so that "run" times the run, not a read of
	// the file.
	ref := checkers.Ref{SHA256: checkers.SHA256(mod)}
	r := checkers.NewRunner(sb, memSource{ref.SHA256: mod}, checkers.WithMemo(checkers.NewMemo(checkers.MemoConfig{})))
	in := wasm.Input{Artifact: []byte(`{"min_rows":1,"rows":[{"id":"a"}]}`)}
	if res := r.Do(ctx, checkers.Job{Ref: ref, Input: in}); res.Err != nil || res.Outcome.Kind != wasm.KindPass {
		b.Fatalf("warm-up: %v %s", res.Err, res.Outcome.Kind)
	}
	b.Run("hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := r.Do(ctx, checkers.Job{Ref: ref, Input: in}); !res.Memo {
				b.Fatal("miss")
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := r.Do(ctx, checkers.Job{Ref: ref, Input: in, NoMemo: true}); res.Outcome.Kind != wasm.KindPass {
				b.Fatal(res.Outcome.Kind)
			}
		}
	})
}

// BenchmarkRunBatch: replays/s of a trivial checker on the pool, without
// the memo, at 1 and at GOMAXPROCS workers.
func BenchmarkRunBatch(b *testing.B) {
	ctx := context.Background()
	r, sums := memoRunner(b, wasm.Config{}, nil, "pass.wasm")
	ref := checkers.Ref{SHA256: sums["pass.wasm"]}
	inputs := make([]wasm.Input, 256)
	for i := range inputs {
		inputs[i] = wasm.Input{Artifact: []byte{byte(i)}}
	}
	for _, p := range []int{1, r.Pool().Size()} {
		b.Run("parallel="+string(rune('0'+p)), func(b *testing.B) {
			for b.Loop() {
				if _, err := r.RunBatch(ctx, ref, inputs, checkers.BatchOptions{Parallel: p}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(inputs))/b.Elapsed().Seconds(), "replays/s")
		})
	}
}

// memSource is a Source in memory.
type memSource map[string][]byte

func (m memSource) Checker(sum string) ([]byte, error) {
	if b, ok := m[sum]; ok {
		return b, nil
	}
	return nil, checkers.ErrNotFound
}
