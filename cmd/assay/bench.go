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
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/storage"
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
	fmt.Fprintln(stderr, "usage: assay bench court [--base URL[,URL...]] [--versus URL[,URL...] [--versus-pid PID] [--rounds N]] [--clients N[,N...]] [--cases N | --duration D] [--warmup N] [--dispute-every K] [--fsync-dir DIR] [--json]")
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
		clients      = fs.String("clients", "64", "concurrent `clients`, each driving whole cases one after another; a comma-separated list (2,8,32,128) runs once per count and prints a table")
		cases        = fs.Int("cases", 4000, "cases to drive in each run")
		duration     = fs.Duration("duration", 0, "run each client count this long instead of for --cases (e.g. 8s)")
		warmup       = fs.Int("warmup", 0, "cases driven before the first run, not measured")
		disputeEvery = fs.Int("dispute-every", 2, "every K-th case ends in a dispute, the rest in accept (0: none)")
		floorDir     = fs.String("fsync-dir", envOr("ASSAY_DATA", "."), "measure the disk's floor in `DIR` (the server's data disk): 4 KiB writes each made durable by fdatasync, before and after the runs; empty: do not")
		floorN       = fs.Int("fsync-writes", 100, "timed writes of the floor, before and again after the runs")
		asJSON       = fs.Bool("json", false, "print the result as JSON: one run's object, or {\"floor\", \"runs\"} for a list of client counts (with --versus, {\"floor\", \"pairs\"})")
		versus       = fs.String("versus", "", "other servers' base `URLs` to compare with --base's (a server with another setting, on the same machine): each client count runs --rounds times on each, alternating, and the table compares them")
		versusPID    = fs.Int("versus-pid", 0, "the process id of the --versus server, whose CPU is read from /proc/`PID`/stat (a server without /metrics, such as the seed's own service)")
		rounds       = fs.Int("rounds", 5, "with --versus, how many runs each side gets at each client count, in alternation")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	bases := splitBases(*base)
	counts, cerr := parseCounts(*clients)
	others := splitBases(*versus)
	if cerr != nil || *cases < 1 || *duration < 0 || *warmup < 0 || *disputeEvery < 0 || *floorN < 1 || len(bases) == 0 || *rounds < 1 || *versus != "" && len(others) == 0 || *versusPID < 0 || *versusPID > 0 && *versus == "" {
		fmt.Fprintln(stderr, "assay bench court: --base (and --versus, when given) must name a server, --clients must be positive counts, --cases, --rounds and --fsync-writes positive, --duration, --warmup and --dispute-every not negative, --versus-pid only with --versus")
		return exitUsage
	}
	ctx := context.Background()
	var floor []time.Duration
	measureFloor := func() error {
		if *floorDir == "" {
			return nil
		}
		d, err := storage.DiskFloor(*floorDir, *floorN)
		floor = append(floor, d...)
		return err
	}
	if err := measureFloor(); err != nil {
		fmt.Fprintf(stderr, "assay bench court: %v\n", err)
		return exitNo
	}
	sides := [][]string{bases}
	if len(others) > 0 {
		sides = append(sides, others)
	}
	if *warmup > 0 {
		for i, side := range sides {
			l := courtLoad{Bases: side, Clients: counts[len(counts)-1], Cases: *warmup, DisputeEvery: *disputeEvery}
			if i == 1 {
				l.PID = *versusPID
			}
			if _, err := benchCourt(ctx, l); err != nil {
				fmt.Fprintf(stderr, "assay bench court: warm-up: %v\n", err)
				return exitNo
			}
		}
	}
	var runs []courtResult
	var pairs []courtPair
	failed := false
	for _, n := range counts {
		load := courtLoad{Clients: n, Cases: *cases, Duration: *duration, DisputeEvery: *disputeEvery}
		if len(sides) == 1 {
			load.Bases = bases
			res, err := benchCourt(ctx, load)
			if err != nil {
				fmt.Fprintf(stderr, "assay bench court: %v\n", err)
				return exitNo
			}
			failed = failed || res.Errors > 0
			runs = append(runs, res)
			continue
		}
		p, err := benchPair(ctx, load, bases, others, *versusPID, *rounds)
		if err != nil {
			fmt.Fprintf(stderr, "assay bench court: %v\n", err)
			return exitNo
		}
		for _, r := range slices.Concat(p.Base, p.Versus) {
			failed = failed || r.Errors > 0
		}
		pairs = append(pairs, p)
	}
	if err := measureFloor(); err != nil {
		fmt.Fprintf(stderr, "assay bench court: %v\n", err)
		return exitNo
	}
	var fl *diskFloor
	if len(floor) > 0 {
		fl = &diskFloor{Dir: *floorDir, Writes: len(floor), BlockBytes: storage.FloorBlock}
		fl.P50NS, fl.P99NS = percentiles(floor)
		fl.FourNS = 4 * fl.P50NS
		for i := range runs {
			runs[i].FloorRatio = float64(runs[i].CaseP50NS) / float64(fl.FourNS)
		}
	}
	if len(pairs) > 0 {
		if *asJSON {
			json.NewEncoder(stdout).Encode(struct {
				Floor *diskFloor  `json:"floor,omitempty"`
				Pairs []courtPair `json:"pairs"`
			}{fl, pairs})
		} else {
			printPairs(stdout, pairs, fl)
		}
		if failed {
			return exitNo
		}
		return exitOK
	}
	switch {
	case *asJSON && len(runs) == 1:
		runs[0].Floor = fl
		json.NewEncoder(stdout).Encode(runs[0])
	case *asJSON:
		json.NewEncoder(stdout).Encode(struct {
			Floor *diskFloor    `json:"floor,omitempty"`
			Runs  []courtResult `json:"runs"`
		}{fl, runs})
	case len(runs) == 1:
		printRun(stdout, runs[0], fl)
	default:
		printTable(stdout, runs, fl)
	}
	if failed {
		return exitNo
	}
	return exitOK
}

