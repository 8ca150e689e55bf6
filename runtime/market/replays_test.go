package market_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/wasm"
)

// batchCounter is a real Runner that counts the batches and jobs it runs.
type batchCounter struct {
	*checkers.Runner
	batches, jobs atomic.Int64
}

func (b *batchCounter) RunJobs(ctx context.Context, jobs []checkers.Job, opts checkers.BatchOptions) ([]checkers.Result, error) {
	b.batches.Add(1)
	b.jobs.Add(int64(len(jobs)))
	return b.Runner.RunJobs(ctx, jobs, opts)
}

// TestService_TickBatch: a tick replays its samples as one batch on the
// runner's pool, and records each as a sample replayed alone would be.
func TestService_TickBatch(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(ctx) })
	dir, err := checkers.OpenDir("../../fixtures/checkers")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: e.ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	counter := &batchCounter{Runner: checkers.NewRunner(sb, dir)}
	svc, err := market.NewWithRunner(market.Config{Store: e.svc.Store(), Signer: keys, Now: e.ck.Now}, counter)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	ids := []string{e.publishSquares(t, "seller", "table of squares"), e.publishSquares(t, "seller2", "squares of three integers")}
	for i := range 3 {
		got := must(e.svc.Tick(ctx, market.TickRequest{Samples: 5}))(t)
		if len(got.Sampled) != 2 || len(got.Pulled) != 0 {
			t.Fatalf("tick %d: %+v", i, got)
		}
	}
	if b, j := counter.batches.Load(), counter.jobs.Load(); b != 3 || j != 6 {
		t.Errorf("%d batches of %d jobs in all, want 3 batches of 2", b, j)
	}
	for _, id := range ids {
		// Samples are the market's own replays: they count as passes, and
		// level 3 waits for buyers.
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 || v.ReplaysPassed != 3 {
			t.Errorf("%s: level %d after %d replays", id, v.Level, v.ReplaysPassed)
		}
	}
	e.zero(t)
}
