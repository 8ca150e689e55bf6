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
	// DefaultLease is how long a claimed job stays a worker's without a
	// renewal. A worker renews the leases of the jobs it holds every
	// third of the lease, while they wait for a slot and while they run,
	// so the lease need not outlast a replay (the sandbox's wall-clock
	// backstop, wasm.DefaultTimeout, is 10 s): it bounds how long the jobs
	// of a node that died wait before another node retakes them. With
	// the default, a dead node's job is retaken within about 10 s and
	// rerun well within QueuedTimeout (45 s); a worker that stops
	// gracefully releases its jobs at once instead.
	DefaultLease = 10 * time.Second
	// MinLease is the shortest lease a worker takes: renewals every
	// third of it must fit the store's round trips.
	MinLease = time.Second
	// DefaultPoll is the longest a worker with nothing to do waits before
	// it asks the queue again.
	DefaultPoll = 200 * time.Millisecond
	// DefaultMaxAttempts is how many claims a job gets before a worker
	// records that no worker could finish it.
	DefaultMaxAttempts = 3
	// DefaultJobTTL is how long a job stays in the queue, whatever its
	// state: workers delete older ones (store.Queue.Purge), left by a
	// submitter that died or gave up. It is far beyond QueuedTimeout.
	DefaultJobTTL = 10 * time.Minute
	// MaxSlots is the most replays a worker runs at once: with its
	// backlog it holds at most store.MaxClaim jobs.
	MaxSlots = store.MaxClaim / 2
)

// WorkerConfig configures NewWorker.
type WorkerConfig struct {
	Queue  store.Queue
	Runner TaskRunner
	// Name names the worker in leases and results; unique per node, such
	// as host and process id.
	Name string
	// Slots is how many replays the worker runs at once; 0 is GOMAXPROCS,
	// and more than MaxSlots is MaxSlots.
	Slots int
	// Backlog is how many claimed jobs beyond Slots the worker holds,
	// waiting for a slot, so that claiming and recording results (round
	// trips to the store) overlap the runs; 0 is Slots, negative none.
	// Slots and Backlog together are at most store.MaxClaim.
	Backlog int
	// Lease is how long a claimed job stays the worker's without a
	// renewal; 0 is DefaultLease, and less than MinLease is MinLease. The
	// worker renews every held job's lease each third of it, so the lease
	// need not outlast a replay; it is how long a dead node's jobs wait
	// before another node retakes them (and so, with a run, must fit well
	// within QueuedTimeout). A worker that stops releases its jobs
	// (store.Queue.Release) rather than leave them to the lease; a result
	// is recorded only under the claim's fencing token (store.Lease.Token),
	// so a worker whose lease ran out records nothing.
	Lease time.Duration
	// Poll is the longest an idle worker waits before claiming again; 0 is
	// DefaultPoll. It waits less at first, doubling up to Poll.
	Poll time.Duration
	// MaxAttempts is how many claims a job gets; the worker that claims it
	// past that records an error instead of running it. 0 is
	// DefaultMaxAttempts.
	MaxAttempts int
	// JobTTL is how long a job may stay in the queue; the worker deletes
	// older ones every tenth of it (store.Queue.Purge). 0 is
	// DefaultJobTTL.
	JobTTL time.Duration
	// Logger receives the queue's errors; nil discards them.
	Logger *slog.Logger
}

// WorkerStats counts what a worker did.
type WorkerStats struct {
	Claimed   int64 // jobs claimed
	Completed int64 // results recorded
	Lost      int64 // results refused: the lease was lost first
	Abandoned int64 // jobs released unrun or cut short when the worker stopped
	Retried   int64 // jobs given back for a transient error (a store's)
	Purged    int64 // expired jobs deleted
}