// parseCounts reads a comma-separated list of positive client counts.
func parseCounts(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad client count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// diskFloor is what DiskFloor measured: the latency of one durable 4 KiB
// write on the data disk, and four of them, a whole case's floor.
type diskFloor struct {
	Dir        string `json:"dir"`
	Writes     int    `json:"writes"`
	BlockBytes int    `json:"block_bytes"`
	P50NS      int64  `json:"p50_ns"`
	P99NS      int64  `json:"p99_ns"`
	FourNS     int64  `json:"four_p50_ns"`
}

func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 2, 64) }

// us writes microseconds, or - for none.
func us(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// cpuUS is the servers' CPU a case, or - when their /metrics were not read.
func cpuUS(sv *serverLatency) string {
	if sv == nil {
		return "-"
	}
	return us(sv.CPUUSPerCase)
}

// faults is the servers' page faults a case, in parentheses, or nothing
// when their /metrics were not read or report none.
func faults(sv *serverLatency) string {
	if sv == nil || sv.PageFaultsPerCase <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f page faults)", sv.PageFaultsPerCase)
}

func printFloor(w io.Writer, fl *diskFloor) {
	if fl == nil {
		return
	}
	fmt.Fprintf(w, "disk floor in %s: %d writes of %d bytes, each made durable by fdatasync: p50 %s ms, p99 %s ms; four in a row (one case's writes): %s ms\n",
		fl.Dir, fl.Writes, fl.BlockBytes, ms(fl.P50NS), ms(fl.P99NS), ms(fl.FourNS))
}

