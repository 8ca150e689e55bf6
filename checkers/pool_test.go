package checkers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/wasm"
)

// TestRunner_RunBatch: results come back in the order of the inputs,
// whatever order the workers finish in.
func TestRunner_RunBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, sums := memoRunner(t, wasm.Config{}, checkers.NewMemo(checkers.MemoConfig{}), "primes.wasm")
	ref := checkers.Ref{SHA256: sums["primes.wasm"]}
	// primes.wasm passes "N K" when there are K primes up to N: 25 up to
	// 100, so every other input fails.
	var inputs []wasm.Input
	for i := range 40 {
		want := 25
		if i%2 == 1 {
			want = 24
		}
		n := 100 + i%3 // 100..102 hold no further prime but 101
		if n >= 101 {
			want++
		}
		inputs = append(inputs, wasm.Input{Artifact: fmt.Appendf(nil, "%d %d", n, want)})
	}
	var calls []int
	var mu sync.Mutex
	results, err := r.RunBatch(ctx, ref, inputs, checkers.BatchOptions{Parallel: 4, Progress: func(done, total int) {
		mu.Lock()
		calls = append(calls, done)
		mu.Unlock()
		if total != len(inputs) {
			t.Errorf("progress total %d", total)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		if res.Err != nil {
			t.Fatalf("%d: %v", i, res.Err)
		}
		if res.Outcome.InputSHA256 != checkers.SHA256(inputs[i].Artifact) {
			t.Fatalf("result %d is another input's", i)
		}
		if wantPass := i%2 == 0; res.Outcome.Pass != wantPass {
			t.Errorf("%d (%s): pass %v, want %v: %s", i, inputs[i].Artifact, res.Outcome.Pass, wantPass, res.Outcome.Stderr)
		}
	}
	if len(calls) != len(inputs) || calls[len(calls)-1] != len(inputs) {
		t.Errorf("progress calls %v", calls)
	}
	// The same batch again is all hits, and runs nothing.
	runs := r.Runs()
	again, err := r.RunBatch(ctx, ref, inputs, checkers.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range again {
		// Inputs repeat every 6: which of two equal runs was memoised
		// decides wall_ns only.
		if !res.Memo || jsonNoWall(t, res.Outcome) != jsonNoWall(t, results[i].Outcome) {
			t.Fatalf("%d: memo %v, or a different outcome", i, res.Memo)
		}
	}
	if r.Runs() != runs {
		t.Errorf("%d runs for a batch of hits", r.Runs()-runs)
	}
	if _, err := r.RunBatch(ctx, checkers.Ref{SHA256: strings.Repeat("0", 64)}, inputs, checkers.BatchOptions{}); !errors.Is(err, checkers.ErrNotFound) {
		t.Errorf("unknown checker: %v", err)
	}
	if _, err := r.RunBatch(ctx, checkers.Ref{SHA256: "x"}, inputs, checkers.BatchOptions{}); err == nil {
		t.Errorf("malformed ref: no error")
	}
}

func TestRunner_RunJobs(t *testing.T) {
	t.Parallel()
	r, sums := memoRunner(t, wasm.Config{}, nil, "pass.wasm", "fail.wasm")
	jobs := []checkers.Job{
		{Ref: checkers.Ref{SHA256: sums["pass.wasm"]}},
		{Ref: checkers.Ref{SHA256: sums["fail.wasm"]}},
		{Ref: checkers.Ref{SHA256: strings.Repeat("0", 64)}},
		{Ref: checkers.Ref{SHA256: sums["pass.wasm"]}, Input: wasm.Input{Artifact: []byte("x")}},
	}
	results, err := r.RunJobs(context.Background(), jobs, checkers.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Outcome.Kind != wasm.KindPass || results[1].Outcome.Kind != wasm.KindFail ||
		!errors.Is(results[2].Err, checkers.ErrNotFound) || results[3].Outcome.Kind != wasm.KindPass {
		t.Errorf("results %+v", results)
	}
}

func TestPool_cancel(t *testing.T) {
	t.Parallel()
	p := checkers.NewPool(2)
	if p.Size() != 2 {
		t.Fatalf("size %d", p.Size())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ran, inFlight, most atomic.Int64
	started, err := p.Do(ctx, 100, 0, func(ctx context.Context, i int) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond) // the job's work: long enough for jobs to overlap
		if ran.Add(1) == 5 {
			cancel()
		}
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	n := 0
	for _, s := range started {
		if s {
			n++
		}
	}
	if int64(n) != ran.Load() || n < 5 || n > 6 {
		t.Errorf("%d started, %d ran: want 5 or 6 (the 5th cancels; the other worker may be in a job)", n, ran.Load())
	}
	if most.Load() > 2 {
		t.Errorf("%d jobs at once on a pool of 2", most.Load())
	}
	// A pool shared by two batches still runs at most its size at once.
	inFlight.Store(0)
	most.Store(0)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Do(context.Background(), 10, 0, func(context.Context, int) {
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond) // the job's work: long enough for jobs to overlap
				inFlight.Add(-1)
			}, nil)
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d jobs at once across two batches on a pool of 2", m)
	}
}

// TestRunner_RunBatchCancel: a batch whose context ends returns at once
// for the inputs not started, with the context's error, and every result
// in place.
func TestRunner_RunBatchCancel(t *testing.T) {
	t.Parallel()
	r, sums := memoRunner(t, wasm.Config{}, nil, "loop.wasm")
	ref := checkers.Ref{SHA256: sums["loop.wasm"], Fuel: 200_000_000}
	ctx, cancel := context.WithCancel(context.Background())
	inputs := make([]wasm.Input, 20)
	results, err := r.RunBatch(ctx, ref, inputs, checkers.BatchOptions{Parallel: 1, Progress: func(done, _ int) {
		if done == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(results) != len(inputs) {
		t.Fatalf("%d results", len(results))
	}
	for i, res := range results {
		switch {
		case i < 2 && res.Outcome.Kind != wasm.KindFuelExhausted:
			t.Errorf("%d: %s %v, want fuel_exhausted", i, res.Outcome.Kind, res.Err)
		case i >= 3 && !errors.Is(res.Err, context.Canceled):
			t.Errorf("%d: %v, want context.Canceled", i, res.Err)
		}
	}
}
