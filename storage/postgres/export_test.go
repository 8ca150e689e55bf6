package postgres

import (
	"context"
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
