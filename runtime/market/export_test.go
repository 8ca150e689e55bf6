package market

import (
	"context"
	"fmt"
	"testing"

	"github.com/assayhq/assay/runtime/store"
)

// SeedListings stores n active level-2 listings directly, as Publish
// stores their listing and search records and postings, without replays,
// receipts or bonds: a fast path for search benchmarks. Problem i is
// problem(i).
func SeedListings(tb testing.TB, s *Service, n int, problem func(int) string) {
	tb.Helper()
	seedListings(tb, s, n, problem, true)
}

// SeedLegacyListings is SeedListings as a store written before the token
// index stored them: without postings.
func SeedLegacyListings(tb testing.TB, s *Service, n int, problem func(int) string) {
	tb.Helper()
	seedListings(tb, s, n, problem, false)
}

// ForgetIndex deletes the token index's state, as in a store written
// before it existed; postings already written stay.
func ForgetIndex(tb testing.TB, st store.Store) {
	tb.Helper()
	if err := st.Update(context.Background(), func(tx store.Tx) error { return tx.Delete(keyIndexState) }); err != nil {
		tb.Fatal(err)
	}
}

// IndexComplete reports whether the token index is marked complete.
func IndexComplete(tb testing.TB, st store.Store) bool {
	tb.Helper()
	var ok bool
	err := st.View(context.Background(), func(tx store.Tx) error {
		var err error
		ok, err = indexComplete(tx)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}

// SearchScan is Search by scanning every search record: the reference
// the token index must agree with.
func (s *Service) SearchScan(ctx context.Context, req SearchRequest) (Results, error) {
	c := *s
	c.scanOnly = true
	return c.Search(ctx, req)
}

// WithCommonPostings returns s searching with a token counted common
// past n postings, so that small corpora take the pruned path.
func (s *Service) WithCommonPostings(n int) *Service {
	c := *s
	c.common = n
	return &c
}

// Reopen opens a new Service on s's store, as a restart does.
func (s *Service) Reopen(tb testing.TB) *Service {
	tb.Helper()
	r, err := New(Config{Store: s.st, Signer: s.signer, Now: s.now, NewID: s.newID, Rand: s.rand})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func seedListings(tb testing.TB, s *Service, n int, problem func(int) string, index bool) {
	tb.Helper()
	now := s.now().UTC()
	for lo := 0; lo < n; lo += 1000 {
		err := s.st.Update(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+1000, n); i++ {
				p := problem(i)
				l := Listing{ID: fmt.Sprintf("lst_seed%08d", i), Fingerprint: Fingerprint(p), Title: "seeded", Problem: p,
					ArtifactType: "solution", Price: 2_500_000, Level: 2, Seller: "g17-seed", Seed: true, Status: ListingActive, CreatedAt: now}
				d := searchDoc{Fingerprint: l.Fingerprint, Tokens: Tokens(p), Constraints: Constraints(p)}
				if err := store.SetJSON(tx, keySearch+l.ID, d); err != nil {
					return err
				}
				if index {
					if err := indexListing(tx, l.ID, &d); err != nil {
						return err
					}
				}
				if err := tx.Set(keyFP+l.Fingerprint+"/"+l.ID, nil); err != nil {
					return err
				}
				if err := store.SetJSON(tx, listingKey(l.ID), l); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// ForceLevel rewrites a stored listing's level, as a store written under
// an older rule may hold it.
func ForceLevel(tb testing.TB, s *Service, id string, level int) {
	tb.Helper()
	err := s.st.Update(context.Background(), func(tx store.Tx) error {
		var l Listing
		if err := store.GetJSON(tx, listingKey(id), &l); err != nil {
			return err
		}
		l.Level = level
		return store.SetJSON(tx, listingKey(id), l)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