func printRun(w io.Writer, res courtResult, fl *diskFloor) {
	fmt.Fprintf(w, "%d cases (%d accepted, %d disputed) by %d clients on %d node(s) in %s (load %s)\n",
		res.Cases, res.Accepted, res.Disputed, res.Clients, res.Nodes, time.Duration(res.ElapsedNS).Round(time.Millisecond), res.Load)
	fmt.Fprintf(w, "%.0f cases/s, %.0f requests/s\n", res.CasesPerSec, res.RequestsPerSec)
	fmt.Fprintf(w, "case latency p50 %s p99 %s; request latency p50 %s p99 %s\n",
		time.Duration(res.CaseP50NS), time.Duration(res.CaseP99NS), time.Duration(res.RequestP50NS), time.Duration(res.RequestP99NS))
	if sv := res.Server; sv != nil && sv.Requests > 0 {
		fmt.Fprintf(w, "server-side (/metrics, from histogram buckets): %d requests, p50 %s p99 %s\n",
			sv.Requests, time.Duration(sv.P50NS).Round(time.Microsecond), time.Duration(sv.P99NS).Round(time.Microsecond))
		for _, r := range slices.Sorted(maps.Keys(sv.Routes)) {
			l := sv.Routes[r]
			fmt.Fprintf(w, "  %-4s %-26s %6d  p50 %-10s p99 %s\n", l.Method, l.Route, l.Requests,
				time.Duration(l.P50NS).Round(time.Microsecond), time.Duration(l.P99NS).Round(time.Microsecond))
		}
	} else if res.ServerNote != "" {
		fmt.Fprintf(w, "server-side latency: %s\n", res.ServerNote)
	}
	fmt.Fprintf(w, "CPU a case: servers %s µs%s, this load generator %s µs\n", cpuUS(res.Server), faults(res.Server), us(res.ClientCPUUS))
	printInclusion(w, res)
	printFloor(w, fl)
	if fl != nil {
		fmt.Fprintf(w, "case p50 / four durable writes: %.2fx\n", res.FloorRatio)
	}
	if res.Errors > 0 {
		fmt.Fprintf(w, "%d cases failed; first error: %s\n", res.Errors, res.FirstError)
	}
}

// printInclusion prints the time from a receipt to its inclusion proof
// in the run, when the servers keep a transparency log.
func printInclusion(w io.Writer, r courtResult) {
	if r.Server == nil || r.Server.Inclusion == nil {
		return
	}
	in := r.Server.Inclusion
	fmt.Fprintf(w, "%d clients: from a receipt to its inclusion proof (the transparency log, %d receipts): p50 %s ms, p99 %s ms\n",
		r.Clients, in.Receipts, ms(in.P50NS), ms(in.P99NS))
}

// printTable prints one line per client count, then the disk's floor.
func printTable(w io.Writer, runs []courtResult, fl *diskFloor) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "service\tclients\tcases\tcases/s\tcase p50 ms\tcase p99 ms\trequest p50 ms\trequest p99 ms\tserver p99 ms\tp50 / 4 fsyncs\tserver CPU µs/case\tserver page faults/case\tclient CPU µs/case\terrors\tload\t")
	for _, r := range runs {
		sv, ratio, pf := "-", "-", "-"
		if r.Server != nil && r.Server.Requests > 0 {
			sv = ms(r.Server.P99NS)
			if r.Server.PageFaultsPerCase > 0 {
				pf = strconv.FormatFloat(r.Server.PageFaultsPerCase, 'f', 1, 64)
			}
		}
		if fl != nil {
			ratio = strconv.FormatFloat(r.FloorRatio, 'f', 2, 64) + "x"
		}
		svc := r.Service
		if svc == "" {
			svc = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", svc, r.Clients, r.Cases, r.CasesPerSec,
			ms(r.CaseP50NS), ms(r.CaseP99NS), ms(r.RequestP50NS), ms(r.RequestP99NS), sv, ratio, cpuUS(r.Server), pf, us(r.ClientCPUUS), r.Errors, r.Load)
	}
	tw.Flush()
	for _, r := range runs {
		printInclusion(w, r)
	}
	printFloor(w, fl)
	for _, r := range runs {
		if r.Errors > 0 {
			fmt.Fprintf(w, "%d clients: %d cases failed; first error: %s\n", r.Clients, r.Errors, r.FirstError)
		}
	}
}

// courtPair is one client count run on two sets of servers in
// alternation: Base (--base) and Versus (--versus), Rounds runs each.
type courtPair struct {
	Clients int           `json:"clients"`
	Base    []courtResult `json:"base"`
	Versus  []courtResult `json:"versus"`
	// Ratio is the median of Versus's cases/s over the median of Base's.
	Ratio float64 `json:"versus_over_base"`
}

