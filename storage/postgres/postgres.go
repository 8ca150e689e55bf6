package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assayhq/assay/runtime/store"
)

// MaxKey is the longest key, in bytes, that Set accepts. PostgreSQL's
// B-tree refuses index entries longer than about a third of a page.
const MaxKey = 2048

// maxAttempts bounds how often Update runs fn when transactions conflict.
const maxAttempts = 64

// Pauses between attempts grow from minBackoff to maxBackoff, each drawn
// at random up to its bound, so that transactions that collided do not
// collide again in step.
const (
	minBackoff = 500 * time.Microsecond
	maxBackoff = 50 * time.Millisecond
)

// defaultMaxConns is the pool size when the URL sets no pool_max_conns:
// transactions spend most of their time waiting for the server, so a node
// keeps more of them in flight than it has cores, while several nodes stay
// well inside PostgreSQL's default max_connections of 100.
const defaultMaxConns = 16

// Store is a store.Store on PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	retries atomic.Int64 // attempts run again after a conflict, for the benchmarks

	onCommit func(time.Duration)
	onRetry  func()
}

// Interface guards.
var (
	_ store.Store = (*Store)(nil)
	_ store.Tx    = (*tx)(nil)
)

// Options configure Open.
type Options struct {
	// Logger receives warnings (a setting Open changed); nil discards them.
	Logger *slog.Logger
	// OnCommit, when set, is told how long each Update that committed
	// took, retries included: for metrics.
	OnCommit func(time.Duration)
	// OnRetry, when set, is called each time an Update runs again after a
	// serialisation failure or a deadlock.
	OnRetry func()

	// dial, when set, replaces pgx's dialer, for tests that count what
	// goes to the server.
	dial pgconn.DialFunc
}

// Open connects to the PostgreSQL database at rawURL (postgres://...),
// applies the schema migrations it lacks and checks that commits are
// durable.
//
// # Errors
//
// A URL that does not parse, a server that cannot be reached, a failed
// migration, or a server with fsync off; the error names the URL without
// its password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	where := Redact(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	if u, err := url.Parse(rawURL); err != nil || !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if opts.dial != nil {
		cfg.ConnConfig.DialFunc = opts.dial
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var warned atomic.Bool
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		// Without synchronous_commit a COMMIT returns before its WAL is on
		// disk, and an acknowledged write can be lost in a crash.
		var sc string
		if err := c.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sc); err != nil {
			return err
		}
		if sc != "off" {
			return nil
		}
		if warned.CompareAndSwap(false, true) {
			log.Warn("postgres: synchronous_commit is off on the server; turning it on for assay's connections")
		}
		_, err := c.Exec(ctx, `SET synchronous_commit = on`)
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	s := &Store{pool: pool, log: log, onCommit: opts.OnCommit, onRetry: opts.OnRetry}
	if err := s.check(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: migrate: %w", where, err)
	}
	return s, nil
}

// check connects once and refuses a server that does not make commits
// durable.
func (s *Store) check(ctx context.Context) error {
	var fsync string
	if err := s.pool.QueryRow(ctx, `SHOW fsync`).Scan(&fsync); err != nil {
		return err
	}
	if fsync != "on" {
		return errors.New("the server runs with fsync off: acknowledged writes would not survive a crash")
	}
	return nil
}

// Close implements store.Store: it waits for connections in use to be
// released and closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// The statements that open a transaction, sent with its first statement.
const (
	beginUpdate = `BEGIN ISOLATION LEVEL SERIALIZABLE`
	beginView   = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
)

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	var start time.Time
	if s.onCommit != nil {
		start = time.Now()
	}
	bound := minBackoff
	for attempt := 1; ; attempt++ {
		err := s.run(ctx, beginUpdate, fn)
		if !retryable(err) {
			if err == nil && s.onCommit != nil {
				s.onCommit(time.Since(start))
			}
			return err
		}
		s.retries.Add(1)
		if s.onRetry != nil {
			s.onRetry()
		}
		if attempt == maxAttempts {
			return fmt.Errorf("postgres: gave up after %d conflicting attempts: %w", maxAttempts, errors.Join(store.ErrContention, err))
		}
		// Another transaction wrote what this one read: run it again on
		// the new state, after a pause that grows with contention.
		select {
		case <-time.After(rand.N(bound) + 1):
		case <-ctx.Done():
			return ctx.Err()
		}
		bound = min(2*bound, maxBackoff)
	}
}

// View implements store.Store.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.run(ctx, beginView, fn)
}