// Worker claims replay jobs from the shared queue and runs them, Slots at
// a time, recording each result once. Every node runs one; a batch that
// any node submits is spread over all of them.
type Worker struct {
	cfg   WorkerConfig
	log   *slog.Logger
	stats struct {
		claimed, completed, lost, abandoned, retried, purged atomic.Int64
	}
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
	cfg.Slots = min(cfg.Slots, MaxSlots)
	if cfg.Backlog == 0 {
		cfg.Backlog = cfg.Slots
	}
	cfg.Backlog = min(max(cfg.Backlog, 0), store.MaxClaim-cfg.Slots)
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	cfg.Lease = max(cfg.Lease, MinLease)
	if cfg.JobTTL <= 0 {
		cfg.JobTTL = DefaultJobTTL
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

// Runner returns the runner the Worker replays on (WorkerConfig.Runner).
func (w *Worker) Runner() TaskRunner { return w.cfg.Runner }

// Stats returns the counts so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Claimed: w.stats.claimed.Load(), Completed: w.stats.completed.Load(),
		Lost: w.stats.lost.Load(), Abandoned: w.stats.abandoned.Load(),
		Retried: w.stats.retried.Load(), Purged: w.stats.purged.Load()}
}

// Run claims and runs jobs until ctx ends, then waits for the replays in
// flight. A replay that ctx cut short is not recorded, and the jobs it
// holds, run or not, are released for any other node to claim at once.
// It also deletes the queue's expired jobs, every tenth of JobTTL.
func (w *Worker) Run(ctx context.Context) {
	var (
		wg       sync.WaitGroup
		inflight atomic.Int64
		freed    = make(chan struct{}, 1)
		idle     = w.cfg.Poll / 16
	)
	defer wg.Wait()
	wg.Go(func() { w.sweep(ctx) })
	held := int64(min(w.cfg.Slots+w.cfg.Backlog, store.MaxClaim)) // jobs held at once
	cpu := make(chan struct{}, w.cfg.Slots)                       // runs at once
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

// sweep deletes the queue's expired jobs every tenth of JobTTL until ctx
// ends.
func (w *Worker) sweep(ctx context.Context) {
	every := max(w.cfg.JobTTL/10, time.Second)
	for {
		w.sleep(ctx, every)
		if ctx.Err() != nil {
			return
		}
		n, err := w.cfg.Queue.Purge(ctx, QueueName, w.cfg.JobTTL)
		w.stats.purged.Add(int64(n))
		if err != nil && ctx.Err() == nil {
			w.log.Error("replays: purge", "worker", w.cfg.Name, "err", err)
		}
	}
}

// errLeaseLost ends a job's context when a renewal finds its lease lost.
var errLeaseLost = errors.New("replays: lease lost")

// heartbeat renews l every third of the lease until ctx ends; when the
// lease is lost (retaken after a stall, or the job deleted) it ends the
// job with errLeaseLost.
func (w *Worker) heartbeat(ctx context.Context, l store.Lease, lost context.CancelCauseFunc) {
	every := w.cfg.Lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		_, err := w.cfg.Queue.Renew(rctx, l, w.cfg.Lease)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, store.ErrLeaseLost) || fault.CodeOf(err) == "job_not_found":
			lost(errLeaseLost)
			return
		case ctx.Err() == nil:
			// A blip: the lease has two more renewals before it runs out.
			w.log.Warn("replays: renew", "worker", w.cfg.Name, "job", l.ID, "err", err)
		}
	}
}

// retries is how many times a worker tries an operation that failed on a
// transient error (the store's) before it gives the job up.
const retries = 3