// benchPair runs l on base and on versus (whose CPU is read from
// /proc/versusPID when versusPID is positive), rounds times each, in
// alternation: base first in the odd rounds, versus first in the even
// ones, so that a drift of the machine over the run weighs on both.
func benchPair(ctx context.Context, l courtLoad, base, versus []string, versusPID, rounds int) (courtPair, error) {
	p := courtPair{Clients: l.Clients}
	for i := range rounds {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, other := range order {
			l.Bases, l.PID = base, 0
			if other {
				l.Bases, l.PID = versus, versusPID
			}
			res, err := benchCourt(ctx, l)
			if err != nil {
				return p, err
			}
			if other {
				p.Versus = append(p.Versus, res)
			} else {
				p.Base = append(p.Base, res)
			}
		}
	}
	p.Ratio = medianRate(p.Versus) / medianRate(p.Base)
	return p, nil
}

// medianRate is the median cases/s of runs.
func medianRate(runs []courtResult) float64 {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.CasesPerSec
	}
	slices.Sort(rates)
	if n := len(rates); n%2 == 0 {
		return (rates[n/2-1] + rates[n/2]) / 2
	}
	return rates[len(rates)/2]
}

// printPairs prints each run of each pair, base and versus in the order
// they ran, then each pair's medians and their ratio.
func printPairs(w io.Writer, pairs []courtPair, fl *diskFloor) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tround\tservers\tcases\tcases/s\tcase p50 ms\tcase p99 ms\tserver CPU µs/case\tinclusion p50 ms\tinclusion p99 ms\terrors\tload\t")
	row := func(clients, round int, side string, r courtResult) {
		p50, p99 := "-", "-"
		if r.Server != nil && r.Server.Inclusion != nil {
			p50, p99 = ms(r.Server.Inclusion.P50NS), ms(r.Server.Inclusion.P99NS)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", clients, round, side, r.Cases, r.CasesPerSec,
			ms(r.CaseP50NS), ms(r.CaseP99NS), cpuUS(r.Server), p50, p99, r.Errors, r.Load)
	}
	for _, p := range pairs {
		for i := range p.Base {
			if i%2 == 0 {
				row(p.Clients, i+1, "base", p.Base[i])
				row(p.Clients, i+1, "versus", p.Versus[i])
			} else {
				row(p.Clients, i+1, "versus", p.Versus[i])
				row(p.Clients, i+1, "base", p.Base[i])
			}
		}
	}
	tw.Flush()
	for _, p := range pairs {
		fmt.Fprintf(w, "%d clients: base median %.0f cases/s, versus median %.0f cases/s: versus/base %.3f\n",
			p.Clients, medianRate(p.Base), medianRate(p.Versus), p.Ratio)
	}
	printFloor(w, fl)
	for _, p := range pairs {
		for _, r := range slices.Concat(p.Base, p.Versus) {
			if r.Errors > 0 {
				fmt.Fprintf(w, "%d clients: %d cases failed; first error: %s\n", r.Clients, r.Errors, r.FirstError)
			}
		}
	}
}

// courtLoad describes a load run against the escrow court.
type courtLoad struct {
	Bases        []string // client i drives its cases on Bases[i%len(Bases)]
	Clients      int
	Cases        int
	Duration     time.Duration // when positive, drive cases until it has passed, not Cases
	DisputeEvery int
	// PID, when positive, is the one server's process, whose CPU is read
	// from /proc/PID/stat: for a server that serves no /metrics.
	PID int
}

