package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/assayhq/assay/internal/metrics"
)

func init() {
	register("bench", "drive load against running servers (assay bench court|replays)", cmdBench)
}

func cmdBench(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "court":
		return cmdBenchCourt(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "replays":
		return cmdBenchReplays(args[1:], stdout, stderr)
	}
	fmt.Fprintln(stderr, "usage: assay bench court [--base URL[,URL...]] [--clients N] [--cases N] [--dispute-every K] [--json]")
	fmt.Fprintln(stderr, "       assay bench replays --store postgres:URL --base URL --checker PATH [--count N] [--json]")
	return exitUsage
}

// splitBases splits a comma-separated list of base URLs.
func splitBases(list string) []string {
	var out []string
	for b := range strings.SplitSeq(list, ",") {
		if b = strings.TrimRight(strings.TrimSpace(b), "/"); b != "" {
			out = append(out, b)
		}
	}
	return out
}

func cmdBenchCourt(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench court", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		base         = fs.String("base", envOr("ASSAY_BASE", "http://127.0.0.1:8080"), "the servers' base `URLs`, comma-separated: clients are spread over them, client i on the i-th modulo their number")
		clients      = fs.Int("clients", 64, "concurrent clients, each driving whole cases one after another")
		cases        = fs.Int("cases", 4000, "cases to drive in all")
		disputeEvery = fs.Int("dispute-every", 2, "every K-th case ends in a dispute, the rest in accept (0: none)")
		asJSON       = fs.Bool("json", false, "print the result as JSON")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	bases := splitBases(*base)
	if *clients < 1 || *cases < 1 || *disputeEvery < 0 || len(bases) == 0 {
		fmt.Fprintln(stderr, "assay bench court: --base must name a server, --clients and --cases must be positive, --dispute-every not negative")
		return exitUsage
	}
	res, err := benchCourt(context.Background(), courtLoad{
		Bases: bases, Clients: *clients, Cases: *cases, DisputeEvery: *disputeEvery,
	})
	if err != nil {
		fmt.Fprintf(stderr, "assay bench court: %v\n", err)
		return exitNo
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "%d cases (%d accepted, %d disputed) by %d clients on %d node(s) in %s\n",
			res.Cases, res.Accepted, res.Disputed, res.Clients, res.Nodes, time.Duration(res.ElapsedNS).Round(time.Millisecond))
		fmt.Fprintf(stdout, "%.0f cases/s, %.0f requests/s\n", res.CasesPerSec, res.RequestsPerSec)
		fmt.Fprintf(stdout, "case latency p50 %s p99 %s; request latency p50 %s p99 %s\n",
			time.Duration(res.CaseP50NS), time.Duration(res.CaseP99NS), time.Duration(res.RequestP50NS), time.Duration(res.RequestP99NS))
		if sv := res.Server; sv != nil {
			fmt.Fprintf(stdout, "server-side (/metrics, from histogram buckets): %d requests, p50 %s p99 %s\n",
				sv.Requests, time.Duration(sv.P50NS).Round(time.Microsecond), time.Duration(sv.P99NS).Round(time.Microsecond))
			for _, r := range slices.Sorted(maps.Keys(sv.Routes)) {
				l := sv.Routes[r]
				fmt.Fprintf(stdout, "  %-4s %-26s %6d  p50 %-10s p99 %s\n", l.Method, l.Route, l.Requests,
					time.Duration(l.P50NS).Round(time.Microsecond), time.Duration(l.P99NS).Round(time.Microsecond))
			}
		} else {
			fmt.Fprintf(stdout, "server-side latency: %s\n", res.ServerNote)
		}
		if res.Errors > 0 {
			fmt.Fprintf(stdout, "%d cases failed; first error: %s\n", res.Errors, res.FirstError)
		}
	}
	if res.Errors > 0 {
		return exitNo
	}
	return exitOK
}

// courtLoad describes a load run against the escrow court.
type courtLoad struct {
	Bases        []string // client i drives its cases on Bases[i%len(Bases)]
	Clients      int
	Cases        int
	DisputeEvery int
}

