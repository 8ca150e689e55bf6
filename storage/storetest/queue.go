package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// RunQueueSuite checks the store.Queue contract on one implementation.
// open returns a queue over a fresh, empty store, closed when the test
// ends; the suite uses queue names of its own, so a store shared between
// calls of open also works.
func RunQueueSuite(t *testing.T, open func(testing.TB) store.Queue) {
	ctx := context.Background()
	job := func(id, payload string) store.Job { return store.Job{ID: id, Payload: []byte(payload)} }
	ids := func(ls []store.Lease) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}

	t.Run("OK", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-ok", job("a", "pa"), job("b/1", "pb"), job("c", "")))
		got, err := q.Claim(ctx, "q-ok", "w1", 2, time.Minute)
		queueMust(t, err)
		if fmt.Sprint(ids(got)) != "[a b/1]" {
			t.Fatalf("first claim took %v, want [a b/1] in enqueue order", ids(got))
		}
		for _, l := range got {
			if l.Queue != "q-ok" || l.Worker != "w1" || l.Attempt != 1 || !l.Expires.After(time.Now().Add(30*time.Second)) {
				t.Errorf("lease %+v", l)
			}
		}
		if string(got[0].Payload) != "pa" || string(got[1].Payload) != "pb" {
			t.Errorf("payloads %q %q", got[0].Payload, got[1].Payload)
		}
		rest, err := q.Claim(ctx, "q-ok", "w2", 10, time.Minute)
		queueMust(t, err)
		if fmt.Sprint(ids(rest)) != "[c]" || len(rest[0].Payload) != 0 {
			t.Fatalf("second claim took %v, want [c] with an empty payload", ids(rest))
		}
		none, err := q.Claim(ctx, "q-ok", "w3", 10, time.Minute)
		queueMust(t, err)
		if len(none) != 0 {
			t.Fatalf("claimed %v while every job is leased", ids(none))
		}
		queueWantStats(t, q, "q-ok", store.QueueStats{Leased: 3})
		queueMust(t, q.Complete(ctx, got[1], []byte("rb")))
		queueMust(t, q.Complete(ctx, rest[0], nil))
		res, err := q.Results(ctx, "q-ok", []string{"c", "a", "b/1", "nope"})
		queueMust(t, err)
		if len(res) != 2 || res[0].ID != "c" || res[1].ID != "b/1" {
			t.Fatalf("results %+v, want c and b/1 in the order asked", res)
		}
		if string(res[1].Data) != "rb" || res[1].Worker != "w1" || res[1].Attempt != 1 || res[1].Done.IsZero() {
			t.Errorf("result of b/1: %+v", res[1])
		}
		if len(res[0].Data) != 0 || res[0].Worker != "w2" {
			t.Errorf("result of c: %+v", res[0])
		}
		queueWantStats(t, q, "q-ok", store.QueueStats{Leased: 1, Done: 2})
		queueMust(t, q.Complete(ctx, got[0], []byte("ra")))
		queueWantStats(t, q, "q-ok", store.QueueStats{Done: 3})
		if again, err := q.Claim(ctx, "q-ok", "w1", 10, time.Millisecond); err != nil || len(again) != 0 {
			t.Errorf("claimed done jobs: %v %v", ids(again), err)
		}
	})

	t.Run("OK_EnqueueAgain", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-again", job("x", "p")))
		queueMust(t, q.Enqueue(ctx, "q-again", job("x", "p"))) // waiting: nothing changes
		l, err := q.Claim(ctx, "q-again", "w", 5, time.Minute)
		queueMust(t, err)
		if len(l) != 1 {
			t.Fatalf("claimed %v after enqueuing one job twice, want one", ids(l))
		}
		queueMust(t, q.Complete(ctx, l[0], []byte("r")))
		queueMust(t, q.Enqueue(ctx, "q-again", job("x", "p"))) // done: still nothing
		if l, err := q.Claim(ctx, "q-again", "w", 5, time.Minute); err != nil || len(l) != 0 {
			t.Fatalf("a done job enqueued again was claimed: %v %v", ids(l), err)
		}
		res, err := q.Results(ctx, "q-again", []string{"x"})
		queueMust(t, err)
		if len(res) != 1 || string(res[0].Data) != "r" {
			t.Fatalf("result after enqueuing again: %+v", res)
		}
	})

	t.Run("ErrJobExists", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-exists", job("x", "p")))
		err := q.Enqueue(ctx, "q-exists", job("new", "n"), job("x", "other"))
		if !errors.Is(err, store.ErrJobExists) || fault.CodeOf(err) != "job_conflict" || fault.KindOf(err) != fault.Conflict {
			t.Fatalf("enqueue x with another payload: %v, want job_conflict", err)
		}
		l, err := q.Claim(ctx, "q-exists", "w", 5, time.Minute)
		queueMust(t, err)
		if fmt.Sprint(ids(l)) != "[x]" || string(l[0].Payload) != "p" {
			t.Fatalf("after a refused batch the queue holds %v, want only the first x", ids(l))
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		long := string(bytes.Repeat([]byte("i"), store.MaxJobID+1))
		bad := map[string]error{
			"empty queue":     q.Enqueue(ctx, "", job("a", "")),
			"queue slash":     q.Enqueue(ctx, "a/b", job("a", "")),
			"queue upper":     q.Enqueue(ctx, "Q", job("a", "")),
			"empty id":        q.Enqueue(ctx, "q-bad", job("", "")),
			"id space":        q.Enqueue(ctx, "q-bad", job("a b", "")),
			"id long":         q.Enqueue(ctx, "q-bad", job(long, "")),
			"id twice":        q.Enqueue(ctx, "q-bad", job("a", "1"), job("a", "1")),
			"payload large":   q.Enqueue(ctx, "q-bad", store.Job{ID: "big", Payload: make([]byte, store.MaxJobPayload+1)}),
			"claim no worker": queueClaimErr(q.Claim(ctx, "q-bad", "", 1, time.Second)),
			"claim zero":      queueClaimErr(q.Claim(ctx, "q-bad", "w", 0, time.Second)),
			"claim too many":  queueClaimErr(q.Claim(ctx, "q-bad", "w", store.MaxClaim+1, time.Second)),
			"claim no lease":  queueClaimErr(q.Claim(ctx, "q-bad", "w", 1, 0)),
			"claim long":      queueClaimErr(q.Claim(ctx, "q-bad", "w", 1, store.MaxLease+time.Second)),
			"complete queue":  q.Complete(ctx, store.Lease{Job: job("a", ""), Queue: "Q"}, nil),
			"results id":      queueResultsErr(q.Results(ctx, "q-bad", []string{""})),
			"stats queue":     queueStatsErr(q.Stats(ctx, "")),
			"delete id":       q.Delete(ctx, "q-bad", []string{"a b"}),
		}
		for name, err := range bad {
			if fault.CodeOf(err) != "job_invalid" || fault.KindOf(err) != fault.Invalid {
				t.Errorf("%s: %v, want job_invalid", name, err)
			}
		}
		queueWantStats(t, q, "q-bad", store.QueueStats{})
		if l, err := q.Claim(ctx, "q-bad", "w", 10, time.Minute); err != nil || len(l) != 0 {
			t.Errorf("bad input queued %v (%v)", ids(l), err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		err := q.Complete(ctx, store.Lease{Job: job("ghost", ""), Queue: "q-nf", Worker: "w", Attempt: 1}, nil)
		if fault.CodeOf(err) != "job_not_found" || fault.KindOf(err) != fault.NotFound {
			t.Fatalf("complete an unknown job: %v, want job_not_found", err)
		}
	})

	t.Run("ErrLeaseLost", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-lost", job("j", "p"), job("k", "p")))
		// Two seconds: long enough that no stall of a loaded machine
		// between this claim and the next runs it out.
		a, err := q.Claim(ctx, "q-lost", "a", 2, 2*time.Second)
		queueMust(t, err)
		if len(a) != 2 {
			t.Fatalf("claimed %v", ids(a))
		}
		// While the lease holds, nobody else gets the jobs.
		if l, err := q.Claim(ctx, "q-lost", "b", 2, time.Minute); err != nil || len(l) != 0 {
			t.Fatalf("claimed %v (%v) under a holding lease", ids(l), err)
		}
		// Once it runs out, b takes them.
		var b []store.Lease
		deadline := time.Now().Add(30 * time.Second)
		for len(b) < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // polls the claim
			l, err := q.Claim(ctx, "q-lost", "b", 2, time.Minute)
			queueMust(t, err)
			b = append(b, l...)
		}
		if len(b) != 2 {
			t.Fatalf("the jobs of an expired lease were not claimed again: %v", ids(b))
		}
		for _, l := range b {
			if l.Attempt != 2 || l.Worker != "b" {
				t.Errorf("retaken lease %+v, want attempt 2 by b", l)
			}
		}
		// a finishes late: refused, and b's result is the one kept.
		err = q.Complete(ctx, a[0], []byte("from a"))
		if !errors.Is(err, store.ErrLeaseLost) || fault.CodeOf(err) != "lease_lost" || fault.KindOf(err) != fault.Conflict {
			t.Fatalf("complete by a lost lease: %v, want lease_lost", err)
		}
		queueMust(t, q.Complete(ctx, b[0], []byte("from b")))
		if err := q.Complete(ctx, b[0], []byte("again")); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("complete twice: %v, want lease_lost", err)
		}
		if err := q.Complete(ctx, a[0], []byte("from a")); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("complete a done job by a lost lease: %v, want lease_lost", err)
		}
		res, err := q.Results(ctx, "q-lost", []string{b[0].ID})
		queueMust(t, err)
		if len(res) != 1 || string(res[0].Data) != "from b" || res[0].Worker != "b" || res[0].Attempt != 2 {
			t.Fatalf("result %+v, want b's of attempt 2", res)
		}
	})

	t.Run("OK_LateButNotRetaken", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-late", job("j", "p")))
		l, err := q.Claim(ctx, "q-late", "a", 1, 50*time.Millisecond)
		queueMust(t, err)
		// The lease runs out on the store's clock (PostgreSQL's own, for
		// its queue): time passing is what the test needs.
		time.Sleep(100 * time.Millisecond)
		// The lease ran out but nobody claimed the job: a may still
		// complete it, once.
		queueMust(t, q.Complete(ctx, l[0], []byte("r")))
		if again, err := q.Claim(ctx, "q-late", "b", 1, time.Minute); err != nil || len(again) != 0 {
			t.Errorf("a completed job was claimed: %v %v", ids(again), err)
		}
	})

	t.Run("OK_Delete", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-del", job("done", "1"), job("held", "2"), job("waiting", "3"), job("kept", "4")))
		ls, err := q.Claim(ctx, "q-del", "w", 2, time.Minute)
		queueMust(t, err)
		if fmt.Sprint(ids(ls)) != "[done held]" {
			t.Fatalf("claimed %v", ids(ls))
		}
		queueMust(t, q.Complete(ctx, ls[0], []byte("r")))
		queueMust(t, q.Delete(ctx, "q-del", []string{"done", "held", "waiting", "never"}))
		queueWantStats(t, q, "q-del", store.QueueStats{Waiting: 1})
		if res, err := q.Results(ctx, "q-del", []string{"done"}); err != nil || len(res) != 0 {
			t.Errorf("a deleted job's result is still there: %+v %v", res, err)
		}
		if err := q.Complete(ctx, ls[1], nil); fault.CodeOf(err) != "job_not_found" {
			t.Errorf("complete a deleted job: %v, want job_not_found", err)
		}
		rest, err := q.Claim(ctx, "q-del", "w", 10, time.Minute)
		queueMust(t, err)
		if fmt.Sprint(ids(rest)) != "[kept]" {
			t.Errorf("after the delete, claimed %v, want [kept]", ids(rest))
		}
		// A deleted id may be queued again, afresh.
		queueMust(t, q.Enqueue(ctx, "q-del", job("done", "other")))
		again, err := q.Claim(ctx, "q-del", "w", 10, time.Minute)
		queueMust(t, err)
		if len(again) != 1 || string(again[0].Payload) != "other" || again[0].Attempt != 1 {
			t.Errorf("a deleted id queued again: %+v", again)
		}
	})

	t.Run("ErrLeaseLost_Reenqueued", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// A claims x; x is deleted and enqueued again; B claims the new
		// x, at the same attempt number as A's. A's result, for the old
		// payload, must not be recorded against the new job.
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-reenq", job("x", "old")))
		a, err := q.Claim(ctx, "q-reenq", "a", 1, time.Minute)
		queueMust(t, err)
		queueMust(t, q.Delete(ctx, "q-reenq", []string{"x"}))
		queueMust(t, q.Enqueue(ctx, "q-reenq", job("x", "new")))
		b, err := q.Claim(ctx, "q-reenq", "b", 1, time.Minute)
		queueMust(t, err)
		if len(a) != 1 || len(b) != 1 || a[0].Attempt != b[0].Attempt || a[0].Token == b[0].Token {
			t.Fatalf("claims %+v and %+v: want one each, same attempt, different tokens", a, b)
		}
		if err := q.Complete(ctx, a[0], []byte("from a")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("complete by the old incarnation's lease: %v, want lease_lost", err)
		}
		if err := q.Release(ctx, a[0]); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("release by the old incarnation's lease: %v, want lease_lost", err)
		}
		if _, err := q.Renew(ctx, a[0], time.Minute); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("renew by the old incarnation's lease: %v, want lease_lost", err)
		}
		queueMust(t, q.Complete(ctx, b[0], []byte("from b")))
		res, err := q.Results(ctx, "q-reenq", []string{"x"})
		queueMust(t, err)
		if len(res) != 1 || string(res[0].Data) != "from b" || res[0].Worker != "b" {
			t.Fatalf("result %+v, want b's", res)
		}
	})

	t.Run("OK_Release", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-rel", job("j", "p")))
		a, err := q.Claim(ctx, "q-rel", "a", 1, time.Hour)
		queueMust(t, err)
		queueMust(t, q.Release(ctx, a[0]))
		queueWantStats(t, q, "q-rel", store.QueueStats{Waiting: 1})
		// Waiting again at once, and the released claim is not counted.
		b, err := q.Claim(ctx, "q-rel", "b", 1, time.Hour)
		queueMust(t, err)
		if len(b) != 1 || b[0].Attempt != 1 || b[0].Token == a[0].Token {
			t.Fatalf("claim after a release: %+v, want attempt 1 with a new token", b)
		}
		for name, err := range map[string]error{
			"complete": q.Complete(ctx, a[0], []byte("from a")),
			"release":  q.Release(ctx, a[0]),
			"renew":    queueRenewErr(q.Renew(ctx, a[0], time.Minute)),
		} {
			if !errors.Is(err, store.ErrLeaseLost) || fault.CodeOf(err) != "lease_lost" {
				t.Errorf("%s by a released lease: %v, want lease_lost", name, err)
			}
		}
		queueMust(t, q.Complete(ctx, b[0], []byte("from b")))
		if err := q.Release(ctx, b[0]); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("release of a done job: %v, want lease_lost", err)
		}
		queueMust(t, q.Delete(ctx, "q-rel", []string{"j"}))
		if err := q.Release(ctx, b[0]); fault.CodeOf(err) != "job_not_found" {
			t.Errorf("release of a deleted job: %v, want job_not_found", err)
		}
		if err := q.Release(ctx, store.Lease{Job: job("j", ""), Queue: "Q"}); fault.CodeOf(err) != "job_invalid" {
			t.Errorf("release in a bad queue: %v, want job_invalid", err)
		}
	})

	t.Run("OK_Renew", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-renew", job("j", "p")))
		a, err := q.Claim(ctx, "q-renew", "a", 1, 300*time.Millisecond)
		queueMust(t, err)
		// Renewed past its first expiry, the lease keeps the job.
		for range 4 {
			time.Sleep(150 * time.Millisecond)
			exp, err := q.Renew(ctx, a[0], 300*time.Millisecond)
			queueMust(t, err)
			if !exp.After(a[0].Expires) {
				t.Errorf("renewed to %s, not after the claim's %s", exp, a[0].Expires)
			}
			if l, err := q.Claim(ctx, "q-renew", "b", 1, time.Minute); err != nil || len(l) != 0 {
				t.Fatalf("claimed %v (%v) under a renewed lease", ids(l), err)
			}
		}
		if _, err := q.Renew(ctx, a[0], 0); fault.CodeOf(err) != "job_invalid" {
			t.Errorf("renew for 0: %v, want job_invalid", err)
		}
		queueMust(t, q.Complete(ctx, a[0], []byte("r")))
		if _, err := q.Renew(ctx, a[0], time.Minute); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("renew of a done job: %v, want lease_lost", err)
		}
	})

	t.Run("OK_Purge", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-purge", job("done", "1"), job("held", "2"), job("waiting", "3")))
		ls, err := q.Claim(ctx, "q-purge", "w", 2, time.Minute)
		queueMust(t, err)
		queueMust(t, q.Complete(ctx, ls[0], []byte("r")))
		if n, err := q.Purge(ctx, "q-purge", time.Hour); err != nil || n != 0 {
			t.Fatalf("purge of nothing old: %d %v", n, err)
		}
		time.Sleep(300 * time.Millisecond)
		queueMust(t, q.Enqueue(ctx, "q-purge", job("young", "4")))
		n, err := q.Purge(ctx, "q-purge", 200*time.Millisecond)
		queueMust(t, err)
		if n != 3 {
			t.Errorf("purged %d, want the 3 old jobs", n)
		}
		queueWantStats(t, q, "q-purge", store.QueueStats{Waiting: 1})
		if err := q.Complete(ctx, ls[1], nil); fault.CodeOf(err) != "job_not_found" {
			t.Errorf("complete a purged job: %v, want job_not_found", err)
		}
		if _, err := q.Purge(ctx, "q-purge", 0); fault.CodeOf(err) != "job_invalid" {
			t.Errorf("purge of age 0: %v, want job_invalid", err)
		}
	})

	t.Run("OK_Isolated", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueMust(t, q.Enqueue(ctx, "q-iso", job("j", "1")))
		queueMust(t, q.Enqueue(ctx, "q-iso2", job("j", "2")))
		l, err := q.Claim(ctx, "q-iso", "w", 10, time.Minute)
		queueMust(t, err)
		if len(l) != 1 || string(l[0].Payload) != "1" {
			t.Fatalf("claim from q-iso took %v", ids(l))
		}
		queueMust(t, q.Complete(ctx, l[0], []byte("r1")))
		queueWantStats(t, q, "q-iso2", store.QueueStats{Waiting: 1})
		if res, err := q.Results(ctx, "q-iso2", []string{"j"}); err != nil || len(res) != 0 {
			t.Errorf("q-iso2's j has a result: %+v %v", res, err)
		}
	})

	// Hammer: workers claim and complete concurrently; every job is done
	// exactly once, by the worker that held it.
	t.Run("OK_Hammer", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		q := open(t)
		queueHammer(t, "q-hammer", q, []store.Queue{q})
	})
}

