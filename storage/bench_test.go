package storage_test

import (
	"testing"

	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage/storetest"
)

// BenchmarkUpdate measures durable transactions from many goroutines at
// once (storetest.BenchUpdate). Concurrent commits share fsyncs, so
// throughput grows with the number of writers.
func BenchmarkUpdate(b *testing.B) {
	storetest.BenchUpdate(b, func(tb testing.TB) store.Store { return MustOpen(tb, tb.TempDir()) }, nil)
}
