package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/runtime/store"
)

// BenchUpdate measures durable transactions from many goroutines at once,
// on a store that open returns, so that every implementation's figures
// compare: each transaction writes four small keys, as a court mutation
// does; writers=32 runs 32×GOMAXPROCS goroutines. report, when not nil,
// adds metrics of the implementation's own after each run.
func BenchUpdate(b *testing.B, open func(testing.TB) store.Store, report func(*testing.B, store.Store)) {
	for _, writers := range []int{1, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := open(b)
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
			if report != nil {
				report(b, db)
			}
		})
	}
}