// run runs fn once in a transaction opened by begin, and commits it.
//
// # Notes
//
// The transaction takes no round trip of its own: BEGIN goes to the server
// with its first statement, and the writes still pending go with COMMIT. A
// transaction that sent nothing commits nothing.
func (s *Store) run(ctx context.Context, begin string, fn func(store.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return wrap(err)
	}
	t := &tx{ctx: ctx, conn: conn, begin: begin}
	defer func() {
		if t.conn.Conn().PgConn().TxStatus() != 'I' {
			// Still in the transaction (fn failed) or in a failed one:
			// end it, so that the connection goes back to the pool.
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = t.conn.Exec(rctx, `ROLLBACK`)
			cancel()
		}
		t.conn.Release()
	}()
	err = fn(t)
	if t.failed != nil && retryable(t.failed) {
		// The transaction failed to serialise inside fn; whatever fn made
		// of that error, the attempt is void.
		return t.failed
	}
	if err != nil {
		return err
	}
	if t.begin != "" && len(t.pending) == 0 {
		return nil // nothing read or written
	}
	var tag pgconn.CommandTag
	if err := t.send(`COMMIT`, nil, func(b *pgx.QueuedQuery) {
		b.Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	}); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
			return err // the server refused it, or it was never sent
		}
		// The connection failed with the COMMIT sent or half sent: the
		// server may have committed it.
		return errors.Join(err, store.ErrCommitUnknown)
	}
	if tag.String() == "ROLLBACK" {
		return errors.New("postgres: the transaction was rolled back at commit")
	}
	return nil
}

// retryable reports whether err is a serialisation failure or a deadlock:
// the transaction was rolled back and may be run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// wrap gives a server's error the package's prefix, keeping it for
// errors.As (the retry test reads its code).
func wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("postgres: %w", err)
}

// Redact returns a PostgreSQL URL fit for a log: without the password of
// its user part and without the values of its password and sslpassword
// parameters.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return "(a URL that does not parse)"
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// tx is one transaction on one connection. Its BEGIN waits until its
// first statement, and its writes until the next read or the commit; each
// exchange with the server then sends everything waiting in one batch.
type tx struct {
	ctx     context.Context
	conn    *pgxpool.Conn
	begin   string // the BEGIN not sent yet; "" once sent
	pending []write
	// failed is the first error the server returned; PostgreSQL aborts
	// the transaction on any error, so every later call returns it too.
	failed error
	// read keeps what GetMany read, by key (nil: no value), until the
	// transaction writes the key.
	read map[string][]byte
}

type write struct {
	key, value []byte // value nil: delete
}

// fail records the first server error of the transaction.
func (t *tx) fail(err error) error {
	if err == nil {
		return nil
	}
	if t.failed == nil {
		t.failed = wrap(err)
	}
	return t.failed
}

