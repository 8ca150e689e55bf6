package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assayhq/assay/runtime/store"
)

// Queue is a store.Queue on PostgreSQL, shared by every node that connects
// to the database. Claims take waiting rows with SELECT ... FOR UPDATE SKIP
// LOCKED, so that concurrent workers on any node take different jobs
// without waiting on each other; Complete records a result only while the
// claim's token still holds the row, so a worker whose lease ran out and
// was retaken, or whose job was deleted and enqueued again, cannot record
// a result. Tokens come from one sequence, assay_queue_token, so no two
// claims ever share one. Leases run on the database's clock.
//
// Its table, assay_queue, is created by migrations 2 (queueSchema) and 3
// (queueTokens), which Open applies with the others.
type Queue struct {
	pool *pgxpool.Pool
}

// Interface guard.
var _ store.Queue = (*Queue)(nil)

// queueSchema is the queue's table and its index of jobs not done, in
// enqueue order.
const queueSchema = `
CREATE TABLE assay_queue (
	queue     text        NOT NULL,
	id        text        NOT NULL,
	payload   bytea       NOT NULL,
	seq       bigint      GENERATED ALWAYS AS IDENTITY,
	worker    text,
	attempt   integer     NOT NULL DEFAULT 0,
	expires   timestamptz,
	done      timestamptz,
	result    bytea,
	result_by text,
	PRIMARY KEY (queue, id)
);
CREATE INDEX assay_queue_waiting ON assay_queue (queue, seq) WHERE done IS NULL;
`

// queueTokens adds the claims' fencing tokens and the enqueue time that
// Purge goes by.
const queueTokens = `
CREATE SEQUENCE assay_queue_token;
ALTER TABLE assay_queue
	ADD COLUMN token bigint NOT NULL DEFAULT 0,
	ADD COLUMN enqueued timestamptz NOT NULL DEFAULT now();
`

func init() {
	addMigration(2, "queue", queueSchema)
	addMigration(3, "queue tokens", queueTokens)
}

// NewQueue returns the job queue kept in s's database.
func NewQueue(s *Store) *Queue { return &Queue{pool: s.pool} }

// nonNil turns a nil slice into an empty one: pgx sends nil as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Enqueue implements store.Queue.
func (q *Queue) Enqueue(ctx context.Context, queue string, jobs ...store.Job) error {
	if err := store.CheckEnqueue(queue, jobs); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]string, len(jobs))
	payloads := make([][]byte, len(jobs))
	for i, j := range jobs {
		ids[i], payloads[i] = j.ID, nonNil(j.Payload)
	}
	var clash string
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// Insert in the order given, so that seq keeps it; ids queued
		// already are left as they are, and checked below.
		_, err := tx.Exec(ctx, `
			INSERT INTO assay_queue (queue, id, payload)
			SELECT $1, j.id, j.payload
			FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS j(id, payload, n)
			ORDER BY j.n
			ON CONFLICT (queue, id) DO NOTHING`, queue, ids, payloads)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			SELECT q.id FROM assay_queue q
			JOIN unnest($2::text[], $3::bytea[]) AS j(id, payload) ON q.id = j.id
			WHERE q.queue = $1 AND q.payload <> j.payload
			LIMIT 1`, queue, ids, payloads).Scan(&clash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		return store.JobExists(queue, clash) // rolls the batch back
	})
	if clash != "" {
		return err
	}
	return wrapQueue("enqueue", err)
}

// Claim implements store.Queue.
func (q *Queue) Claim(ctx context.Context, queue, worker string, max int, lease time.Duration) ([]store.Lease, error) {
	if err := store.CheckClaim(queue, worker, max, lease); err != nil {
		return nil, err
	}
	rows, err := q.pool.Query(ctx, `
		WITH c AS (
			SELECT queue, id FROM assay_queue
			WHERE queue = $1 AND done IS NULL AND (expires IS NULL OR expires <= now())
			ORDER BY seq
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE assay_queue q
		SET worker = $3, attempt = q.attempt + 1, token = nextval('assay_queue_token'),
			expires = now() + $4 * interval '1 microsecond'
		FROM c
		WHERE q.queue = c.queue AND q.id = c.id
		RETURNING q.seq, q.id, q.payload, q.attempt, q.token, q.expires`,
		queue, max, worker, lease.Microseconds())
	if err != nil {
		return nil, wrapQueue("claim", err)
	}
	type row struct {
		seq int64
		l   store.Lease
	}
	var got []row
	for rows.Next() {
		r := row{l: store.Lease{Queue: queue, Worker: worker}}
		if err := rows.Scan(&r.seq, &r.l.ID, &r.l.Payload, &r.l.Attempt, &r.l.Token, &r.l.Expires); err != nil {
			rows.Close()
			return nil, wrapQueue("claim", err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapQueue("claim", err)
	}
	slices.SortFunc(got, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]store.Lease, len(got))
	for i, r := range got {
		out[i] = r.l
	}
	return out, nil
}

// Complete implements store.Queue.
func (q *Queue) Complete(ctx context.Context, l store.Lease, result []byte) error {
	if err := store.CheckComplete(l, result); err != nil {
		return err
	}
	tag, err := q.pool.Exec(ctx, `
		UPDATE assay_queue SET done = now(), result = $4, result_by = $5
		WHERE queue = $1 AND id = $2 AND token = $3 AND token <> 0 AND done IS NULL`,
		l.Queue, l.ID, l.Token, nonNil(result), l.Worker)
	if err != nil {
		return wrapQueue("complete", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return q.notHeld(ctx, "complete", l)
}

// notHeld returns the error for a fenced update that found no row l holds:
// job_not_found or lease_lost.
func (q *Queue) notHeld(ctx context.Context, op string, l store.Lease) error {
	var exists bool
	err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assay_queue WHERE queue = $1 AND id = $2)`, l.Queue, l.ID).Scan(&exists)
	if err != nil {
		return wrapQueue(op, err)
	}
	if !exists {
		return store.JobNotFound(l.Queue, l.ID)
	}
	return store.LeaseLost(l)
}

