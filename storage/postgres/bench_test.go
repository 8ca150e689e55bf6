package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/store"
)

// BenchmarkUpdate measures durable transactions from many goroutines at
// once, as storage's BenchmarkUpdate does on badger (the same shape, so
// that the figures compare): each writes a few small keys, as a court
// mutation does. writers=32 runs 32×GOMAXPROCS goroutines.
func BenchmarkUpdate(b *testing.B) {
	for _, writers := range []int{1, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := MustOpen(b, pgtest.URL(b))
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
			b.ReportMetric(float64(db.Retries())/float64(b.N), "retries/op")
		})
	}
}

// BenchmarkReadModifyWrite measures the shape of most service
// transactions: read a record, read a second, write both, on disjoint
// keys from many goroutines.
func BenchmarkReadModifyWrite(b *testing.B) {
	db := MustOpen(b, pgtest.URL(b))
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			err := db.Update(ctx, func(tx store.Tx) error {
				for _, k := range []string{fmt.Sprintf("rmw/a/%d", i), fmt.Sprintf("rmw/b/%d", i)} {
					if _, err := tx.Get(k); err != nil && err != store.ErrNotFound {
						return err
					}
					if err := store.SetJSON(tx, k, i); err != nil {
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
	b.ReportMetric(float64(db.Retries())/float64(b.N), "retries/op")
}
