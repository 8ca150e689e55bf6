package market_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/market"
)

// TestService_ScanBounds: a browse or a search that would examine more
// records than its bound is refused with 422 scan_limit_exceeded, the
// same request always alike; within its bound it answers as before.
func TestService_ScanBounds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	market.SeedListings(t, e.svc, 40, func(i int) string { return fmt.Sprintf("count the primes below %d with a sieve", 1000+i) })
	browse := market.SearchRequest{Limit: 5}
	search := market.SearchRequest{Query: "count the primes with a sieve", Limit: 5}
	for _, tc := range []struct {
		name           string
		browse, search int
		req            market.SearchRequest
		code           string
	}{
		{"OKBrowse", 1000, 1000, browse, ""},
		{"OKSearch", 1000, 1000, search, ""},
		{"ErrBrowse", 39, 1000, browse, market.ECodeScanLimit},
		{"ErrSearch", 1000, 60, search, market.ECodeScanLimit},
		{"OKBrowseWholeMarket", 1000, 1000, market.SearchRequest{Limit: 100}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := e.svc.WithScanBounds(tc.browse, tc.search)
			for range 2 {
				res, err := svc.Search(ctx, tc.req)
				if fault.CodeOf(err) != tc.code {
					t.Fatalf("%v, want code %q", err, tc.code)
				}
				if tc.code != "" && fault.KindOf(err) != fault.Unprocessable {
					t.Errorf("kind %s, want unprocessable (422)", fault.KindOf(err))
				}
				if tc.code == "" && res.Count == 0 {
					t.Errorf("no results within the bound")
				}
			}
		})
	}
}
