package storage_test

import (
	"testing"

	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/storetest"
)

// TestQueue runs the queue contract against badger.
func TestQueue(t *testing.T) {
	t.Parallel()
	storetest.RunQueueSuite(t, func(tb testing.TB) store.Queue {
		return storage.NewQueue(MustOpen(tb, tb.TempDir()), storage.QueueConfig{})
	})
}
