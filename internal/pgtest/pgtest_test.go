package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assayhq/assay/internal/pgtest"
)

// TestURL: each call gives a distinct empty database that is gone after
// the test.
func TestURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var names []string
	t.Run("OK", func(t *testing.T) {
		for range 2 {
			conn, err := pgx.Connect(ctx, pgtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			var name string
			var tables int
			if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`).Scan(&name, &tables); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			if tables != 0 {
				t.Errorf("%s has %d tables, want an empty database", name, tables)
			}
			names = append(names, name)
		}
		if names[0] == names[1] {
			t.Errorf("two calls gave the same database %s", names[0])
		}
	})
	if len(names) == 0 {
		return // skipped
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d of %v still exist after their test", n, names)
	}
}
