package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/assayhq/assay/runtime/fault"
)

// ErrLeaseLost is returned, wrapped in a fault.Error of code "lease_lost",
// by Queue.Complete, Release and Renew when the lease it names no longer
// holds the job: the lease ran out and another worker claimed the job, the
// lease was released, or the job was completed already. Its result is not
// recorded.
var ErrLeaseLost = errors.New("store: job lease lost")

// ErrJobExists is returned, wrapped in a fault.Error of code
// "job_conflict", by Queue.Enqueue for a job id that is queued already
// with another payload.
var ErrJobExists = errors.New("store: job id queued with another payload")

// Limits on what a queue holds.
const (
	// MaxQueueName is the longest queue name.
	MaxQueueName = 64
	// MaxJobID is the longest job id.
	MaxJobID = 200
	// MaxJobPayload is the largest payload, and the largest result.
	MaxJobPayload = 16 << 20
	// MaxClaim is the most jobs one Claim takes.
	MaxClaim = 1000
	// MaxLease is the longest lease a Claim or Renew may ask for.
	MaxLease = 24 * time.Hour
)

// Job is one unit of work: an id unique in its queue and an opaque payload
// for whichever worker claims it.
type Job struct {
	ID      string
	Payload []byte
}

// Lease is a job claimed by a worker, which holds it until Expires. Past
// that, another worker may claim it again.
type Lease struct {
	Job
	Queue  string
	Worker string
	// Attempt counts the claims of the job that were not released, this
	// one included: more than 1 means an earlier worker's lease ran out
	// (it died, or stalled) before it completed.
	Attempt int
	// Token is the lease's fencing token: unique to this claim among every
	// claim of every job ever enqueued under the job's id, in its queue
	// (an id deleted and enqueued again gets new tokens, never an old
	// one's). Complete, Release and Renew take the job only from the claim
	// whose token holds it.
	Token int64
	// Expires is when the lease ends, on the queue's clock (for a shared
	// database, the database's clock, so that nodes whose clocks disagree
	// still agree on it).
	Expires time.Time
}

// Result is what a completed job recorded, once.
type Result struct {
	ID      string
	Worker  string // the worker whose lease completed it
	Attempt int    // the claim that completed it
	Data    []byte
	Done    time.Time // on the queue's clock
}

// QueueStats counts a queue's jobs.
type QueueStats struct {
	Waiting int // never claimed, or their lease ran out
	Leased  int // claimed, lease not yet out
	Done    int
}

