package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/assayhq/assay/runtime/store"
)

// Queue is a store.Queue on badger, for one process: every operation is one
// transaction of the DB, so a job and its result are as durable as any
// other write. Claims by concurrent workers conflict on the job they both
// read, and badger's retry gives the job to one of them.
//
// A lease's fencing token comes from the same counter as the enqueue
// order: increasing within the process, and seeded from the clock (unix
// nanoseconds), so that it keeps increasing across restarts unless the
// clock goes back by more than the process's life.
//
// Keys (see doc.go):
//
//	queue/job/<queue>/<id>                 the job, its lease and its result
//	queue/wait/<queue>/<order:020d>/<id>   index: jobs not done, in enqueue order
type Queue struct {
	db  *DB
	now func() time.Time

	mu    sync.Mutex
	order int64 // the last order given to an enqueued job
}

// Interface guard.
var _ store.Queue = (*Queue)(nil)

// QueueConfig configures NewQueue.
type QueueConfig struct {
	// Now is the queue's clock, for leases; nil is time.Now.
	Now func() time.Time
}

// NewQueue returns the job queue kept in db.
func NewQueue(db *DB, cfg QueueConfig) *Queue {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Queue{db: db, now: cfg.Now}
}

// jobRecord is the value of queue/job/<queue>/<id>.
type jobRecord struct {
	Payload  []byte `json:"payload"`
	Order    int64  `json:"order"`
	Worker   string `json:"worker,omitempty"`
	Attempt  int    `json:"attempt"`
	Token    int64  `json:"token,omitempty"`    // the holding claim's; 0: none
	Enqueued int64  `json:"enqueued,omitempty"` // unix ns; 0: Order is
	Expires  int64  `json:"expires,omitempty"`  // unix ns; 0: waiting
	Done     int64  `json:"done,omitempty"`     // unix ns; 0: not done
	Result   []byte `json:"result,omitempty"`
	ResultBy string `json:"result_by,omitempty"`
}

func jobKey(queue, id string) string { return "queue/job/" + queue + "/" + id }

func waitKey(queue string, order int64, id string) string {
	return fmt.Sprintf("queue/wait/%s/%020d/%s", queue, order, id)
}

// nextOrder returns an order after every earlier one, close to the clock so
// that it stays increasing across restarts.
func (q *Queue) nextOrder() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.order = max(q.order+1, q.now().UnixNano())
	return q.order
}

