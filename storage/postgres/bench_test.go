package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage/postgres"
	"github.com/assayhq/assay/storage/storetest"
)

// BenchmarkUpdate measures durable transactions from many goroutines at
// once, as storage's BenchmarkUpdate does on badger (storetest.BenchUpdate,
// so that the figures compare), and the retries they took.
func BenchmarkUpdate(b *testing.B) {
	storetest.BenchUpdate(b, func(tb testing.TB) store.Store { return MustOpen(tb, pgtest.URL(tb)) },
		func(b *testing.B, db store.Store) {
			b.ReportMetric(float64(db.(*postgres.Store).Retries())/float64(b.N), "retries/op")
		})
}

// BenchmarkReadModifyWrite measures the shape of most service
// transactions: read a record, read a second, write both, on disjoint keys
// from 64 goroutines. Under SERIALIZABLE, PostgreSQL locks the B-tree
// pages a read visits, so keys that sort together (keys=sequential) make
// transactions that touch different rows conflict; the services' ids are
// random (keys=random).
func BenchmarkReadModifyWrite(b *testing.B) {
	for _, keys := range []string{"sequential", "random"} {
		b.Run("keys="+keys, func(b *testing.B) {
			benchReadModifyWrite(b, keys == "random")
		})
	}
}

func benchReadModifyWrite(b *testing.B, random bool) {
	db := MustOpen(b, pgtest.URL(b))
	if random {
		// A table of some size, as the services' is: 200,000 keys under the
		// same prefixes.
		postgres.Exec(b, db, `INSERT INTO kv SELECT convert_to(p || md5(i::text), 'UTF8'), '"x"' FROM generate_series(1, 100000) i, unnest(array['rmw/a/', 'rmw/b/']) p`)
		postgres.Exec(b, db, `ANALYZE kv`)
	}
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint(n.Add(1))
			if random {
				id = fmt.Sprintf("%016x", rand.Uint64())
			}
			err := db.Update(ctx, func(tx store.Tx) error {
				for _, k := range []string{"rmw/a/" + id, "rmw/b/" + id} {
					if _, err := tx.Get(k); err != nil && err != store.ErrNotFound {
						return err
					}
					if err := store.SetJSON(tx, k, id); err != nil {
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
