package replays

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// TaskRunner runs one replay, or answers it from its memo;
// *checkers.Runner is one.
type TaskRunner interface {
	Do(ctx context.Context, job checkers.Job) checkers.Result
}

// CheckerCacheBytes is what a node's runners keep of checkers' bytes in
// memory (CachedSource), each: a Go checker is a few megabytes.
const CheckerCacheBytes = 256 << 20

// CachedSource keeps the bytes of checkers read from src, up to maxBytes
// in all, so that a worker replaying one checker many times reads it from
// the store once. Checkers are named by the hash of their bytes, so a kept
// checker never goes stale; bytes whose hash is not their name are not
// kept. It is safe for concurrent use.
func CachedSource(src checkers.Source, maxBytes int) checkers.Source {
	return &cachedSource{src: src, max: maxBytes, byHash: map[string][]byte{}}
}

type cachedSource struct {
	src    checkers.Source
	max    int
	mu     sync.Mutex
	size   int
	byHash map[string][]byte
	order  []string // oldest first, for eviction
}

func (c *cachedSource) Checker(sum string) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.byHash[sum]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := c.src.Checker(sum)
	if err != nil || len(b) > c.max || checkers.SHA256(b) != sum {
		return b, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byHash[sum]; ok {
		return b, nil
	}
	for c.size+len(b) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.byHash[old])
		delete(c.byHash, old)
	}
	c.byHash[sum] = b
	c.order = append(c.order, sum)
	c.size += len(b)
	return b, nil
}

// Defaults for WorkerConfig.
const (
	// DefaultLease outlasts any one replay: the sandbox's wall-clock
	// backstop ends a run long before it.
	DefaultLease = time.Minute
	// DefaultPoll is the longest a worker with nothing to do waits before
	// it asks the queue again.
	DefaultPoll = 200 * time.Millisecond
	// DefaultMaxAttempts is how many claims a job gets before a worker
	// records that no worker could finish it.
	DefaultMaxAttempts = 3
)

// WorkerConfig configures NewWorker.
type WorkerConfig struct {
	Queue  store.Queue
	Runner TaskRunner
	// Name names the worker in leases and results; unique per node, such
	// as host and process id.
	Name string
	// Slots is how many replays the worker runs at once; 0 is GOMAXPROCS.
	Slots int
	// Backlog is how many claimed jobs beyond Slots the worker holds,
	// waiting for a slot, so that claiming and recording results (round
	// trips to the store) overlap the runs; 0 is Slots, negative none.
	Backlog int
	// Lease is how long a claimed job stays the worker's: if the node dies,
	// the job is claimed again after it. 0 is DefaultLease; it must
	// outlast the longest replay.
	Lease time.Duration
	// Poll is the longest an idle worker waits before claiming again; 0 is
	// DefaultPoll. It waits less at first, doubling up to Poll.
	Poll time.Duration
	// MaxAttempts is how many claims a job gets; the worker that claims it
	// past that records an error instead of running it. 0 is
	// DefaultMaxAttempts.
	MaxAttempts int
	// Logger receives the queue's errors; nil discards them.
	Logger *slog.Logger
}

// WorkerStats counts what a worker did.
type WorkerStats struct {
	Claimed   int64 // jobs claimed
	Completed int64 // results recorded
	Lost      int64 // results refused: the lease was lost first
	Abandoned int64 // jobs left to their lease when the worker stopped
}

// Worker claims replay jobs from the shared queue and runs them, Slots at
// a time, recording each result once. Every node runs one; a batch that
// any node submits is spread over all of them.
type Worker struct {
	cfg   WorkerConfig
	log   *slog.Logger
	stats struct{ claimed, completed, lost, abandoned atomic.Int64 }
}

// NewWorker returns a Worker; Run starts it.
//
// # Notes
//
// It panics when cfg has no Queue, Runner or Name: a programming error.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Queue == nil || cfg.Runner == nil || cfg.Name == "" {
		panic("replays: WorkerConfig needs Queue, Runner and Name")
	}
	if cfg.Slots <= 0 {
		cfg.Slots = runtime.GOMAXPROCS(0)
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = cfg.Slots
	}
	cfg.Backlog = max(cfg.Backlog, 0)
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{cfg: cfg, log: log}
}