// Release implements store.Queue.
func (q *Queue) Release(ctx context.Context, l store.Lease) error {
	if err := store.CheckLease(l, time.Second); err != nil {
		return err
	}
	tag, err := q.pool.Exec(ctx, `
		UPDATE assay_queue SET worker = NULL, token = 0, expires = NULL, attempt = greatest(attempt - 1, 0)
		WHERE queue = $1 AND id = $2 AND token = $3 AND token <> 0 AND done IS NULL`,
		l.Queue, l.ID, l.Token)
	if err != nil {
		return wrapQueue("release", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return q.notHeld(ctx, "release", l)
}

// Renew implements store.Queue.
func (q *Queue) Renew(ctx context.Context, l store.Lease, lease time.Duration) (time.Time, error) {
	if err := store.CheckLease(l, lease); err != nil {
		return time.Time{}, err
	}
	var expires time.Time
	err := q.pool.QueryRow(ctx, `
		UPDATE assay_queue SET expires = now() + $4 * interval '1 microsecond'
		WHERE queue = $1 AND id = $2 AND token = $3 AND token <> 0 AND done IS NULL
		RETURNING expires`,
		l.Queue, l.ID, l.Token, lease.Microseconds()).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, q.notHeld(ctx, "renew", l)
	} else if err != nil {
		return time.Time{}, wrapQueue("renew", err)
	}
	return expires, nil
}

// Purge implements store.Queue.
func (q *Queue) Purge(ctx context.Context, queue string, age time.Duration) (int, error) {
	if err := store.CheckPurge(queue, age); err != nil {
		return 0, err
	}
	tag, err := q.pool.Exec(ctx, `
		DELETE FROM assay_queue WHERE queue = $1 AND enqueued < now() - $2 * interval '1 microsecond'`,
		queue, age.Microseconds())
	if err != nil {
		return 0, wrapQueue("purge", err)
	}
	return int(tag.RowsAffected()), nil
}

// Results implements store.Queue.
func (q *Queue) Results(ctx context.Context, queue string, ids []string) ([]store.Result, error) {
	if err := store.CheckIDs(queue, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.pool.Query(ctx, `
		SELECT id, result_by, attempt, result, done FROM assay_queue
		WHERE queue = $1 AND id = ANY($2) AND done IS NOT NULL`, queue, ids)
	if err != nil {
		return nil, wrapQueue("results", err)
	}
	byID := map[string]store.Result{}
	for rows.Next() {
		var r store.Result
		if err := rows.Scan(&r.ID, &r.Worker, &r.Attempt, &r.Data, &r.Done); err != nil {
			rows.Close()
			return nil, wrapQueue("results", err)
		}
		byID[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, wrapQueue("results", err)
	}
	out := make([]store.Result, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// Delete implements store.Queue.
func (q *Queue) Delete(ctx context.Context, queue string, ids []string) error {
	if err := store.CheckIDs(queue, ids); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := q.pool.Exec(ctx, `DELETE FROM assay_queue WHERE queue = $1 AND id = ANY($2)`, queue, ids)
	return wrapQueue("delete", err)
}

// Stats implements store.Queue.
func (q *Queue) Stats(ctx context.Context, queue string) (store.QueueStats, error) {
	if err := store.CheckQueue(queue); err != nil {
		return store.QueueStats{}, err
	}
	var st store.QueueStats
	err := q.pool.QueryRow(ctx, `
		SELECT
			count(*) FILTER (WHERE done IS NULL AND (expires IS NULL OR expires <= now())),
			count(*) FILTER (WHERE done IS NULL AND expires > now()),
			count(*) FILTER (WHERE done IS NOT NULL)
		FROM assay_queue WHERE queue = $1`, queue).Scan(&st.Waiting, &st.Leased, &st.Done)
	return st, wrapQueue("stats", err)
}

// wrapQueue says which queue operation failed; context errors stay
// matchable with errors.Is.
func wrapQueue(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: queue %s: %w", op, err)
}
