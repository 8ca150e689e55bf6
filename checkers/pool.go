package checkers

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool bounds how many replays run at once: at most its size, however many
// batches share it. Replays are CPU-bound, so the default size is
// GOMAXPROCS. It is safe for concurrent use.
type Pool struct {
	slots chan struct{}
}

// NewPool returns a Pool of size workers; runtime.GOMAXPROCS(0) when
// workers <= 0.
func NewPool(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Pool{slots: make(chan struct{}, workers)}
}

// Size returns how many jobs the pool runs at once.
func (p *Pool) Size() int { return cap(p.slots) }

// Do calls fn(ctx, i) for every i in [0, n), at most p.Size() at a time
// (fewer when parallel is positive and smaller), and returns when every
// call has returned. progress, when not nil, is called after each call
// with the number done so far and n, one call at a time.
//
// # Errors
//
// ctx's error when it ended before every i was started; the i that were
// not started are reported by started, which is true for exactly the i
// that fn was called with.
func (p *Pool) Do(ctx context.Context, n, parallel int, fn func(ctx context.Context, i int), progress func(done, total int)) (started []bool, err error) {
	started = make([]bool, n)
	workers := p.Size()
	if parallel > 0 && parallel < workers {
		workers = parallel
	}
	workers = min(workers, n)
	var (
		next atomic.Int64
		done int
		mu   sync.Mutex // serialises progress
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				select {
				case p.slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if ctx.Err() != nil {
					<-p.slots
					return
				}
				started[i] = true
				fn(ctx, i)
				<-p.slots
				if progress != nil {
					mu.Lock()
					done++
					progress(done, n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range started {
		if !s {
			return started, ctx.Err()
		}
	}
	return started, nil
}
