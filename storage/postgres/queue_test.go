package postgres_test

import (
	"context"
	"testing"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage/postgres"
	"github.com/assayhq/assay/storage/storetest"
)

// TestQueue runs the queue contract against PostgreSQL; each test gets a
// fresh database.
func TestQueue(t *testing.T) {
	t.Parallel()
	storetest.RunQueueSuite(t, func(tb testing.TB) store.Queue {
		return mustQueue(tb, pgtest.URL(tb))
	})
}

// TestQueue_TwoNodes: two queues on one database, as two nodes have, see
// one another's jobs, and claims from both never overlap.
func TestQueue_TwoNodes(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	storetest.RunQueueNodes(t, mustQueue(t, url), mustQueue(t, url))
}

func mustQueue(tb testing.TB, url string) store.Queue {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return postgres.NewQueue(s)
}
