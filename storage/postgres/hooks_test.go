package postgres_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage/postgres"
)

// TestStore_hooks: OnCommit sees each committed Update once, and OnRetry
// each run again after a serialisation failure: n transactions that all
// read a counter before any writes it conflict, and all commit in the end.
func TestStore_hooks(t *testing.T) {
	t.Parallel()
	var commits, retries atomic.Int64
	s, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{
		OnCommit: func(d time.Duration) {
			if d <= 0 {
				t.Errorf("commit took %v", d)
			}
			commits.Add(1)
		},
		OnRetry: func() { retries.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 4
	var read, wg sync.WaitGroup
	read.Add(n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			err := s.Update(ctx, func(tx store.Tx) error {
				v, err := tx.Get("counter")
				if err != nil && err != store.ErrNotFound {
					return err
				}
				c, _ := strconv.Atoi(string(v))
				if first {
					first = false
					read.Done()
					read.Wait() // every transaction has read before any writes
				}
				return tx.Set("counter", []byte(strconv.Itoa(c+1)))
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var got []byte
	if err := s.View(ctx, func(tx store.Tx) error { got, err = tx.Get("counter"); return err }); err != nil {
		t.Fatal(err)
	}
	if string(got) != strconv.Itoa(n) || commits.Load() != n {
		t.Errorf("counter %s, %d commits observed; want %d each", got, commits.Load(), n)
	}
	if r := retries.Load(); r == 0 || r != s.Retries() {
		t.Errorf("%d retries observed, the store counted %d; want the same, above 0", r, s.Retries())
	}
}
