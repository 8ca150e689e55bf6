// Package metrics holds Assay's Prometheus registry and every metric it
// exports, in one place: HTTP requests, checker runs, the replay memo, the
// store's commits, receipts and the money held. It imports only the
// standard library and client_golang, so that any layer that needs to
// record something may import it (internal/layout allows api and cmd);
// the layers below api take their observations as func hooks that cmd
// wires to the methods here.
//
// Names follow Prometheus' conventions: an assay_ prefix, base units
// (_seconds), _total on counters. Labels are bounded: route templates,
// methods, statuses, kinds and outcome kinds; never an id or a raw path.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one server's registry and its metrics. Its methods are safe
// for concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	runs            *prometheus.CounterVec
	runFuel         *prometheus.HistogramVec
	runWall         *prometheus.HistogramVec
	commitDuration  prometheus.Histogram
	syncBatch       prometheus.Histogram
	retries         prometheus.Counter
	receipts        *prometheus.CounterVec

	// series holds each (route, method, status) request's counter and
	// histogram once looked up, so that a request costs one map read
	// rather than two label lookups and a status formatted.
	series sync.Map // requestKey -> requestSeries
}

type requestKey struct {
	route, method string
	status        int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// RequestBuckets are the request latency histogram's upper bounds, in
// seconds: from 100 µs (a health check) to 30 s (a large replay batch).
var RequestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// PageFaults is the name of the process's page fault counter, by kind
// (minor, major); it is left out where the system does not report faults.
const PageFaults = "assay_process_page_faults_total"

// New returns a registry holding Assay's metrics and the Go runtime's and
// process's collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assay_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assay_http_request_duration_seconds",
			Help:    "Time from a request's arrival in the handler chain to its answer, by route template and method.",
			Buckets: RequestBuckets,
		}, []string{"route", "method"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assay_checker_runs_total",
			Help: "Checker runs in the sandbox, by checker kind (wasm, python), outcome kind and engine.",
		}, []string{"kind", "outcome", "engine"}),
		runFuel: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assay_checker_fuel_used",
			Help:    "Fuel a checker run used, by checker kind.",
			Buckets: prometheus.ExponentialBuckets(1e3, 10, 9), // 10^3 .. 10^11
		}, []string{"kind"}),
		runWall: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assay_checker_run_duration_seconds",
			Help:    "Wall time of a checker run, by checker kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100 µs .. 26 s
		}, []string{"kind"}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "assay_store_commit_duration_seconds",
			Help:    "Time a store transaction that writes took to commit durably, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 12), // 50 µs .. 1.2 s
		}),
		syncBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "assay_store_sync_batch_commits",
			Help:    "Commits made durable by one group fsync (badger).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "assay_store_retries_total",
			Help: "Store transactions run again after a conflict (badger) or a serialisation failure or deadlock (PostgreSQL).",
		}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assay_receipts_signed_total",
			Help: "Receipts signed, by receipt kind.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.requests, m.requestDuration, m.runs, m.runFuel, m.runWall,
		m.commitDuration, m.syncBatch, m.retries, m.receipts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(systemCollectors()...)
	return m
}

// Handler serves the registry in Prometheus' text format. A collector
// that fails (the ledger unreadable) leaves its metric out of the scrape,
// not the rest; the failures are counted in promhttp_metric_handler_errors_total.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

// Register adds collectors of the caller's own (gauges read at scrape
// time, counters kept elsewhere) to the registry.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ObserveRequest records an answered request. route is the route template
// ("/contracts/:id"), never the raw path.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	k := requestKey{route, method, status}
	v, ok := m.series.Load(k)
	if !ok {
		// The key outlives the request: its own copies, whatever the
		// caller's strings alias.
		k = requestKey{strings.Clone(route), strings.Clone(method), status}
		v, _ = m.series.LoadOrStore(k, requestSeries{
			count:    m.requests.WithLabelValues(route, method, strconv.Itoa(status)),
			duration: m.requestDuration.WithLabelValues(route, method),
		})
	}
	s := v.(requestSeries)
	s.count.Inc()
	s.duration.Observe(d.Seconds())
}

// ObserveRun records a checker run: its kind ("wasm", "python"), its
// outcome's kind ("pass", "fuel_exhausted", …), the engine it ran on
// ("compiler", "interpreter"), the fuel it used and its wall time.
func (m *Metrics) ObserveRun(kind, outcome, engine string, fuel uint64, wall time.Duration) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(kind, outcome, engine).Inc()
	m.runFuel.WithLabelValues(kind).Observe(float64(fuel))
	m.runWall.WithLabelValues(kind).Observe(wall.Seconds())
}

// ObserveCommit records a committed write transaction's duration.
func (m *Metrics) ObserveCommit(d time.Duration) {
	if m == nil {
		return
	}
	m.commitDuration.Observe(d.Seconds())
}

// ObserveSyncBatch records how many commits one group fsync made durable.
func (m *Metrics) ObserveSyncBatch(commits int) {
	if m == nil {
		return
	}
	m.syncBatch.Observe(float64(commits))
}

// ObserveRetry counts a store transaction run again after a conflict.
func (m *Metrics) ObserveRetry() {
	if m == nil {
		return
	}
	m.retries.Inc()
}

// ReceiptSigned counts a signed receipt of kind (bounded: the receipt
// kinds the services define).
func (m *Metrics) ReceiptSigned(kind string) {
	if m == nil {
		return
	}
	m.receipts.WithLabelValues(kind).Inc()
}

// CounterFunc returns a counter read from fn at scrape time, for counts
// another package keeps (the memo's hits, PostgreSQL's retries).
func CounterFunc(name, help string, fn func() float64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn)
}

// GaugeFunc returns a gauge read from fn at scrape time.
func GaugeFunc(name, help string, fn func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
}

// Cached returns fn wrapped so that calls within ttl of a call that
// computed a value answer that value: for gauges that read the store at
// scrape time, so that frequent scrapes cost one read per ttl.
func Cached[T any](ttl time.Duration, now func() time.Time, fn func() (T, error)) func() (T, error) {
	var (
		mu   sync.Mutex
		at   time.Time
		last T
		err  error
	)
	return func() (T, error) {
		mu.Lock()
		defer mu.Unlock()
		if t := now(); at.IsZero() || t.Sub(at) >= ttl {
			last, err = fn()
			at = t
		}
		return last, err
	}
}

// Holding is money held in one service's accounts in one currency, in
// minor units.
type Holding struct {
	Service  string // "escrow", "market"
	Hold     string // what holds it: "payment", "bond"
	Currency string
	Amount   int64
}

// heldDesc describes assay_money_held.
var heldDesc = prometheus.NewDesc("assay_money_held",
	"Money held in the services' hold accounts, in the currency's minor units, read from the ledger at scrape time.",
	[]string{"service", "hold", "currency"}, nil)

// HeldCollector returns a collector of assay_money_held that calls fn at
// each scrape (wrap fn in Cached to bound what scrapes cost). A failing fn
// leaves assay_money_held out of that scrape.
func HeldCollector(fn func() ([]Holding, error)) prometheus.Collector { return held(fn) }

type held func() ([]Holding, error)

func (h held) Describe(ch chan<- *prometheus.Desc) { ch <- heldDesc }

func (h held) Collect(ch chan<- prometheus.Metric) {
	hs, err := h()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(heldDesc, err)
		return
	}
	for _, x := range hs {
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(x.Amount), x.Service, x.Hold, x.Currency)
	}
}