// Enqueue implements store.Queue.
func (q *Queue) Enqueue(ctx context.Context, queue string, jobs ...store.Job) error {
	if err := store.CheckEnqueue(queue, jobs); err != nil {
		return err
	}
	orders := make([]int64, len(jobs))
	for i := range jobs {
		orders[i] = q.nextOrder()
	}
	return q.db.Update(ctx, func(tx store.Tx) error {
		for i, j := range jobs {
			var old jobRecord
			err := store.GetJSON(tx, jobKey(queue, j.ID), &old)
			switch {
			case err == nil:
				if string(old.Payload) != string(j.Payload) {
					return store.JobExists(queue, j.ID)
				}
				continue
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			rec := jobRecord{Payload: j.Payload, Order: orders[i], Enqueued: q.now().UnixNano()}
			if err := store.SetJSON(tx, jobKey(queue, j.ID), rec); err != nil {
				return err
			}
			if err := tx.Set(waitKey(queue, rec.Order, j.ID), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// Claim implements store.Queue.
func (q *Queue) Claim(ctx context.Context, queue, worker string, max int, lease time.Duration) ([]store.Lease, error) {
	if err := store.CheckClaim(queue, worker, max, lease); err != nil {
		return nil, err
	}
	var out []store.Lease
	err := q.db.Update(ctx, func(tx store.Tx) error {
		out = out[:0]
		now := q.now()
		prefix := "queue/wait/" + queue + "/"
		// Read only as far as the jobs claimed, so that this transaction
		// conflicts with as few others (completions, claims) as it can.
		type claimable struct {
			id  string
			rec jobRecord
		}
		var take []claimable
		err := tx.Scan(prefix, false, func(key string, _ []byte) error {
			// <order>/<id>: the id may itself hold slashes.
			_, id, ok := strings.Cut(key[len(prefix):], "/")
			if !ok {
				return fmt.Errorf("storage: malformed queue key %q", key)
			}
			var rec jobRecord
			if err := store.GetJSON(tx, jobKey(queue, id), &rec); err != nil {
				return err
			}
			if rec.Done != 0 || rec.Expires > now.UnixNano() {
				return nil // leased, lease still holding
			}
			take = append(take, claimable{id, rec})
			if len(take) == max {
				return store.ErrStop
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range take {
			rec := c.rec
			rec.Worker = worker
			rec.Attempt++
			rec.Token = q.nextOrder()
			expires := now.Add(lease)
			rec.Expires = expires.UnixNano()
			if err := store.SetJSON(tx, jobKey(queue, c.id), rec); err != nil {
				return err
			}
			out = append(out, store.Lease{
				Job:   store.Job{ID: c.id, Payload: rec.Payload},
				Queue: queue, Worker: worker, Attempt: rec.Attempt, Token: rec.Token, Expires: expires,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Complete implements store.Queue.
func (q *Queue) Complete(ctx context.Context, l store.Lease, result []byte) error {
	if err := store.CheckComplete(l, result); err != nil {
		return err
	}
	return q.db.Update(ctx, func(tx store.Tx) error {
		rec, err := q.held(tx, l)
		if err != nil {
			return err
		}
		rec.Done = q.now().UnixNano()
		rec.Result = result
		rec.ResultBy = l.Worker
		if err := store.SetJSON(tx, jobKey(l.Queue, l.ID), rec); err != nil {
			return err
		}
		return tx.Delete(waitKey(l.Queue, rec.Order, l.ID))
	})
}

// held reads l's job, if l still holds it.
func (q *Queue) held(tx store.Tx, l store.Lease) (jobRecord, error) {
	var rec jobRecord
	err := store.GetJSON(tx, jobKey(l.Queue, l.ID), &rec)
	if errors.Is(err, store.ErrNotFound) {
		return rec, store.JobNotFound(l.Queue, l.ID)
	} else if err != nil {
		return rec, err
	}
	if rec.Done != 0 || rec.Token == 0 || rec.Token != l.Token {
		return rec, store.LeaseLost(l)
	}
	return rec, nil
}

// Release implements store.Queue.
func (q *Queue) Release(ctx context.Context, l store.Lease) error {
	if err := store.CheckLease(l, time.Second); err != nil {
		return err
	}
	return q.db.Update(ctx, func(tx store.Tx) error {
		rec, err := q.held(tx, l)
		if err != nil {
			return err
		}
		rec.Worker, rec.Token, rec.Expires = "", 0, 0
		rec.Attempt = max(rec.Attempt-1, 0)
		return store.SetJSON(tx, jobKey(l.Queue, l.ID), rec)
	})
}

// Renew implements store.Queue.
func (q *Queue) Renew(ctx context.Context, l store.Lease, lease time.Duration) (time.Time, error) {
	if err := store.CheckLease(l, lease); err != nil {
		return time.Time{}, err
	}
	var expires time.Time
	err := q.db.Update(ctx, func(tx store.Tx) error {
		rec, err := q.held(tx, l)
		if err != nil {
			return err
		}
		expires = q.now().Add(lease)
		rec.Expires = expires.UnixNano()
		return store.SetJSON(tx, jobKey(l.Queue, l.ID), rec)
	})
	if err != nil {
		return time.Time{}, err
	}
	return expires, nil
}

// Purge implements store.Queue. It deletes in transactions of a few
// hundred jobs each.
func (q *Queue) Purge(ctx context.Context, queue string, age time.Duration) (int, error) {
	if err := store.CheckPurge(queue, age); err != nil {
		return 0, err
	}
	cutoff := q.now().Add(-age).UnixNano()
	old := func(rec jobRecord) bool { return cmp.Or(rec.Enqueued, rec.Order) < cutoff }
	var ids []string
	prefix := "queue/job/" + queue + "/"
	err := q.db.View(ctx, func(tx store.Tx) error {
		ids = ids[:0]
		return tx.Scan(prefix, false, func(key string, v []byte) error {
			var rec jobRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("storage: decode queued job: %w", err)
			}
			if old(rec) {
				ids = append(ids, key[len(prefix):])
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	const chunk = 500
	for lo := 0; lo < len(ids); lo += chunk {
		var gone int
		err := q.db.Update(ctx, func(tx store.Tx) error {
			gone = 0
			for _, id := range ids[lo:min(lo+chunk, len(ids))] {
				var rec jobRecord
				err := store.GetJSON(tx, jobKey(queue, id), &rec)
				if errors.Is(err, store.ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
				if !old(rec) {
					continue // deleted and enqueued again since
				}
				if err := tx.Delete(jobKey(queue, id)); err != nil {
					return err
				}
				if err := tx.Delete(waitKey(queue, rec.Order, id)); err != nil {
					return err
				}
				gone++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += gone
	}
	return n, nil
}

// Results implements store.Queue.
func (q *Queue) Results(ctx context.Context, queue string, ids []string) ([]store.Result, error) {
	if err := store.CheckIDs(queue, ids); err != nil {
		return nil, err
	}
	var out []store.Result
	err := q.db.View(ctx, func(tx store.Tx) error {
		for _, id := range ids {
			var rec jobRecord
			err := store.GetJSON(tx, jobKey(queue, id), &rec)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if rec.Done == 0 {
				continue
			}
			out = append(out, store.Result{ID: id, Worker: rec.ResultBy, Attempt: rec.Attempt,
				Data: rec.Result, Done: time.Unix(0, rec.Done)})
		}
		return nil
	})
	return out, err
}

// Delete implements store.Queue.
func (q *Queue) Delete(ctx context.Context, queue string, ids []string) error {
	if err := store.CheckIDs(queue, ids); err != nil {
		return err
	}
	return q.db.Update(ctx, func(tx store.Tx) error {
		for _, id := range ids {
			var rec jobRecord
			err := store.GetJSON(tx, jobKey(queue, id), &rec)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if err := tx.Delete(jobKey(queue, id)); err != nil {
				return err
			}
			if err := tx.Delete(waitKey(queue, rec.Order, id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Stats implements store.Queue.
func (q *Queue) Stats(ctx context.Context, queue string) (store.QueueStats, error) {
	if err := store.CheckQueue(queue); err != nil {
		return store.QueueStats{}, err
	}
	var st store.QueueStats
	err := q.db.View(ctx, func(tx store.Tx) error {
		st = store.QueueStats{}
		now := q.now().UnixNano()
		return tx.Scan("queue/job/"+queue+"/", false, func(_ string, v []byte) error {
			var rec jobRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("storage: decode queued job: %w", err)
			}
			switch {
			case rec.Done != 0:
				st.Done++
			case rec.Expires > now:
				st.Leased++
			default:
				st.Waiting++
			}
			return nil
		})
	})
	return st, err
}