// courtResult is what a load run measured.
type courtResult struct {
	Clients        int     `json:"clients"`
	Nodes          int     `json:"nodes"`
	Cases          int     `json:"cases"`
	Accepted       int     `json:"accepted"`
	Disputed       int     `json:"disputed"`
	Errors         int     `json:"errors"`
	FirstError     string  `json:"first_error,omitempty"`
	ElapsedNS      int64   `json:"elapsed_ns"`
	CasesPerSec    float64 `json:"cases_per_sec"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	CaseP50NS      int64   `json:"case_p50_ns"`
	CaseP99NS      int64   `json:"case_p99_ns"`
	RequestP50NS   int64   `json:"request_p50_ns"`
	RequestP99NS   int64   `json:"request_p99_ns"`
	// Server is what the servers' /metrics saw of the run; nil, with
	// ServerNote saying why, when a base serves no /metrics.
	Server     *serverLatency `json:"server,omitempty"`
	ServerNote string         `json:"server_note,omitempty"`
}

// serverLatency is the servers' request latency over a run: the change
// of assay_http_request_duration_seconds between a scrape of every base
// before and one after, summed over the bases, /metrics and /health left
// out. Percentiles are estimated within the histogram's buckets, as
// Prometheus' histogram_quantile does.
type serverLatency struct {
	Requests int64                   `json:"requests"`
	P50NS    int64                   `json:"p50_ns"`
	P99NS    int64                   `json:"p99_ns"`
	Routes   map[string]routeLatency `json:"routes"` // by "METHOD route"
}

type routeLatency struct {
	Method   string `json:"method"`
	Route    string `json:"route"`
	Requests int64  `json:"requests"`
	P50NS    int64  `json:"p50_ns"`
	P99NS    int64  `json:"p99_ns"`
}

// requestHistogram is the request latency histogram's name.
const requestHistogram = "assay_http_request_duration_seconds"

// scrapeBases scrapes every base's /metrics.
//
// # Errors
//
// A base that does not answer, or answers /metrics with other than 200
// (a server run with --metrics=false, or one older than /metrics).
func scrapeBases(ctx context.Context, client *http.Client, bases []string) ([]metrics.Scrape, error) {
	var out []metrics.Scrape
	for _, b := range bases {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("no /metrics at %s (%s)", b, resp.Status)
		}
		sc, err := metrics.Parse(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s/metrics: %w", b, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// latencyDelta is the request latency the scrapes after saw that the ones
// before had not.
func latencyDelta(before, after []metrics.Scrape) *serverLatency {
	ns := func(h metrics.Histogram, q float64) int64 { return int64(h.Quantile(q) * 1e9) }
	var all metrics.Histogram
	byRoute := map[[2]string]metrics.Histogram{}
	for i := range after {
		for _, r := range after[i].LabelValues(requestHistogram, "route") {
			if r == "/metrics" || r == "/health" {
				continue
			}
			for _, m := range after[i].LabelValues(requestHistogram, "method") {
				want := map[string]string{"route": r, "method": m}
				d := after[i].Histogram(requestHistogram, want).Sub(before[i].Histogram(requestHistogram, want))
				if d.Count() == 0 {
					continue
				}
				k := [2]string{m, r}
				byRoute[k] = byRoute[k].Add(d)
				all = all.Add(d)
			}
		}
	}
	sv := &serverLatency{Requests: int64(all.Count()), P50NS: ns(all, 0.5), P99NS: ns(all, 0.99), Routes: map[string]routeLatency{}}
	for k, h := range byRoute {
		sv.Routes[k[0]+" "+k[1]] = routeLatency{Method: k[0], Route: k[1], Requests: int64(h.Count()), P50NS: ns(h, 0.5), P99NS: ns(h, 0.99)}
	}
	return sv
}

// benchCourt drives whole cases (create, fund, deliver, then accept or
// dispute) from concurrent clients, each case through the seed's routes,
// and measures throughput and latency.
func benchCourt(ctx context.Context, l courtLoad) (courtResult, error) {
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: l.Clients, MaxIdleConnsPerHost: l.Clients, IdleConnTimeout: time.Minute},
	}
	for _, b := range l.Bases {
		if err := probe(ctx, client, b); err != nil {
			return courtResult{}, err
		}
	}
	before, scrapeErr := scrapeBases(ctx, client, l.Bases)
	var (
		next     atomic.Int64
		mu       sync.Mutex
		caseLat  = make([]time.Duration, 0, l.Cases)
		reqLat   = make([]time.Duration, 0, l.Cases*4)
		res      = courtResult{Clients: l.Clients, Nodes: len(l.Bases)}
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for c := range l.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lats []time.Duration
			for {
				i := int(next.Add(1)) - 1
				if i >= l.Cases {
					break
				}
				dispute := l.DisputeEvery > 0 && i%l.DisputeEvery == 0
				t0 := time.Now()
				lats = lats[:0]
				err := driveCase(ctx, client, l.Bases[c%len(l.Bases)], c, i, dispute, &lats)
				took := time.Since(t0)
				mu.Lock()
				reqLat = append(reqLat, lats...)
				switch {
				case err != nil:
					res.Errors++
					if firstErr == nil {
						firstErr = err
					}
				case dispute:
					res.Disputed++
					caseLat = append(caseLat, took)
				default:
					res.Accepted++
					caseLat = append(caseLat, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res.Cases = res.Accepted + res.Disputed
	res.ElapsedNS = elapsed.Nanoseconds()
	res.CasesPerSec = float64(res.Cases) / elapsed.Seconds()
	res.RequestsPerSec = float64(len(reqLat)) / elapsed.Seconds()
	res.CaseP50NS, res.CaseP99NS = percentiles(caseLat)
	res.RequestP50NS, res.RequestP99NS = percentiles(reqLat)
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	var after []metrics.Scrape
	if scrapeErr == nil {
		after, scrapeErr = scrapeBases(ctx, client, l.Bases)
	}
	if scrapeErr != nil {
		res.ServerNote = scrapeErr.Error()
	} else {
		res.Server = latencyDelta(before, after)
	}
	return res, nil
}

// driveCase runs one case; rows decides the verdict of a dispute (a
// dispute against 3 rows when 2 were promised is decided release).
func driveCase(ctx context.Context, client *http.Client, base string, clientN, i int, dispute bool, lats *[]time.Duration) error {
	var created struct {
		ContractID string `json:"contract_id"`
	}
	body := fmt.Sprintf(`{"buyer":"did:bench:buyer-%d","seller":"did:bench:seller-%d","price":%d,"acceptance":{"schema":{"type":"object","required":["rows"]},"assertions":[{"path":"rows","op":"gte","value":%d},{"path":"rows","op":"lte","value":1000}]}}`,
		clientN, i%97, 10+i%90, 2+i%2)
	if err := post(ctx, client, base+"/contracts", body, &created, lats); err != nil {
		return err
	}
	if created.ContractID == "" {
		return errors.New("POST /contracts answered no contract_id")
	}
	id := base + "/contracts/" + created.ContractID
	if err := post(ctx, client, id+"/fund", `{}`, nil, lats); err != nil {
		return err
	}
	if err := post(ctx, client, id+"/deliver", `{"deliverable":{"rows":3},"evidence":{}}`, nil, lats); err != nil {
		return err
	}
	if dispute {
		var receipt struct {
			CredentialSubject struct {
				Verdict string `json:"verdict"`
			} `json:"credentialSubject"`
		}
		if err := post(ctx, client, id+"/dispute", `{"reason":"bench"}`, &receipt, lats); err != nil {
			return err
		}
		if v := receipt.CredentialSubject.Verdict; v != "release" && v != "refund" {
			return fmt.Errorf("dispute of %s answered verdict %q", created.ContractID, v)
		}
		return nil
	}
	return post(ctx, client, id+"/accept", `{}`, nil, lats)
}

func post(ctx context.Context, client *http.Client, url, body string, out any, lats *[]time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	*lats = append(*lats, time.Since(t0))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("POST %s: %w", url, err)
		}
	}
	return nil
}

// probe checks that a server answers before the clock starts.
func probe(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("no server at %s (start one with make run): %w", base, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/health: %s", base, resp.Status)
	}
	return nil
}

// percentiles returns the 50th and 99th percentiles of d, in nanoseconds.
func percentiles(d []time.Duration) (p50, p99 int64) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	at := func(q float64) int64 { return d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds() }
	return at(0.50), at(0.99)
}
