package replays_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
	"github.com/assayhq/assay/wasm"
)

// fixture is a real checker: rows.wasm passes an artifact with at least
// min_rows rows, each with an id.
type fixture struct {
	runner *checkers.Runner
	ref    checkers.Ref
}

var (
	fixtureOnce sync.Once
	shared      fixture
	fixtureErr  error
)

// rowsChecker compiles rows.wasm once for every test in the package.
func rowsChecker(tb testing.TB) fixture {
	tb.Helper()
	fixtureOnce.Do(func() {
		dir := filepath.Join("..", "..", "fixtures", "checkers")
		src, err := checkers.OpenDir(dir)
		if err != nil {
			fixtureErr = err
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, "rows.wasm"))
		if err != nil {
			fixtureErr = err
			return
		}
		sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
		if err != nil {
			fixtureErr = err
			return
		}
		shared = fixture{runner: checkers.NewRunner(sb, src), ref: checkers.Ref{SHA256: checkers.SHA256(b)}}
	})
	if fixtureErr != nil {
		tb.Fatal(fixtureErr)
	}
	return shared
}

// tasks returns n tasks of the rows checker: task i has i%4 rows of the 2
// it needs, so it passes when i%4 >= 2.
func tasks(ref checkers.Ref, n int) []replays.Task {
	out := make([]replays.Task, n)
	for i := range out {
		rows := make([]string, i%4)
		for j := range rows {
			rows[j] = fmt.Sprintf(`{"id":"r%d"}`, j)
		}
		out[i] = replays.Task{Checker: ref, Artifact: []byte(`{"min_rows":2,"rows":[` + strings.Join(rows, ",") + `]}`)}
	}
	return out
}

// statsWhen reads w's counters until ok holds of them, or 10 s pass, and
// answers the last read: a worker counts a job just after it stores the
// job's result, so a test that has seen every result may read the
// counters a moment before the last count.
func statsWhen(w *replays.Worker, ok func(replays.WorkerStats) bool) replays.WorkerStats {
	st := w.Stats()
	for deadline := time.Now().Add(10 * time.Second); !ok(st) && time.Now().Before(deadline); st = w.Stats() {
		time.Sleep(5 * time.Millisecond) // polling the counters, not waiting for time to pass
	}
	return st
}

// startWorkers runs one worker per queue, each its own node, until the
// test ends.
func startWorkers(tb testing.TB, runner replays.TaskRunner, queues []store.Queue, slots int, lease time.Duration) []*replays.Worker {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() { cancel(); wg.Wait() })
	ws := make([]*replays.Worker, len(queues))
	for i, q := range queues {
		ws[i] = replays.NewWorker(replays.WorkerConfig{Queue: q, Runner: runner, Name: fmt.Sprintf("node%d", i),
			Slots: slots, Lease: lease, Poll: 50 * time.Millisecond})
		wg.Go(func() { ws[i].Run(ctx) })
	}
	return ws
}

func checkResults(tb testing.TB, res []replays.TaskResult, n int) map[string]int {
	tb.Helper()
	if len(res) != n {
		tb.Fatalf("%d results for %d tasks", len(res), n)
	}
	byWorker := map[string]int{}
	for i, r := range res {
		want := wasm.KindFail
		if i%4 >= 2 {
			want = wasm.KindPass
		}
		if r.Error != "" || r.Outcome.Kind != want {
			tb.Errorf("task %d: %s %q, want %s", i, r.Outcome.Kind, r.Error, want)
		}
		byWorker[r.Worker]++
	}
	return byWorker
}

func openPostgres(tb testing.TB, url string) store.Queue {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return postgres.NewQueue(s)
}

