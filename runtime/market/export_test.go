package market

import (
	"context"
	"fmt"
	"testing"

	"github.com/assayhq/assay/runtime/store"
)

// SeedListings stores n active level-2 listings directly, as Publish
// stores their listing and search records, without replays, receipts or
// bonds: a fast path for search benchmarks. Problem i is problem(i).
func SeedListings(tb testing.TB, s *Service, n int, problem func(int) string) {
	tb.Helper()
	now := s.now().UTC()
	for lo := 0; lo < n; lo += 1000 {
		err := s.st.Update(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+1000, n); i++ {
				p := problem(i)
				l := Listing{ID: fmt.Sprintf("lst_seed%08d", i), Fingerprint: Fingerprint(p), Title: "seeded", Problem: p,
					ArtifactType: "solution", Price: 2_500_000, Level: 2, Seller: "g17-seed", Seed: true, Status: ListingActive, CreatedAt: now}
				if err := store.SetJSON(tx, keySearch+l.ID, searchDoc{Fingerprint: l.Fingerprint, Tokens: Tokens(p), Constraints: Constraints(p)}); err != nil {
					return err
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