// Queue is a durable job queue shared by every node that opens the same
// store: jobs enqueued on one node are claimed by workers on any, and each
// job's result is recorded exactly once.
//
// Jobs are claimed roughly in the order they were enqueued. A worker that
// dies holding a lease leaves its jobs to be claimed again once the lease
// runs out; a worker that finishes after that is refused, so that a job's
// result is the first one recorded under a lease that still held it.
type Queue interface {
	// Enqueue adds jobs to the named queue, all or none.
	//
	// # Notes
	//
	//   - Enqueuing a job id that is in the queue already with the same
	//     payload does nothing (whatever the job's state), so that a
	//     submitter may retry a batch safely.
	//
	// # Errors
	//
	//   - A fault.Invalid error "job_invalid" for a bad queue name or job
	//     (CheckQueue, CheckJob), or two jobs with one id in jobs.
	//   - A fault.Conflict error "job_conflict" wrapping ErrJobExists for an
	//     id queued already with another payload.
	Enqueue(ctx context.Context, queue string, jobs ...Job) error
	// Claim leases up to max jobs of the queue that are waiting (never
	// claimed, or whose lease ran out, and not done) to worker for lease.
	// It returns no jobs, and no error, when none is waiting.
	//
	// # Notes
	//
	//   - Concurrent Claims, from any node, never return the same job
	//     while its lease holds.
	//
	// # Errors
	//
	// A fault.Invalid error "job_invalid" for a bad queue name, an empty
	// worker, max outside 1..MaxClaim or lease outside (0, MaxLease].
	Claim(ctx context.Context, queue, worker string, max int, lease time.Duration) ([]Lease, error)
	// Complete records result as the job's result and marks it done, if l
	// still holds the job. A lease that ran out still holds the job until
	// another claim takes it.
	//
	// # Errors
	//
	//   - A fault.Conflict error "lease_lost" wrapping ErrLeaseLost when
	//     another claim holds the job or the job is done; nothing is
	//     recorded.
	//   - A fault.NotFound error "job_not_found" for a job not in the queue.
	//   - A fault.Invalid error "job_invalid" for a result over
	//     MaxJobPayload.
	Complete(ctx context.Context, l Lease, result []byte) error
	// Release gives the job back, if l still holds it: it is waiting again
	// at once, for any worker to claim, and the claim l was does not count
	// in Attempt. A worker that stops, or will not run a job it claimed,
	// releases it rather than leave it to its lease.
	//
	// # Errors
	//
	// As Complete's: "lease_lost" when l no longer holds the job,
	// "job_not_found" for a job not in the queue.
	Release(ctx context.Context, l Lease) error
	// Renew extends l to lease from now, if l still holds the job, and
	// returns the new expiry: a worker renews the leases of jobs it is
	// running, so that a lease can be short (a dead worker's jobs are
	// retaken soon) and still outlast a long job.
	//
	// # Errors
	//
	// As Complete's, and "job_invalid" for lease outside (0, MaxLease].
	Renew(ctx context.Context, l Lease, lease time.Duration) (time.Time, error)
	// Results returns the results of the jobs among ids that are done, in
	// the order of ids; jobs not done, or unknown, are left out.
	//
	// # Errors
	//
	// A fault.Invalid error "job_invalid" for a bad queue name or id.
	Results(ctx context.Context, queue string, ids []string) ([]Result, error)
	// Delete removes the jobs among ids from the queue, whatever their
	// state, with their results: a submitter that has read its results
	// deletes them. Unknown ids are skipped. A worker still holding a
	// lease on a deleted job gets "job_not_found" from Complete.
	//
	// # Errors
	//
	// A fault.Invalid error "job_invalid" for a bad queue name or id.
	Delete(ctx context.Context, queue string, ids []string) error
	// Purge deletes the jobs of the queue enqueued more than age ago,
	// whatever their state, with their results, and returns how many it
	// deleted: jobs that outlived any submitter that could want them.
	//
	// # Errors
	//
	// A fault.Invalid error "job_invalid" for a bad queue name or age not
	// positive.
	Purge(ctx context.Context, queue string, age time.Duration) (int, error)
	// Stats counts the queue's jobs by state.
	Stats(ctx context.Context, queue string) (QueueStats, error)
}

// CheckQueue reports whether name is a valid queue name: 1 to MaxQueueName
// characters of [a-z0-9._-].
func CheckQueue(name string) error {
	if name == "" || len(name) > MaxQueueName {
		return jobInvalid("queue name must have 1 to %d characters", MaxQueueName)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return jobInvalid("queue name %q may hold only a-z, 0-9, '.', '_' and '-'", name)
		}
	}
	return nil
}

// CheckJobID reports whether id is a valid job id: 1 to MaxJobID printable
// ASCII characters other than space.
func CheckJobID(id string) error {
	if id == "" || len(id) > MaxJobID {
		return jobInvalid("job id must have 1 to %d characters", MaxJobID)
	}
	for _, c := range id {
		if c <= ' ' || c > '~' {
			return jobInvalid("job id %q may hold only printable ASCII characters other than space", id)
		}
	}
	return nil
}