// send sends the BEGIN and the writes still waiting, then sql with args,
// whose result then reaches the function that last queues (nil: none), in
// one batch.
func (t *tx) send(sql string, args []any, then func(*pgx.QueuedQuery)) error {
	if t.failed != nil {
		return t.failed
	}
	b := &pgx.Batch{}
	if t.begin != "" {
		b.Queue(t.begin)
		t.begin = ""
	}
	t.queueWrites(b)
	if sql != "" {
		q := b.Queue(sql, args...)
		if then != nil {
			then(q)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return t.fail(t.conn.SendBatch(t.ctx, b).Close())
}

// queueWrites moves the writes waiting into b.
func (t *tx) queueWrites(b *pgx.Batch) {
	for _, w := range t.pending {
		if w.value == nil {
			b.Queue(`DELETE FROM kv WHERE key = $1`, w.key)
		} else {
			b.Queue(`INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, w.key, w.value)
		}
	}
	t.pending = t.pending[:0]
}

// known returns what GetMany read of key (nil: no value), if it did.
func (t *tx) known(key string) ([]byte, bool) {
	v, ok := t.read[key]
	return v, ok
}

func (t *tx) Get(key string) ([]byte, error) {
	if t.failed != nil {
		return nil, t.failed
	}
	if v, ok := t.known(key); ok {
		if v == nil {
			return nil, store.ErrNotFound
		}
		return v, nil
	}
	var v []byte
	found := true
	err := t.send(`SELECT value FROM kv WHERE key = $1`, []any{[]byte(key)}, func(q *pgx.QueuedQuery) {
		q.QueryRow(func(row pgx.Row) error {
			err := row.Scan(&v)
			if errors.Is(err, pgx.ErrNoRows) {
				found = false
				return nil
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, store.ErrNotFound
	}
	return v, nil
}

// GetMany implements store.Tx: the keys not read before go in one batch,
// with the BEGIN and the writes waiting, so that they take one round trip,
// and what it read is kept for the transaction's later reads.
func (t *tx) GetMany(keys ...string) ([][]byte, error) {
	if t.failed != nil {
		return nil, t.failed
	}
	out := make([][]byte, len(keys))
	var rest []string // the keys not read before, and where they go in out
	var at []int
	for i, k := range keys {
		if v, ok := t.known(k); ok {
			out[i] = v
		} else {
			rest, at = append(rest, k), append(at, i)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	vals := make([][]byte, len(rest))
	if err := t.fetch(rest, vals); err != nil {
		return nil, err
	}
	if t.read == nil {
		t.read = make(map[string][]byte, len(rest))
	}
	for j, i := range at {
		out[i] = vals[j]
		t.read[rest[j]] = vals[j]
	}
	return out, nil
}

// fetch reads keys into out (nil for a key that has no value, a non-nil
// slice for one that has) in one batch, with the BEGIN and the writes
// waiting.
func (t *tx) fetch(keys []string, out [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if t.begin != "" {
		b.Queue(t.begin)
		t.begin = ""
	}
	t.queueWrites(b)
	for i, k := range keys {
		b.Queue(`SELECT value FROM kv WHERE key = $1`, []byte(k)).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&out[i])
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				out[i] = nil
				return nil
			case err == nil && out[i] == nil:
				out[i] = []byte{} // present, empty
			}
			return err
		})
	}
	return t.fail(t.conn.SendBatch(t.ctx, b).Close())
}

func (t *tx) Set(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if t.failed != nil {
		return t.failed
	}
	// A copy: fn may reuse value once Set returns, and the batch is sent
	// later. A nil value would be sent as NULL.
	delete(t.read, key) // a read now sees the write
	t.pending = append(t.pending, write{[]byte(key), append(make([]byte, 0, len(value)), value...)})
	return nil
}

func (t *tx) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if t.failed != nil {
		return t.failed
	}
	delete(t.read, key)
	t.pending = append(t.pending, write{key: []byte(key)})
	return nil
}

func checkKey(key string) error {
	if len(key) > MaxKey {
		return fmt.Errorf("postgres: key of %d bytes, longer than %d", len(key), MaxKey)
	}
	return nil
}

// Page sizes of Scan: small first, since many scans stop after a few keys
// (and under SERIALIZABLE every row read is a predicate lock), then
// growing.
const (
	firstPage = 16
	maxPage   = 1024
)

// The scans, by direction and by whether the prefix has an upper bound.
const (
	scanFwd      = `SELECT key, value FROM kv WHERE key >= $1 ORDER BY key LIMIT $2`
	scanFwdBound = `SELECT key, value FROM kv WHERE key >= $1 AND key < $3 ORDER BY key LIMIT $2`
	scanRev      = `SELECT key, value FROM kv WHERE key >= $1 ORDER BY key DESC LIMIT $2`
	scanRevBound = `SELECT key, value FROM kv WHERE key >= $1 AND key < $3 ORDER BY key DESC LIMIT $2`
)

type row struct {
	key, value []byte
}

func (t *tx) Scan(prefix string, reverse bool, fn func(string, []byte) error) error {
	lo := []byte(prefix)
	hi := upperBound(lo) // nil: no bound
	limit := firstPage
	for {
		page, err := t.page(lo, hi, reverse, limit)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(string(r.key), r.value); errors.Is(err, store.ErrStop) {
				return nil
			} else if err != nil {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		// Keyset pagination: the next page starts past the last key.
		last := page[len(page)-1].key
		if reverse {
			hi = last
		} else {
			lo = append(last, 0) // the least key greater than last
		}
		limit = min(2*limit, maxPage)
	}
}

// page reads one page of a scan, whole, so that no result set stays open on
// the connection while fn runs.
func (t *tx) page(lo, hi []byte, reverse bool, limit int) ([]row, error) {
	q, args := scanFwd, []any{lo, limit}
	switch {
	case reverse && hi != nil:
		q, args = scanRevBound, append(args, hi)
	case reverse:
		q = scanRev
	case hi != nil:
		q, args = scanFwdBound, append(args, hi)
	}
	page := make([]row, 0, limit)
	err := t.send(q, args, func(qq *pgx.QueuedQuery) {
		qq.Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.key, &r.value); err != nil {
					return err
				}
				page = append(page, r)
			}
			return rows.Err()
		})
	})
	return page, err
}

// upperBound returns the least key greater than every key with the prefix,
// or nil when there is none (an empty prefix, or one of 0xff bytes only).
func upperBound(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			hi := append([]byte(nil), prefix[:i+1]...)
			hi[i]++
			return hi
		}
	}
	return nil
}