// TestWorker_Spread: a batch submitted on one node of three, each node
// with its own connection to one PostgreSQL database and its own worker,
// runs on all three, every task once, with the right outcome.
func TestWorker_Spread(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	f := rowsChecker(t)
	queues := []store.Queue{openPostgres(t, url), openPostgres(t, url), openPostgres(t, url)}
	ws := startWorkers(t, f.runner, queues, 2, time.Minute)
	const n = 90
	res, err := replays.RunQueued(context.Background(), queues[0], "spread", tasks(f.ref, n), 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	byWorker := checkResults(t, res, n)
	for i := range ws {
		if name := fmt.Sprintf("node%d", i); byWorker[name] == 0 {
			t.Errorf("%s ran none of the batch: %v", name, byWorker)
		}
	}
	t.Logf("spread: %v", byWorker)
	if st, err := queues[1].Stats(context.Background(), replays.QueueName); err != nil || st != (store.QueueStats{}) {
		t.Errorf("after RunQueued the queue holds %+v (%v), want nothing", st, err)
	}
}

// TestWorker_Badger: the same on one node with badger.
func TestWorker_Badger(t *testing.T) {
	t.Parallel()
	f := rowsChecker(t)
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q := storage.NewQueue(db, storage.QueueConfig{})
	startWorkers(t, f.runner, []store.Queue{q}, 2, time.Minute)
	res, err := replays.RunQueued(context.Background(), q, "one", tasks(f.ref, 20), 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, res, 20)
}

// TestWorker_NodeDies: a node that claimed jobs and died leaves them to
// its lease; another node runs them after it, and the dead node's late
// results are refused.
func TestWorker_NodeDies(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	f := rowsChecker(t)
	ctx := context.Background()
	dead, live := openPostgres(t, url), openPostgres(t, url)
	ids, err := replays.Submit(ctx, dead, "dies", tasks(f.ref, 8))
	if err != nil {
		t.Fatal(err)
	}
	// The dying node claims everything, then stops answering.
	held, err := dead.Claim(ctx, replays.QueueName, "dead-node", 8, 500*time.Millisecond)
	if err != nil || len(held) != 8 {
		t.Fatalf("claim: %d %v", len(held), err)
	}
	ws := startWorkers(t, f.runner, []store.Queue{live}, 2, time.Minute)
	res, err := replays.Wait(ctx, live, ids, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range checkResults(t, res, 8) {
		if i != "node0" || r != 8 {
			t.Errorf("results by %s: %d", i, r)
		}
	}
	for _, r := range res {
		if r.Attempt != 2 {
			t.Errorf("result of attempt %d, want 2 (the live node's retake)", r.Attempt)
		}
	}
	if err := dead.Complete(ctx, held[0], []byte(`{"error":"late"}`)); fault.CodeOf(err) != "lease_lost" {
		t.Errorf("the dead node's late result: %v, want lease_lost", err)
	}
	if st := statsWhen(ws[0], func(st replays.WorkerStats) bool { return st.Completed == 8 }); st.Completed != 8 || st.Claimed != 8 {
		t.Errorf("worker stats %+v", st)
	}
}

// TestWorker_GivesUp: a job claimed more than MaxAttempts times gets an
// error result instead of another run.
func TestWorker_GivesUp(t *testing.T) {
	t.Parallel()
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The queue's clock is the test's: each claim's lease runs out when
	// the test moves it on.
	var skew atomic.Int64
	q := storage.NewQueue(db, storage.QueueConfig{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	f := rowsChecker(t)
	ctx := context.Background()
	ids, err := replays.Submit(ctx, q, "poison", tasks(f.ref, 1))
	if err != nil {
		t.Fatal(err)
	}
	for range replays.DefaultMaxAttempts {
		if l, err := q.Claim(ctx, replays.QueueName, "crashing-node", 1, time.Millisecond); err != nil || len(l) != 1 {
			t.Fatalf("claim: %v %v", l, err)
		}
		skew.Add(int64(time.Second))
	}
	startWorkers(t, f.runner, []store.Queue{q}, 1, time.Minute)
	res, err := replays.Wait(ctx, q, ids, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Attempt != replays.DefaultMaxAttempts+1 || !strings.Contains(res[0].Error, "no worker finished it") || res[0].Outcome.Kind != "" {
		t.Fatalf("result %+v, want an error after %d attempts", res[0], replays.DefaultMaxAttempts)
	}
}

// TestSubmit_ErrInvalid: a bad batch id or checker reference queues
// nothing.
func TestSubmit_ErrInvalid(t *testing.T) {
	t.Parallel()
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q := storage.NewQueue(db, storage.QueueConfig{})
	ctx := context.Background()
	good := replays.Task{Checker: checkers.Ref{SHA256: strings.Repeat("a", 64)}}
	for name, c := range map[string]struct {
		batch string
		tasks []replays.Task
	}{
		"EmptyBatch": {"", []replays.Task{good}},
		"SpaceBatch": {"a b", []replays.Task{good}},
		"LongBatch":  {strings.Repeat("b", replays.MaxBatchID+1), []replays.Task{good}},
		"BadRef":     {"ok", []replays.Task{good, {Checker: checkers.Ref{SHA256: "nope"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := replays.Submit(ctx, q, c.batch, c.tasks); fault.CodeOf(err) != "replay_invalid" {
				t.Fatalf("%v, want replay_invalid", err)
			}
		})
	}
	if st, err := q.Stats(ctx, replays.QueueName); err != nil || st != (store.QueueStats{}) {
		t.Errorf("bad submissions queued %+v (%v)", st, err)
	}
}

// countingSource counts the reads that reach it.
type countingSource struct {
	mu    sync.Mutex
	reads map[string]int
	files map[string][]byte
}

func (c *countingSource) Checker(sum string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[sum]++
	b, ok := c.files[sum]
	if !ok {
		return nil, fmt.Errorf("%w: %s", checkers.ErrNotFound, sum)
	}
	return b, nil
}

// TestCachedSource: a checker is read once and then served from memory;
// the cache holds at most its bound, oldest out first; unknown checkers
// and bytes that do not match their name are not kept.
func TestCachedSource(t *testing.T) {
	t.Parallel()
	a, b, c := []byte("aaaa"), []byte("bbbbbb"), []byte("cc")
	src := &countingSource{reads: map[string]int{}, files: map[string][]byte{
		checkers.SHA256(a): a, checkers.SHA256(b): b, checkers.SHA256(c): c,
		strings.Repeat("0", 64): []byte("not its name"),
	}}
	cs := replays.CachedSource(src, 10)
	read := func(x []byte) {
		t.Helper()
		got, err := cs.Checker(checkers.SHA256(x))
		if err != nil || string(got) != string(x) {
			t.Fatalf("read %q: %q %v", x, got, err)
		}
	}
	read(a)
	read(a)
	read(b) // 10 bytes: a and b fit
	read(a)
	if src.reads[checkers.SHA256(a)] != 1 || src.reads[checkers.SHA256(b)] != 1 {
		t.Fatalf("reads %v, want one each", src.reads)
	}
	read(c) // 12 bytes: a, the oldest, goes
	read(a)
	if src.reads[checkers.SHA256(a)] != 2 {
		t.Errorf("a was read %d times, want 2 (evicted once)", src.reads[checkers.SHA256(a)])
	}
	for range 2 {
		if _, err := cs.Checker(strings.Repeat("0", 64)); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Checker(strings.Repeat("f", 64)); err == nil {
			t.Fatal("an unknown checker was found")
		}
	}
	if src.reads[strings.Repeat("0", 64)] != 2 || src.reads[strings.Repeat("f", 64)] != 2 {
		t.Errorf("mismatched or unknown checkers were kept: %v", src.reads)
	}
}

// TestService_ReplayQueued: POST /replays' service, spread over three
// nodes through the queue, answers the same outcomes as the same batch run
// on one node, in order; an unknown checker is checker_not_found.
func TestService_ReplayQueued(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	f := rowsChecker(t)
	ctx := context.Background()
	queues := []store.Queue{openPostgres(t, url), openPostgres(t, url), openPostgres(t, url)}
	startWorkers(t, f.runner, queues, 2, time.Minute)
	svc := replays.NewService(f.runner)
	var req replays.Request
	req.Checker, req.NoMemo = f.ref, true
	for _, task := range tasks(f.ref, 40) {
		raw, _ := json.Marshal(string(task.Artifact))
		req.Artifacts = append(req.Artifacts, raw)
	}
	spread, err := svc.ReplayQueued(ctx, queues[0], "svc-1", req)
	if err != nil {
		t.Fatal(err)
	}
	local, err := svc.Replay(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if spread.Count != 40 || len(spread.Outcomes) != 40 {
		t.Fatalf("count %d, %d outcomes", spread.Count, len(spread.Outcomes))
	}
	for i := range local.Outcomes {
		a, b := spread.Outcomes[i], local.Outcomes[i]
		a.WallNS, b.WallNS = 0, 0
		if a != b {
			t.Errorf("artifact %d: queued %+v, local %+v", i, a, b)
		}
	}
	if st, err := queues[2].Stats(ctx, replays.QueueName); err != nil || st != (store.QueueStats{}) {
		t.Errorf("the queue keeps %+v (%v) after the batch", st, err)
	}

	req.Checker = checkers.Ref{SHA256: strings.Repeat("ab", 32)}
	if _, err := svc.ReplayQueued(ctx, queues[1], "svc-2", req); fault.CodeOf(err) != "checker_not_found" {
		t.Errorf("unknown checker: %v, want checker_not_found", err)
	}
	req.Checker = checkers.Ref{SHA256: "short"}
	if _, err := svc.ReplayQueued(ctx, queues[1], "svc-3", req); fault.CodeOf(err) != "invalid_checker" {
		t.Errorf("malformed checker: %v, want invalid_checker", err)
	}
}

// fakeRunner answers every job with a pass after delay, or fails the
// first fail calls with a store error (not checkers.ErrNotFound).
type fakeRunner struct {
	delay time.Duration
	wait  <-chan struct{} // when set, a run passes once it is closed, not after delay
	mu    sync.Mutex
	fail  int
	calls int
}

func (f *fakeRunner) Do(ctx context.Context, _ checkers.Job) checkers.Result {
	f.mu.Lock()
	f.calls++
	failing := f.calls <= f.fail
	f.mu.Unlock()
	if failing {
		return checkers.Result{Err: fault.New(fault.Unavailable, "store_contention", "the store is busy")}
	}
	var after <-chan time.Time // nil, which never fires, when f.wait is set
	if f.wait == nil {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return checkers.Result{Outcome: wasm.Outcome{Kind: wasm.KindPass}}
	case <-f.wait:
		return checkers.Result{Outcome: wasm.Outcome{Kind: wasm.KindPass}}
	case <-ctx.Done():
		return checkers.Result{Err: ctx.Err()}
	}
}

func openBadgerQueue(tb testing.TB) store.Queue {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return storage.NewQueue(db, storage.QueueConfig{})
}

var fakeRef = checkers.Ref{SHA256: strings.Repeat("ab", 32)}

// TestWorker_ReleasesOnStop: a worker that stops gives back the jobs it
// runs and the backlog it holds at once, not after its lease, and the
// claims it gave back do not count as attempts.
func TestWorker_ReleasesOnStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := openBadgerQueue(t)
	if _, err := replays.Submit(ctx, q, "stop", tasks(fakeRef, 4)); err != nil {
		t.Fatal(err)
	}
	w := replays.NewWorker(replays.WorkerConfig{Queue: q, Runner: &fakeRunner{delay: time.Hour}, Name: "stopping",
		Slots: 2, Backlog: 2, Lease: time.Hour})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(wctx); close(done) }()
	for deadline := time.Now().Add(10 * time.Second); w.Stats().Claimed < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("claimed %d of 4", w.Stats().Claimed)
		}
	}
	cancel()
	<-done
	if st := w.Stats(); st.Abandoned != 4 || st.Completed != 0 {
		t.Errorf("stats %+v, want 4 released", st)
	}
	st, err := q.Stats(ctx, replays.QueueName)
	if err != nil || st != (store.QueueStats{Waiting: 4}) {
		t.Fatalf("after the stop the queue holds %+v (%v), want 4 waiting", st, err)
	}
	ls, err := q.Claim(ctx, replays.QueueName, "next", 10, time.Minute)
	if err != nil || len(ls) != 4 {
		t.Fatalf("claim after the stop: %d %v", len(ls), err)
	}
	for _, l := range ls {
		if l.Attempt != 1 {
			t.Errorf("job %s retaken at attempt %d, want 1", l.ID, l.Attempt)
		}
	}
}

// TestWorker_RenewsLease: a replay longer than the lease keeps its job:
// the worker renews the lease while it runs, and nobody retakes it. The
// queue's clock is the test's: once the worker has renewed twice, it is
// moved on half a lease, past the lease the job was claimed with and
// within the one renewed.
func TestWorker_RenewsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	q := &renewCounter{Queue: storage.NewQueue(db, storage.QueueConfig{Now: now})}
	release := make(chan struct{})
	startWorkers(t, &fakeRunner{wait: release}, []store.Queue{q}, 1, replays.MinLease)
	ids, err := replays.Submit(ctx, q, "long", tasks(fakeRef, 1))
	if err != nil {
		t.Fatal(err)
	}
	// Renewals come every third of the lease: two are two thirds of it.
	for deadline := time.Now().Add(30 * time.Second); q.renewed.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker renewed the lease %d times in 30 s", q.renewed.Load())
		}
	}
	skew.Add(int64(replays.MinLease / 2))
	if ls, err := q.Claim(ctx, replays.QueueName, "thief", 1, time.Minute); err != nil || len(ls) != 0 {
		t.Fatalf("retook a job whose lease is renewed: %v %v", ls, err)
	}
	close(release)
	res, err := replays.Wait(ctx, q, ids, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome.Kind != wasm.KindPass || res[0].Attempt != 1 {
		t.Fatalf("result %+v, want a pass at attempt 1", res[0])
	}
}

// renewCounter is a queue that counts the lease renewals made through it.
type renewCounter struct {
	store.Queue
	renewed atomic.Int64
}

func (q *renewCounter) Renew(ctx context.Context, l store.Lease, lease time.Duration) (time.Time, error) {
	until, err := q.Queue.Renew(ctx, l, lease)
	if err == nil {
		q.renewed.Add(1)
	}
	return until, err
}

// TestWorker_TransientError: an error reading the checker that is not
// "not found" gives the job back rather than record a final error.
func TestWorker_TransientError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := openBadgerQueue(t)
	r := &fakeRunner{fail: 4}
	ws := startWorkers(t, r, []store.Queue{q}, 1, time.Minute)
	res, err := replays.RunQueued(ctx, q, "blip", tasks(fakeRef, 1), 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Error != "" || res[0].Outcome.Kind != wasm.KindPass || res[0].Attempt != 1 {
		t.Fatalf("result %+v, want a pass once the store answers", res[0])
	}
	if st := statsWhen(ws[0], func(st replays.WorkerStats) bool { return st.Completed == 1 }); st.Retried != 1 || st.Completed != 1 {
		t.Errorf("stats %+v, want 1 retried, 1 completed", st)
	}
}

// TestRunQueued_DeletesOnError: a batch whose wait ends early is taken
// off the queue.
func TestRunQueued_DeletesOnError(t *testing.T) {
	t.Parallel()
	q := openBadgerQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := replays.RunQueued(ctx, q, "nobody", tasks(fakeRef, 3), 20*time.Millisecond, nil); err == nil {
		t.Fatal("no worker, yet the batch finished")
	}
	if st, err := q.Stats(context.Background(), replays.QueueName); err != nil || st != (store.QueueStats{}) {
		t.Errorf("after a failed wait the queue holds %+v (%v), want nothing", st, err)
	}
}

// TestWorker_Purge: jobs nobody collected are deleted once older than
// the workers' JobTTL.
func TestWorker_Purge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := openBadgerQueue(t)
	w := replays.NewWorker(replays.WorkerConfig{Queue: q, Runner: &fakeRunner{}, Name: "sweeper", JobTTL: time.Second})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { w.Run(wctx); close(done) }()
	if _, err := replays.Submit(ctx, q, "orphan", tasks(fakeRef, 3)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := q.Stats(ctx, replays.QueueName)
		if err != nil {
			t.Fatal(err)
		}
		// The worker counts what it purged once the purge returns: after
		// the queue is seen empty, maybe.
		if st == (store.QueueStats{}) && w.Stats().Purged >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphaned batch is still there: %+v; worker %+v", st, w.Stats())
		}
	}
	if st := w.Stats(); st.Purged != 3 || st.Completed != 3 {
		t.Errorf("stats %+v, want 3 completed then purged", st)
	}
}

// TestWorker_ManySlots: slots beyond what one claim takes are clamped,
// not a claim that fails every time.
func TestWorker_ManySlots(t *testing.T) {
	t.Parallel()
	q := openBadgerQueue(t)
	startWorkers(t, &fakeRunner{}, []store.Queue{q}, 5000, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := replays.RunQueued(ctx, q, "wide", tasks(fakeRef, 50), 20*time.Millisecond, nil)
	if err != nil || len(res) != 50 {
		t.Fatalf("%d results, %v", len(res), err)
	}
}
