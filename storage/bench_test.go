package storage_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/runtime/store"
)

// BenchmarkUpdate measures durable transactions from many goroutines at
// once: each writes a few small keys, as a court mutation does. Concurrent
// commits share fsyncs, so throughput grows with the number of writers.
func BenchmarkUpdate(b *testing.B) {
	for _, writers := range []int{1, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := MustOpen(b, b.TempDir())
			ctx := context.Background()
			var n atomic.Int64
			value := make([]byte, 600)
			b.SetParallelism(writers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					err := db.Update(ctx, func(tx store.Tx) error {
						for k := range 4 {
							if err := tx.Set(fmt.Sprintf("bench/%d/%d", i, k), value); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