// courtResult is what a load run measured.
type courtResult struct {
	// Service names the service driven when a run compares two
	// (--versus): "assay" or "versus".
	Service        string  `json:"service,omitempty"`
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
	// Load is the machine's load average (1, 5, 15 minutes) as the run
	// started, from /proc/loadavg; empty where there is none.
	Load string `json:"load,omitempty"`
	// FloorRatio is CaseP50NS over four durable writes of the disk's
	// floor (Floor); zero when the floor was not measured.
	FloorRatio float64    `json:"p50_over_four_fsyncs,omitempty"`
	Floor      *diskFloor `json:"floor,omitempty"`
	// Server is what the servers' /metrics saw of the run; nil, with
	// ServerNote saying why, when a base serves no /metrics.
	Server     *serverLatency `json:"server,omitempty"`
	ServerNote string         `json:"server_note,omitempty"`
	// ClientCPUUS is the CPU time this load generator spent a case, in
	// microseconds (user and system; zero where the system does not
	// say): on a machine it shares with the server, what the clients take
	// from it.
	ClientCPUUS float64 `json:"client_cpu_us_per_case,omitempty"`
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
	// CPUSeconds is the CPU time the servers' processes spent over the
	// run (process_cpu_seconds_total, summed over the bases), and
	// CPUUSPerCase the same a case, in microseconds.
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUUSPerCase float64 `json:"cpu_us_per_case,omitempty"`
	// PageFaults is the page faults the servers took over the run
	// (metrics.PageFaults, summed over the bases), and PageFaultsPerCase
	// the same a case: where faults are slow, a share of the CPU that a
	// CPU profile puts on whatever code touched the page.
	PageFaults        float64 `json:"page_faults"`
	PageFaultsPerCase float64 `json:"page_faults_per_case,omitempty"`
	// Inclusion is the time from a receipt to its inclusion proof over
	// the run (the servers' assay_log_inclusion_seconds); nil when they
	// keep no transparency log.
	Inclusion *inclusionLatency `json:"inclusion,omitempty"`
}

// inclusionLatency is how long the receipts of a run waited for a
// published checkpoint of the transparency log to include them.
type inclusionLatency struct {
	Receipts int64 `json:"receipts"`
	P50NS    int64 `json:"p50_ns"`
	P99NS    int64 `json:"p99_ns"`
}

type routeLatency struct {
	Method   string `json:"method"`
	Route    string `json:"route"`
	Requests int64  `json:"requests"`
	P50NS    int64  `json:"p50_ns"`
	P99NS    int64  `json:"p99_ns"`
}

// requestHistogram is the request latency histogram's name, processCPU
// the process collector's CPU counter.
const (
	requestHistogram = "assay_http_request_duration_seconds"
	processCPU       = "process_cpu_seconds_total"
)

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
	var incl metrics.Histogram
	for i := range after {
		sv.CPUSeconds += after[i].Sum(processCPU, nil) - before[i].Sum(processCPU, nil)
		sv.PageFaults += after[i].Sum(metrics.PageFaults, nil) - before[i].Sum(metrics.PageFaults, nil)
		incl = incl.Add(after[i].Histogram(logInclusion, nil).Sub(before[i].Histogram(logInclusion, nil)))
	}
	if incl.Count() > 0 {
		sv.Inclusion = &inclusionLatency{Receipts: int64(incl.Count()), P50NS: ns(incl, 0.5), P99NS: ns(incl, 0.99)}
	}
	for k, h := range byRoute {
		sv.Routes[k[0]+" "+k[1]] = routeLatency{Method: k[0], Route: k[1], Requests: int64(h.Count()), P50NS: ns(h, 0.5), P99NS: ns(h, 0.99)}
	}
	return sv
}

