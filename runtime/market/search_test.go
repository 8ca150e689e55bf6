package market_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
)

// searchWords hold words in the singular and the plural, which a search
// takes for one word, and a word ending in "ss", which it never folds.
var searchWords = []string{"schedule", "nurses", "hospital", "rota", "primes", "graph", "colouring", "routing", "trucks", "warehouse",
	"budget", "portfolio", "matrix", "inverse", "sudoku", "solver", "prime", "nurse", "schedules", "truck", "class", "solvers"}

func randomProblem(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(6) {
		b.WriteString(searchWords[r.IntN(len(searchWords))] + " ")
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "with %d workers ", 2+r.IntN(4))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "and shift=%d ", r.IntN(3))
	}
	if r.IntN(4) == 0 {
		fmt.Fprintf(&b, "for $%d", r.IntN(3))
	}
	return b.String()
}

func randomQuery(r *rand.Rand, corpus []string) market.SearchRequest {
	req := market.SearchRequest{Limit: r.IntN(12)}
	switch r.IntN(8) {
	case 0:
		req.Query = "the of and with"
	case 1:
		req.Query = "unindexed zebra"
	case 2:
		req.Query = corpus[r.IntN(len(corpus))]
	case 3:
		req.Query = randomProblem(r)
		req.QueryFingerprint = market.Fingerprint(corpus[r.IntN(len(corpus))])
	default:
		req.Query = randomProblem(r)
	}
	return req
}

// TestService_Search_index compares the token index with the scan of every
// search record on random corpora and queries (seeded), with tokens
// counted common past 4, 32 and the default number of postings, after
// some listings were retired.
func TestService_Search_index(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			e := newEnv(t)
			corpus := make([]string, 150+r.IntN(150))
			for i := range corpus {
				corpus[i] = randomProblem(r)
			}
			market.SeedListings(t, e.svc, len(corpus), func(i int) string { return corpus[i] })
			for i := range corpus {
				if r.IntN(5) == 0 {
					if _, err := e.svc.Deactivate(ctx, anon, fmt.Sprintf("lst_seed%08d", i), market.DeactivateRequest{Agent: "g17-seed"}, idem.Request{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for q := range 150 {
				req := randomQuery(r, corpus)
				want, err := e.svc.SearchScan(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				wb, _ := json.Marshal(want)
				for _, n := range []int{4, 32, 1 << 15} {
					got, err := e.svc.WithCommonPostings(n).Search(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					if gb, _ := json.Marshal(got); string(gb) != string(wb) {
						t.Fatalf("query %d %+v, common past %d:\n got %s\nwant %s", q, req, n, brief(got), brief(want))
					}
				}
			}
		})
	}
}

// TestService_Search_legacyStore opens a store written before the token
// index: until the index is built, search scans; New builds it.
func TestService_Search_legacyStore(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	r := rand.New(rand.NewPCG(3, 4))
	corpus := make([]string, 1234)
	for i := range corpus {
		corpus[i] = randomProblem(r)
	}
	market.SeedLegacyListings(t, e.svc, len(corpus), func(i int) string { return corpus[i] })
	market.ForgetIndex(t, e.svc.Store())
	reqs := make([]market.SearchRequest, 40)
	for i := range reqs {
		reqs[i] = randomQuery(r, corpus)
	}
	check := func(svc *market.Service) {
		t.Helper()
		for _, req := range reqs {
			want, err := svc.SearchScan(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := svc.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wb, _ := json.Marshal(want)
			if gb, _ := json.Marshal(got); string(gb) != string(wb) {
				t.Fatalf("%+v:\n got %s\nwant %s", req, brief(got), brief(want))
			}
		}
	}
	// Not marked complete: the scan answers, so legacy listings are found.
	if market.IndexComplete(t, e.svc.Store()) {
		t.Fatal("index complete before it was built")
	}
	if res, err := e.svc.Search(ctx, market.SearchRequest{Query: corpus[7]}); err != nil || res.Count == 0 || res.Results[0].Match.Class != market.ClassExact {
		t.Fatalf("legacy listing not found: %+v %v", res, err)
	}
	check(e.svc)
	svc := e.svc.Reopen(t)
	if !market.IndexComplete(t, svc.Store()) {
		t.Fatal("index not complete after New")
	}
	check(svc)
	check(svc.WithCommonPostings(8))
}

func brief(r market.Results) string {
	var b strings.Builder
	for _, x := range r.Results {
		fmt.Fprintf(&b, "%s %v %s; ", x.ListingID, x.Match.Confidence, x.Match.Class)
	}
	return b.String()
}

// TestService_Browse: without a query, search lists the active listings,
// newest first, a page at a time; the pages together are every active
// listing once.
func TestService_Browse(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var ids []string // in publication order
	for i, gap := range []time.Duration{0, time.Minute, 0, time.Second, time.Hour} {
		e.ck.Add(gap) // two listings of one instant: the later id first
		ids = append(ids, e.publishSquares(t, "seller", fmt.Sprintf("table %d of the squares of 3 integers", i)))
	}
	if _, err := e.svc.Deactivate(ctx, anon, ids[3], market.DeactivateRequest{Agent: "seller"}, idem.Request{}); err != nil {
		t.Fatal(err)
	}
	want := []string{ids[4], ids[2], ids[1], ids[0]}

	all := must(e.svc.Search(ctx, market.SearchRequest{}))(t)
	if got := listingIDs(all); !slices.Equal(got, want) || all.Count != 4 || all.NextCursor != "" || all.NoReliableMatch {
		t.Fatalf("browse %v next %q, want %v", got, all.NextCursor, want)
	}
	for _, r := range all.Results {
		if r.Match != nil {
			t.Fatalf("a browsed listing has a match: %+v", r.Match)
		}
	}
	var paged []string
	req := market.SearchRequest{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 2 {
			t.Fatal("more pages than listings")
		}
		res := must(e.svc.Search(ctx, req))(t)
		paged = append(paged, listingIDs(res)...)
		if res.NextCursor == "" {
			break
		}
		req.Cursor = res.NextCursor
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("pages %v, want %v", paged, want)
	}

	for _, tc := range []struct {
		name string
		req  market.SearchRequest
		code string
	}{
		{"ErrCursor", market.SearchRequest{Cursor: "page-2"}, "invalid_query"},
		{"ErrCursorID", market.SearchRequest{Cursor: "12.contract_1"}, "invalid_query"},
		{"ErrCursorSearch", market.SearchRequest{Query: "squares", Cursor: "1.lst_x"}, "invalid_query"},
		{"ErrLimit", market.SearchRequest{Limit: 101}, "invalid_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Search(ctx, tc.req)
			wantCode(t, err, tc.code)
		})
	}
}

func listingIDs(r market.Results) []string {
	var out []string
	for _, x := range r.Results {
		out = append(out, x.ListingID)
	}
	return out
}

// TestService_Search_plural: "primes" finds the listing whose problem
// says "prime numbers", as a strong match.
func TestService_Search_plural(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	market.SeedListings(t, e.svc, 2, func(i int) string {
		return []string{"The first 10 prime numbers, as a JSON list.", "Squares of the integers 1 to 4."}[i]
	})
	for _, svc := range []*market.Service{e.svc, e.svc.WithCommonPostings(0)} {
		res := must(svc.Search(ctx, market.SearchRequest{Query: "primes"}))(t)
		if res.Count != 1 || res.Results[0].ListingID != "lst_seed00000000" || res.Results[0].Match.Class != market.ClassStrong {
			t.Fatalf("primes found %s", brief(res))
		}
	}
}