// do runs one claimed job and records its result, renewing its lease
// until then.
func (w *Worker) do(ctx context.Context, l store.Lease, cpu chan struct{}) {
	jctx, lost := context.WithCancelCause(ctx)
	var hb sync.WaitGroup
	hb.Go(func() { w.heartbeat(jctx, l, lost) })
	stop := func() { lost(nil); hb.Wait() }
	defer stop()

	var res TaskResult
	var task Task
	switch err := json.Unmarshal(l.Payload, &task); {
	case err != nil:
		res.Error, res.Code = fmt.Sprintf("the task does not decode: %v", err), CodeInvalidTask
	case l.Attempt > w.cfg.MaxAttempts:
		res.Error, res.Code = fmt.Sprintf("claimed %d times, and no worker finished it", l.Attempt-1), CodeAbandoned
	default:
		if err := task.Checker.Validate(); err != nil {
			res.Error, res.Code = err.Error(), CodeInvalidChecker
			break
		}
		select {
		case cpu <- struct{}{}:
		case <-jctx.Done():
			w.giveUp(ctx, jctx, l, stop)
			return
		}
		var r checkers.Result
		for try := 1; ; try++ {
			r = w.cfg.Runner.Do(jctx, checkers.Job{Ref: task.Checker, Input: task.input(), NoMemo: task.NoMemo})
			if r.Err == nil || errors.Is(r.Err, checkers.ErrNotFound) || jctx.Err() != nil || try == retries {
				break
			}
			w.log.Warn("replays: read checker", "worker", w.cfg.Name, "job", l.ID, "try", try, "err", r.Err)
			w.sleep(jctx, time.Duration(try)*100*time.Millisecond)
		}
		<-cpu
		if jctx.Err() != nil {
			w.giveUp(ctx, jctx, l, stop)
			return
		}
		switch {
		case errors.Is(r.Err, checkers.ErrNotFound):
			res.Error, res.Code = r.Err.Error(), CodeCheckerNotFound
		case r.Err != nil:
			// Not a verdict on the checker (a store that failed to
			// answer): give the job back for another try, here or on
			// another node, rather than record a final error. The
			// release does not count as an attempt, so this is bounded
			// by the batch's own timeout and JobTTL.
			w.log.Error("replays: read checker", "worker", w.cfg.Name, "job", l.ID, "err", r.Err)
			stop()
			w.stats.retried.Add(1)
			w.release(ctx, l)
			return
		default:
			res.Outcome, res.Memo = r.Outcome, r.Memo
		}
	}
	stop()
	b, err := json.Marshal(res)
	if err != nil {
		w.log.Error("replays: encode result", "job", l.ID, "err", err)
		w.release(ctx, l)
		return
	}
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err := w.cfg.Queue.Complete(cctx, l, b)
		cancel()
		switch {
		case err == nil:
			w.stats.completed.Add(1)
			return
		case errors.Is(err, store.ErrLeaseLost) || fault.CodeOf(err) == "job_not_found":
			// Another worker finished it, or its submitter gave up on it
			// (or an earlier try of this Complete did record it).
			w.stats.lost.Add(1)
			return
		case try < retries && ctx.Err() == nil:
			w.log.Warn("replays: complete", "worker", w.cfg.Name, "job", l.ID, "try", try, "err", err)
			w.sleep(ctx, time.Duration(try)*100*time.Millisecond)
		default:
			// The result is lost; let another worker run the job again.
			w.log.Error("replays: complete", "worker", w.cfg.Name, "job", l.ID, "err", err)
			w.stats.retried.Add(1)
			w.release(ctx, l)
			return
		}
	}
}

// giveUp handles a job whose context ended before its result: a lost
// lease is counted, a job cut short by the worker's shutdown is released.
func (w *Worker) giveUp(ctx, jctx context.Context, l store.Lease, stop func()) {
	if errors.Is(context.Cause(jctx), errLeaseLost) {
		w.stats.lost.Add(1)
		return
	}
	stop()
	w.stats.abandoned.Add(1)
	w.release(ctx, l)
}

// release gives l's job back to the queue, for any node to claim at once.
// If that fails too, the job waits for its lease to run out.
func (w *Worker) release(ctx context.Context, l store.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := w.cfg.Queue.Release(rctx, l)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) && fault.CodeOf(err) != "job_not_found" {
		w.log.Error("replays: release", "worker", w.cfg.Name, "job", l.ID, "err", err)
	}
}