// benchCourt drives whole cases (create, fund, deliver, then accept or
// dispute) from concurrent clients, each case through the seed's routes,
// and measures throughput and latency. The clients share the machine with
// the server they measure, so they are cheap: fasthttp with one kept-alive
// connection per client, and request and response buffers reused.
func benchCourt(ctx context.Context, l courtLoad) (courtResult, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	hosts := make([]*fasthttp.HostClient, len(l.Bases))
	for i, b := range l.Bases {
		if err := probe(ctx, client, b); err != nil {
			return courtResult{}, err
		}
		u, err := url.Parse(b)
		if err != nil || u.Host == "" {
			return courtResult{}, fmt.Errorf("bad base URL %q", b)
		}
		hosts[i] = &fasthttp.HostClient{Addr: u.Host, IsTLS: u.Scheme == "https", MaxConns: l.Clients,
			ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxIdleConnDuration: time.Minute}
	}
	var before []metrics.Scrape
	var scrapeErr error
	var pidCPU0 time.Duration
	if l.PID > 0 {
		if pidCPU0, scrapeErr = pidCPUTime(l.PID); scrapeErr != nil {
			return courtResult{}, scrapeErr
		}
	} else {
		before, scrapeErr = scrapeBases(ctx, client, l.Bases)
	}
	var (
		next     atomic.Int64
		mu       sync.Mutex
		caseLat  = make([]time.Duration, 0, l.Cases)
		reqLat   = make([]time.Duration, 0, l.Cases*4)
		res      = courtResult{Clients: l.Clients, Nodes: len(l.Bases), Load: loadAverage()}
		firstErr error
		wg       sync.WaitGroup
	)
	cpu0 := processCPUTime()
	start := time.Now()
	deadline := start.Add(l.Duration)
	for c := range l.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newCaseClient(hosts[c%len(hosts)], l.Bases[c%len(l.Bases)], c)
			defer cl.release()
			var cases, reqs []time.Duration
			accepted, disputed, failed := 0, 0, 0
			var err1 error
			for {
				i := int(next.Add(1)) - 1
				if l.Duration > 0 && !time.Now().Before(deadline) || l.Duration <= 0 && i >= l.Cases {
					break
				}
				dispute := l.DisputeEvery > 0 && i%l.DisputeEvery == 0
				t0 := time.Now()
				err := cl.drive(i, dispute, &reqs)
				took := time.Since(t0)
				switch {
				case err != nil:
					failed++
					if err1 == nil {
						err1 = err
					}
				case dispute:
					disputed++
					cases = append(cases, took)
				default:
					accepted++
					cases = append(cases, took)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			caseLat = append(caseLat, cases...)
			reqLat = append(reqLat, reqs...)
			res.Accepted += accepted
			res.Disputed += disputed
			res.Errors += failed
			if firstErr == nil {
				firstErr = err1
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPUTime() - cpu0
	res.Cases = res.Accepted + res.Disputed
	if res.Cases > 0 {
		res.ClientCPUUS = float64(cpu.Microseconds()) / float64(res.Cases)
	}
	res.ElapsedNS = elapsed.Nanoseconds()
	res.CasesPerSec = float64(res.Cases) / elapsed.Seconds()
	res.RequestsPerSec = float64(len(reqLat)) / elapsed.Seconds()
	res.CaseP50NS, res.CaseP99NS = percentiles(caseLat)
	res.RequestP50NS, res.RequestP99NS = percentiles(reqLat)
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	var after []metrics.Scrape
	switch {
	case l.PID > 0:
		pidCPU, err := pidCPUTime(l.PID)
		if err != nil {
			return courtResult{}, err
		}
		res.Server = &serverLatency{CPUSeconds: (pidCPU - pidCPU0).Seconds(), Routes: map[string]routeLatency{}}
		if res.Cases > 0 {
			res.Server.CPUUSPerCase = res.Server.CPUSeconds * 1e6 / float64(res.Cases)
		}
		return res, nil
	case scrapeErr == nil:
		after, scrapeErr = scrapeBases(ctx, client, l.Bases)
	}
	if scrapeErr != nil {
		res.ServerNote = scrapeErr.Error()
	} else {
		res.Server = latencyDelta(before, after)
		if res.Cases > 0 {
			res.Server.CPUUSPerCase = res.Server.CPUSeconds * 1e6 / float64(res.Cases)
			res.Server.PageFaultsPerCase = res.Server.PageFaults / float64(res.Cases)
		}
	}
	return res, nil
}

// pidCPUTime reads the CPU time process pid has used, user and system,
// from /proc/PID/stat (its 14th and 15th fields, in clock ticks of 10 ms,
// Linux's USER_HZ).
func pidCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("the CPU of process %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("the CPU of process %d: /proc/%d/stat does not read as stat", pid, pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("the CPU of process %d: /proc/%d/stat does not read as stat", pid, pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// loadAverage returns the first three fields of /proc/loadavg, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// caseClient is one client of a load run: its connection pool, and the
// request, response and body buffers it reuses from case to case.
type caseClient struct {
	host  *fasthttp.HostClient
	base  string
	n     int
	req   *fasthttp.Request
	resp  *fasthttp.Response
	body  []byte
	url   []byte
	id    []byte
	reply struct {
		ContractID        string `json:"contract_id"`
		CredentialSubject struct {
			Verdict string `json:"verdict"`
		} `json:"credentialSubject"`
	}
}

func newCaseClient(host *fasthttp.HostClient, base string, n int) *caseClient {
	return &caseClient{host: host, base: base, n: n, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
}

func (cl *caseClient) release() {
	fasthttp.ReleaseRequest(cl.req)
	fasthttp.ReleaseResponse(cl.resp)
}

// drive runs case i; rows decides the verdict of a dispute (a dispute
// against 3 rows when 2 were promised is decided release).
func (cl *caseClient) drive(i int, dispute bool, lats *[]time.Duration) error {
	b := append(cl.body[:0], `{"buyer":"did:bench:buyer-`...)
	b = strconv.AppendInt(b, int64(cl.n), 10)
	b = append(b, `","seller":"did:bench:seller-`...)
	b = strconv.AppendInt(b, int64(i%97), 10)
	b = append(b, `","price":`...)
	b = strconv.AppendInt(b, int64(10+i%90), 10)
	b = append(b, `,"acceptance":{"schema":{"type":"object","required":["rows"]},"assertions":[{"path":"rows","op":"gte","value":`...)
	b = strconv.AppendInt(b, int64(2+i%2), 10)
	b = append(b, `},{"path":"rows","op":"lte","value":1000}]}}`...)
	cl.body = b
	if err := cl.post("/contracts", "", b, true, lats); err != nil {
		return err
	}
	if cl.reply.ContractID == "" {
		return errors.New("POST /contracts answered no contract_id")
	}
	cl.id = append(cl.id[:0], cl.reply.ContractID...)
	if err := cl.post("/contracts/", "/fund", []byte(`{}`), false, lats); err != nil {
		return err
	}
	if err := cl.post("/contracts/", "/deliver", []byte(`{"deliverable":{"rows":3},"evidence":{}}`), false, lats); err != nil {
		return err
	}
	if dispute {
		if err := cl.post("/contracts/", "/dispute", []byte(`{"reason":"bench"}`), true, lats); err != nil {
			return err
		}
		if v := cl.reply.CredentialSubject.Verdict; v != "release" && v != "refund" {
			return fmt.Errorf("dispute of %s answered verdict %q", cl.id, v)
		}
		return nil
	}
	return cl.post("/contracts/", "/accept", []byte(`{}`), false, lats)
}

// post sends body to the base's path (the case's id between path and
// suffix when suffix is not empty) and, when decode is set, reads the
// answer into cl.reply.
func (cl *caseClient) post(path, suffix string, body []byte, decode bool, lats *[]time.Duration) error {
	u := append(append(cl.url[:0], cl.base...), path...)
	if suffix != "" {
		u = append(append(u, cl.id...), suffix...)
	}
	cl.url = u
	req, resp := cl.req, cl.resp
	req.Reset()
	resp.Reset()
	req.SetRequestURIBytes(u)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	t0 := time.Now()
	err := cl.host.Do(req, resp)
	*lats = append(*lats, time.Since(t0))
	if err != nil {
		return fmt.Errorf("POST %s: %w", u, err)
	}
	data := resp.Body()
	if st := resp.StatusCode(); st != http.StatusOK && st != http.StatusCreated {
		return fmt.Errorf("POST %s: %d: %s", u, st, bytes.TrimSpace(data))
	}
	if decode {
		cl.reply.ContractID, cl.reply.CredentialSubject.Verdict = "", ""
		if err := json.Unmarshal(data, &cl.reply); err != nil {
			return fmt.Errorf("POST %s: %w", u, err)
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