// RunQueueNodes checks that queues which share one store, as the nodes of
// a cluster do, share their jobs: jobs enqueued on the first are claimed by
// workers on all of them, never by two at once, and each is done once.
func RunQueueNodes(t *testing.T, nodes ...store.Queue) {
	byNode := queueHammer(t, "q-nodes", nodes[0], nodes)
	for i, n := range byNode {
		if n == 0 {
			t.Errorf("node %d completed no job of %d", i, 300)
		}
	}
}

// queueHammer enqueues 300 jobs on q, half before and half while eight
// workers spread over nodes claim and complete them, and checks that each
// was claimed once and done once with its holder's result. It returns how
// many jobs each node's workers completed.
func queueHammer(t *testing.T, queue string, q store.Queue, nodes []store.Queue) []int {
	ctx := context.Background()
	const n = 300
	var jobs []store.Job
	for i := range n {
		jobs = append(jobs, store.Job{ID: fmt.Sprintf("h%03d", i), Payload: []byte(fmt.Sprint(i))})
	}
	queueMust(t, q.Enqueue(ctx, queue, jobs[:n/2]...))
	var (
		mu      sync.Mutex
		holders = map[string]string{}
		byNode  = make([]int, len(nodes))
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		node := w % len(nodes)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("n%d-w%d", node, w)
			for idle := 0; idle < 20; {
				ls, err := nodes[node].Claim(ctx, queue, name, 1+w%5, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ls) == 0 {
					idle++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				idle = 0
				for _, l := range ls {
					mu.Lock()
					if prev, ok := holders[l.ID]; ok {
						t.Errorf("job %s claimed by %s and %s", l.ID, prev, name)
					}
					holders[l.ID] = name
					mu.Unlock()
					if err := nodes[node].Complete(ctx, l, []byte(name+":"+string(l.Payload))); err != nil {
						t.Errorf("complete %s: %v", l.ID, err)
						continue
					}
					mu.Lock()
					byNode[node]++
					mu.Unlock()
				}
			}
		}()
	}
	queueMust(t, q.Enqueue(ctx, queue, jobs[n/2:]...)) // while they work
	wg.Wait()
	all := make([]string, n)
	for i, j := range jobs {
		all[i] = j.ID
	}
	res, err := q.Results(ctx, queue, all)
	queueMust(t, err)
	if len(res) != n {
		t.Fatalf("%d results for %d jobs", len(res), n)
	}
	for i, r := range res {
		if want := holders[r.ID] + ":" + fmt.Sprint(i); string(r.Data) != want || r.Worker != holders[r.ID] {
			t.Errorf("result of %s: %q by %s, want %q", r.ID, r.Data, r.Worker, want)
		}
	}
	queueWantStats(t, q, queue, store.QueueStats{Done: n})
	return byNode
}

func queueMust(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func queueWantStats(tb testing.TB, q store.Queue, queue string, want store.QueueStats) {
	tb.Helper()
	got, err := q.Stats(context.Background(), queue)
	if err != nil {
		tb.Fatal(err)
	}
	if got != want {
		tb.Errorf("stats of %s: %+v, want %+v", queue, got, want)
	}
}

func queueClaimErr(_ []store.Lease, err error) error    { return err }
func queueResultsErr(_ []store.Result, err error) error { return err }
func queueRenewErr(_ time.Time, err error) error        { return err }
func queueStatsErr(_ store.QueueStats, err error) error { return err }
