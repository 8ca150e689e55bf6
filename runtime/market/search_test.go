package market_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
)

var searchWords = []string{"schedule", "nurses", "hospital", "rota", "primes", "graph", "colouring", "routing", "trucks", "warehouse",
	"budget", "portfolio", "matrix", "inverse", "sudoku", "solver"}

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
