package replays

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// QueueName is the store.Queue queue that replays spread over nodes go
// through: Submit enqueues them, every node's Worker claims them.
const QueueName = "replays"

// MaxBatchID is the longest batch id Submit takes.
const MaxBatchID = 64

// Task is one replay queued for any node: a checker, by reference, and the
// input it runs against. It is the payload of a queue job.
type Task struct {
	Checker  checkers.Ref `json:"checker"`
	Artifact []byte       `json:"artifact"`
	Evidence []byte       `json:"evidence,omitempty"`
	Criteria []byte       `json:"criteria,omitempty"`
	// NoMemo runs the checker even when its outcome is memoised, and
	// memoises nothing (checkers.Job.NoMemo).
	NoMemo bool `json:"no_memo,omitempty"`
}

// The codes of a TaskResult's Error.
const (
	CodeCheckerNotFound = "checker_not_found" // no node's store has the checker
	CodeInvalidChecker  = "invalid_checker"   // the reference is malformed
	CodeInvalidTask     = "invalid_task"      // the job's payload is not a Task
	CodeAbandoned       = "replay_abandoned"  // claimed past MaxAttempts, never finished
)

// input returns the sandbox input t describes.
func (t Task) input() wasm.Input {
	return wasm.Input{Artifact: t.Artifact, Evidence: t.Evidence, Criteria: t.Criteria}
}

// TaskResult is what the worker that ran a Task recorded for it.
type TaskResult struct {
	// Outcome is the run's outcome, when the checker ran.
	Outcome wasm.Outcome `json:"outcome"`
	// Memo is true when the outcome was answered from the memo.
	Memo bool `json:"memo,omitempty"`
	// Error says why the checker could not run at all (an unknown
	// checker, a malformed task, a job no worker could finish), and Code
	// which of those it is (CodeCheckerNotFound...); Outcome is then
	// empty.
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	// Worker names the worker that recorded the result, and Attempt which
	// claim of the job it was (more than 1: a worker before it died or
	// lost its lease).
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
}

// TaskIDs returns the job ids of a batch of n tasks: "<batch>/<index>",
// the index zero-padded so that the jobs are claimed in order.
func TaskIDs(batch string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s/%06d", batch, i)
	}
	return ids
}

