package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage/postgres"
	"github.com/assayhq/assay/storage/storetest"
)

// MustOpen opens the store at url, closed at the end of the test.
func MustOpen(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs the store contract that badger's implementation passes
// (package storage) against PostgreSQL, and the stronger range guarantee.
func TestStore(t *testing.T) {
	t.Parallel()
	open := func(tb testing.TB) store.Store { return MustOpen(tb, pgtest.URL(tb)) }
	storetest.RunStoreSuite(t, open)
	storetest.RunRangeSuite(t, open)
}

// TestOpen: what Update acknowledged is there after a reopen, and nodes
// that open one database at once apply its migrations once.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("Reopen", func(t *testing.T) {
		url := pgtest.URL(t)
		s, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.Set("k", []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s = MustOpen(t, url)
		if err := s.View(ctx, func(tx store.Tx) error {
			v, err := tx.Get("k")
			if err != nil || string(v) != "v" {
				t.Errorf("after reopen: %q %v", v, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		url := pgtest.URL(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				s, err := postgres.Open(ctx, url, postgres.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				s.Close()
			})
		}
		wg.Wait()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n, distinct int
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n != distinct {
			t.Errorf("schema_migrations has %d rows for %d versions", n, distinct)
		}
	})
	t.Run("ErrURL", func(t *testing.T) {
		for _, bad := range []string{"mysql://x", "postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=2",
			"postgres://nobody@127.0.0.1:1/none?connect_timeout=2&password=secret"} {
			s, err := postgres.Open(ctx, bad, postgres.Options{})
			if err == nil {
				s.Close()
				t.Errorf("Open(%q) succeeded", bad)
			} else if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		}
	})
	t.Run("ErrNewerSchema", func(t *testing.T) {
		url := pgtest.URL(t)
		MustOpen(t, url).Close()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (1000000, 'from the future')`); err != nil {
			t.Fatal(err)
		}
		if s, err := postgres.Open(ctx, url, postgres.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open on a newer schema: %v", err)
		}
	})
}

// TestStore_durability: a role with synchronous_commit off still commits
// durably through the store.
func TestStore_durability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	s := MustOpen(t, url)
	if got := postgres.SessionSetting(t, s, "synchronous_commit"); got != "on" {
		t.Errorf("synchronous_commit %q in the store's sessions, want on", got)
	}
}

// TestStore_errKey: a key too long for the index is refused, not sent.
func TestStore_errKey(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, pgtest.URL(t))
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Set(strings.Repeat("k", postgres.MaxKey+1), nil)
	})
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Set of a long key: %v", err)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:s3cret@h:5432/db?sslmode=disable":     "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=s3cret&sslmode=require": "postgres://u@h/db?password=xxxxx&sslmode=require",
		"postgresql://u@h/db?sslpassword=s3cret":            "postgresql://u@h/db?sslpassword=xxxxx",
		"host=h user=u password=s3cret":                     "(a URL that does not parse)",
		"postgres://u@h/db":                                 "postgres://u@h/db",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
