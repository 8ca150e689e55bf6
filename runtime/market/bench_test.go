package market_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
)

// BenchmarkService_Publish publishes a level-1 listing per iteration: the
// checker's sandboxed replay on the artifact, then the listing's
// transaction and signed receipt.
func BenchmarkService_Publish(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	for _, bc := range []struct {
		name    string
		checker *market.CheckerSpec
	}{
		{"wasm", &market.CheckerSpec{SHA256: e.squares}},
		{"python", &market.CheckerSpec{Kind: "python", Source: "rows = artifact.split()\nassert rows[2] == '2' and rows[3] == '4'\n"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.name == "python" {
				if err := exec.Command("go", "doc", "github.com/assayhq/assay/checkers/python").Run(); err != nil {
					b.Skip("checkers/python is not there yet")
				}
			}
			// One untimed publish compiles the checker (and, for Python,
			// takes the interpreter's snapshot): the figure is a warm one.
			if _, err := e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "squares", ProblemStatement: "warm-up " + bc.name,
				Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw("2.50"), Checker: bc.checker}, idem.Request{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_, err := e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "squares", ProblemStatement: fmt.Sprintf("squares %s %d", bc.name, i),
					Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw("2.50"), Checker: bc.checker}, idem.Request{})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkService_Search searches 100,000 listings by query (through the
// token index; every listing holds two of the query's tokens) and by
// fingerprint (exact hits only).
func BenchmarkService_Search(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	words := []string{"schedule", "nurses", "hospital", "rota", "primes", "graph", "colouring", "routing", "trucks", "warehouse",
		"budget", "portfolio", "matrix", "inverse", "sudoku", "solver", "embedding", "dataset", "weather", "forecast"}
	problem := func(i int) string {
		return fmt.Sprintf("%s %s %s %s with %d workers and shift=%d", words[i%20], words[(i/20)%20], words[(i/400)%20], words[(i/7)%20], i%50, i%7)
	}
	const n = 100_000
	market.SeedListings(b, e.svc, n, problem)
	for _, bc := range []struct {
		name string
		req  market.SearchRequest
	}{
		{"query", market.SearchRequest{Query: "schedule nurses hospital rota with 12 workers and shift=3"}},
		{"fingerprint", market.SearchRequest{QueryFingerprint: market.Fingerprint(problem(12345))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := e.svc.Search(ctx, bc.req)
				if err != nil || r.Count == 0 {
					b.Fatal(r.Count, err)
				}
			}
		})
	}
}