// CheckJob reports whether j is a valid job: a valid id and a payload of
// at most MaxJobPayload bytes.
func CheckJob(j Job) error {
	if err := CheckJobID(j.ID); err != nil {
		return err
	}
	if len(j.Payload) > MaxJobPayload {
		return jobInvalid("job %s: payload of %d bytes is over %d", j.ID, len(j.Payload), MaxJobPayload)
	}
	return nil
}

// CheckEnqueue checks the arguments of Queue.Enqueue.
func CheckEnqueue(queue string, jobs []Job) error {
	if err := CheckQueue(queue); err != nil {
		return err
	}
	seen := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		if err := CheckJob(j); err != nil {
			return err
		}
		if seen[j.ID] {
			return jobInvalid("job id %s appears twice", j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}

// CheckClaim checks the arguments of Queue.Claim.
func CheckClaim(queue, worker string, max int, lease time.Duration) error {
	if err := CheckQueue(queue); err != nil {
		return err
	}
	if worker == "" || len(worker) > MaxJobID {
		return jobInvalid("worker name must have 1 to %d characters", MaxJobID)
	}
	if max < 1 || max > MaxClaim {
		return jobInvalid("claim takes 1 to %d jobs, not %d", MaxClaim, max)
	}
	if lease <= 0 || lease > MaxLease {
		return jobInvalid("lease must be positive and at most %s, not %s", MaxLease, lease)
	}
	return nil
}

// CheckComplete checks the arguments of Queue.Complete.
func CheckComplete(l Lease, result []byte) error {
	if err := CheckQueue(l.Queue); err != nil {
		return err
	}
	if err := CheckJobID(l.ID); err != nil {
		return err
	}
	if len(result) > MaxJobPayload {
		return jobInvalid("job %s: result of %d bytes is over %d", l.ID, len(result), MaxJobPayload)
	}
	return nil
}

// CheckLease checks the lease of Queue.Release and Queue.Renew; lease is
// Renew's (any positive value for Release).
func CheckLease(l Lease, lease time.Duration) error {
	if err := CheckQueue(l.Queue); err != nil {
		return err
	}
	if err := CheckJobID(l.ID); err != nil {
		return err
	}
	if lease <= 0 || lease > MaxLease {
		return jobInvalid("lease must be positive and at most %s, not %s", MaxLease, lease)
	}
	return nil
}

// CheckPurge checks the arguments of Queue.Purge.
func CheckPurge(queue string, age time.Duration) error {
	if err := CheckQueue(queue); err != nil {
		return err
	}
	if age <= 0 {
		return jobInvalid("purge age must be positive, not %s", age)
	}
	return nil
}

// CheckIDs checks the arguments of Queue.Results and Queue.Delete.
func CheckIDs(queue string, ids []string) error {
	if err := CheckQueue(queue); err != nil {
		return err
	}
	for _, id := range ids {
		if err := CheckJobID(id); err != nil {
			return err
		}
	}
	return nil
}

// LeaseLost returns the error Complete, Release and Renew give when l no
// longer holds its job.
func LeaseLost(l Lease) error {
	return &fault.Error{Kind: fault.Conflict, Code: "lease_lost",
		Message: fmt.Sprintf("job %s of queue %s is no longer held by claim %d (worker %s, attempt %d)", l.ID, l.Queue, l.Token, l.Worker, l.Attempt),
		Err:     ErrLeaseLost}
}

// JobExists returns the error Enqueue gives for an id queued already with
// another payload.
func JobExists(queue, id string) error {
	return &fault.Error{Kind: fault.Conflict, Code: "job_conflict",
		Message: fmt.Sprintf("job %s is in queue %s already with another payload", id, queue),
		Err:     ErrJobExists}
}

// JobNotFound returns the error Complete gives for a job not in the queue.
func JobNotFound(queue, id string) error {
	return fault.New(fault.NotFound, "job_not_found", "no job %s in queue %s", id, queue)
}

func jobInvalid(format string, args ...any) error {
	return fault.New(fault.Invalid, "job_invalid", format, args...)
}