// Stats returns the counts so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Claimed: w.stats.claimed.Load(), Completed: w.stats.completed.Load(),
		Lost: w.stats.lost.Load(), Abandoned: w.stats.abandoned.Load()}
}

// Run claims and runs jobs until ctx ends, then waits for the replays in
// flight. A replay that ctx cut short is not recorded: its job is claimed
// again, by any node, once the lease runs out.
func (w *Worker) Run(ctx context.Context) {
	var (
		wg       sync.WaitGroup
		inflight atomic.Int64
		freed    = make(chan struct{}, 1)
		idle     = w.cfg.Poll / 16
	)
	defer wg.Wait()
	held := int64(w.cfg.Slots + w.cfg.Backlog) // jobs held at once
	cpu := make(chan struct{}, w.cfg.Slots)    // runs at once
	for ctx.Err() == nil {
		// Claim when half the room is free (or all of it), so that each
		// claim takes several jobs, not one.
		free := held - inflight.Load()
		if free == 0 || (free < (held+1)/2 && inflight.Load() > 0) {
			select {
			case <-freed:
			case <-ctx.Done():
			}
			continue
		}
		leases, err := w.cfg.Queue.Claim(ctx, QueueName, w.cfg.Name, int(free), w.cfg.Lease)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("replays: claim", "worker", w.cfg.Name, "err", err)
			}
			w.sleep(ctx, w.cfg.Poll)
			continue
		}
		if len(leases) == 0 {
			w.sleep(ctx, idle)
			idle = min(2*idle, w.cfg.Poll)
			continue
		}
		idle = w.cfg.Poll / 16
		w.stats.claimed.Add(int64(len(leases)))
		for _, l := range leases {
			inflight.Add(1)
			wg.Go(func() {
				defer func() {
					inflight.Add(-1)
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
				w.do(ctx, l, cpu)
			})
		}
	}
}

func (w *Worker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// do runs one claimed job and records its result.
func (w *Worker) do(ctx context.Context, l store.Lease, cpu chan struct{}) {
	var res TaskResult
	var task Task
	switch err := json.Unmarshal(l.Payload, &task); {
	case err != nil:
		res.Error, res.Code = fmt.Sprintf("the task does not decode: %v", err), CodeInvalidTask
	case l.Attempt > w.cfg.MaxAttempts:
		res.Error, res.Code = fmt.Sprintf("claimed %d times, and no worker finished it", l.Attempt-1), CodeAbandoned
	default:
		select {
		case cpu <- struct{}{}:
		case <-ctx.Done():
			w.stats.abandoned.Add(1)
			return
		}
		r := w.cfg.Runner.Do(ctx, checkers.Job{Ref: task.Checker, Input: task.input(), NoMemo: task.NoMemo})
		<-cpu
		if ctx.Err() != nil {
			// Cut short by shutdown: leave the job to its lease, for a
			// node that is not stopping.
			w.stats.abandoned.Add(1)
			return
		}
		switch {
		case errors.Is(r.Err, checkers.ErrNotFound):
			res.Error, res.Code = r.Err.Error(), CodeCheckerNotFound
		case r.Err != nil:
			res.Error, res.Code = r.Err.Error(), CodeInvalidChecker
		default:
			res.Outcome, res.Memo = r.Outcome, r.Memo
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		w.log.Error("replays: encode result", "job", l.ID, "err", err)
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch err := w.cfg.Queue.Complete(cctx, l, b); {
	case err == nil:
		w.stats.completed.Add(1)
	case errors.Is(err, store.ErrLeaseLost) || fault.CodeOf(err) == "job_not_found":
		// Another worker finished it, or its submitter gave up on it.
		w.stats.lost.Add(1)
	default:
		w.log.Error("replays: complete", "worker", w.cfg.Name, "job", l.ID, "err", err)
	}
}
