package replays

import (
	"context"
	"errors"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/store"
)

// Blobs adapts the services' store to checkers.Blobs, the key-value store
// the checker registry reads: checkers depends on no storage package, so
// the adapter lives here.
type Blobs struct{ st store.Store }

var _ checkers.Blobs = Blobs{}

// Get implements checkers.Blobs: one read transaction.
func (b Blobs) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := b.st.View(ctx, func(tx store.Tx) error {
		var err error
		v, err = tx.Get(key)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// Registry returns the checker registry kept in st: every checker uploaded
// to the court (POST /checkers) and every python checker listed on the
// market.
func Registry(st store.Store) *checkers.Registry { return checkers.NewRegistry(Blobs{st}) }

// Checkers returns what a server's one checkers.Runner reads checkers
// from: the Registry in st behind a CachedSource of CheckerCacheBytes, so
// that a checker replayed many times is read from the store once.
func Checkers(st store.Store) checkers.Source {
	return CachedSource(Registry(st), CheckerCacheBytes)
}
