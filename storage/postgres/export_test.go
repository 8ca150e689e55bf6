package postgres

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
)

// SessionSetting returns the value of a setting in a session of s's pool.
func SessionSetting(tb testing.TB, s *Store, name string) string {
	tb.Helper()
	var v string
	if err := s.pool.QueryRow(context.Background(), `SELECT current_setting($1)`, name).Scan(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}

// Retries returns how many attempts s has run again after a conflict.
func (s *Store) Retries() int64 { return s.retries.Load() }

// Exec runs sql on s's pool, for tests that prepare the table.
func Exec(tb testing.TB, s *Store, sql string) {
	tb.Helper()
	if _, err := s.pool.Exec(context.Background(), sql); err != nil {
		tb.Fatal(err)
	}
}

// OpenCounting opens a Store on url whose connections count in writes
// what they send the server: one write a round trip, as pgx sends a
// batch, or a statement and its Sync, in one.
func OpenCounting(ctx context.Context, url string, writes *atomic.Int64) (*Store, error) {
	var d net.Dialer
	return Open(ctx, url, Options{dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, writes}, nil
	}})
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}