// Submit queues tasks as the jobs of one batch, for any node's Worker to
// run, and returns their job ids in the order of tasks. Submitting the same
// batch again queues nothing twice.
//
// # Errors
//
// A fault.Invalid error "replay_invalid" for a batch id that is empty,
// longer than MaxBatchID or not a valid job id, or a task whose checker
// reference is malformed; the queue's own errors otherwise. Nothing is
// queued then.
func Submit(ctx context.Context, q store.Queue, batch string, tasks []Task) ([]string, error) {
	if batch == "" || len(batch) > MaxBatchID || store.CheckJobID(batch) != nil {
		return nil, fault.New(fault.Invalid, ECodeReplayInvalid, "batch id must be 1 to %d printable ASCII characters other than space", MaxBatchID)
	}
	ids := TaskIDs(batch, len(tasks))
	jobs := make([]store.Job, len(tasks))
	for i, t := range tasks {
		if err := t.Checker.Validate(); err != nil {
			return nil, fault.Wrap(fault.Invalid, "replay_invalid", err)
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("replays: encode task %d: %w", i, err)
		}
		jobs[i] = store.Job{ID: ids[i], Payload: b}
	}
	// One enqueue per chunk keeps each transaction bounded; a retry of the
	// whole batch finds the chunks already queued and adds nothing.
	const chunk = 500
	for lo := 0; lo < len(jobs); lo += chunk {
		if err := q.Enqueue(ctx, QueueName, jobs[lo:min(lo+chunk, len(jobs))]...); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// Wait polls the queue every poll until every job of ids has a result,
// then returns the results in the order of ids. progress, when not nil, is
// called with the number done whenever it grows.
//
// # Errors
//
// ctx's error when it ends first; a result that does not decode.
func Wait(ctx context.Context, q store.Queue, ids []string, poll time.Duration, progress func(done, total int)) ([]TaskResult, error) {
	out := make([]TaskResult, len(ids))
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	pending := append([]string(nil), ids...)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		got, err := q.Results(ctx, QueueName, pending)
		if err != nil {
			return nil, err
		}
		if len(got) > 0 {
			for _, r := range got {
				var tr TaskResult
				if err := json.Unmarshal(r.Data, &tr); err != nil {
					return nil, fmt.Errorf("replays: result of %s: %w", r.ID, err)
				}
				tr.Worker, tr.Attempt = r.Worker, r.Attempt
				out[index[r.ID]] = tr
				delete(index, r.ID)
			}
			pending = pending[:0]
			for _, id := range ids {
				if _, ok := index[id]; ok {
					pending = append(pending, id)
				}
			}
			if progress != nil {
				progress(len(ids)-len(pending), len(ids))
			}
		}
		timer.Reset(poll)
	}
	return out, nil
}

// RunQueued runs tasks on every node's workers through q: it submits them
// as one batch, waits for all of them, deletes the jobs and returns the
// results in the order of tasks.
//
// # Errors
//
// Submit's and Wait's. The batch's jobs are deleted on every error (but a
// job_conflict, whose jobs are another batch's), so a retry runs them
// afresh; jobs a submitter that died never deleted are deleted by the
// workers once they are older than the workers' JobTTL (DefaultJobTTL),
// so a wait must end within it.
func RunQueued(ctx context.Context, q store.Queue, batch string, tasks []Task, poll time.Duration, progress func(done, total int)) (res []TaskResult, err error) {
	defer func() {
		if err != nil && fault.CodeOf(err) != "job_conflict" {
			// Nobody will collect these results: take the jobs off, even
			// when ctx has ended.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = q.Delete(dctx, QueueName, TaskIDs(batch, len(tasks)))
		}
	}()
	ids, err := Submit(ctx, q, batch, tasks)
	if err != nil {
		return nil, err
	}
	res, err = Wait(ctx, q, ids, poll, progress)
	if err != nil {
		return nil, err
	}
	if err := q.Delete(ctx, QueueName, ids); err != nil {
		return nil, err
	}
	return res, nil
}

// ReplayQueued answers req as Replay does, but spreads its artifacts over
// every node sharing q: they are queued as the jobs of batch, any node's
// Worker runs them, and the outcomes come back in the order of the
// artifacts. batch names this request's jobs; they are deleted when it
// returns, whatever it returns.
//
// # Errors
//
// Replay's, with checker_not_found when the workers found no such checker
// in the store, replay_abandoned (fault.Unavailable) when workers died or
// lost their leases on a job more than DefaultMaxAttempts times, and
// batch_timeout when the jobs were not all done within
// QueuedTimeout: they are then taken off the queue.
func (s *Service) ReplayQueued(ctx context.Context, q store.Queue, batch string, req Request) (Response, error) {
	inputs, err := s.inputs(req)
	if err != nil {
		return Response{}, err
	}
	tasks := make([]Task, len(inputs))
	for i, in := range inputs {
		tasks[i] = Task{Checker: req.Checker, Artifact: in.Artifact, Evidence: in.Evidence, Criteria: in.Criteria, NoMemo: req.NoMemo}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, QueuedTimeout)
	defer cancel()
	results, err := RunQueued(ctx, q, batch, tasks, queuedPoll, nil)
	if err != nil {
		switch {
		case parent.Err() != nil:
			return Response{}, parent.Err()
		case ctx.Err() != nil:
			return Response{}, fault.New(fault.Unavailable, ECodeBatchTimeout, "the batch of %d was not done by the nodes' workers within %s; send fewer artifacts, or give the checker less fuel", len(inputs), QueuedTimeout)
		}
		return Response{}, err
	}
	resp := Response{Count: len(results), Outcomes: make([]wasm.Outcome, len(results))}
	for i, r := range results {
		switch r.Code {
		case "":
		case CodeCheckerNotFound:
			return Response{}, fault.New(fault.NotFound, ECodeCheckerNotFound, "no checker with sha256 %s; upload it with POST /checkers first", req.Checker.SHA256)
		case CodeAbandoned:
			return Response{}, fault.New(fault.Unavailable, CodeAbandoned, "artifact %d: %s", i, r.Error)
		default:
			return Response{}, fmt.Errorf("replays: artifact %d: %s: %s", i, r.Code, r.Error)
		}
		resp.Outcomes[i] = r.Outcome
		if r.Memo {
			resp.MemoHits++
		}
	}
	return resp, nil
}

// QueuedTimeout bounds a batch that ReplayQueued spreads over the nodes,
// within the server's write timeout of a minute. A job of a node that dies
// is retaken after its lease (DefaultLease, 10 s) and rerun within it; a
// node that stops gracefully releases its jobs at once.
const QueuedTimeout = 45 * time.Second

// queuedPoll is how often ReplayQueued asks the queue for its results.
const queuedPoll = 20 * time.Millisecond
