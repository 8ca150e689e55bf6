package metrics_test

import (
	"bytes"
	"errors"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/metrics"
)

func scrape(t *testing.T, m *metrics.Metrics) metrics.Scrape {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	s, err := metrics.Parse(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMetrics_Observe(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	before := scrape(t, m)
	for _, d := range []time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond, 4 * time.Second} {
		m.ObserveRequest("/contracts/:id", "GET", 200, d)
	}
	m.ObserveRequest("/contracts/:id", "GET", 404, time.Millisecond)
	m.ObserveRun("wasm", "pass", "compiler", 12345, time.Millisecond)
	m.ReceiptSigned("AssayVerdict")
	var nilm *metrics.Metrics
	nilm.ObserveRequest("/", "GET", 200, 0) // records nothing, does not panic
	after := scrape(t, m)
	if got := after.Sum("assay_http_requests_total", map[string]string{"status": "200"}); got != 4 {
		t.Errorf("requests with status 200: %v, want 4", got)
	}
	if got := after.Sum("assay_checker_runs_total", map[string]string{"kind": "wasm", "outcome": "pass"}); got != 1 {
		t.Errorf("runs: %v, want 1", got)
	}
	if got := after.Sum("assay_receipts_signed_total", nil); got != 1 {
		t.Errorf("receipts: %v, want 1", got)
	}
	h := after.Histogram("assay_http_request_duration_seconds", nil).Sub(before.Histogram("assay_http_request_duration_seconds", nil))
	if h.Count() != 5 {
		t.Fatalf("histogram delta counts %v, want 5", h.Count())
	}
	// Ranks: p50 is the 2.5th of 5, in (0.0025, 0.005] holding 2 of them
	// after 1 at or below 0.0025 (1 ms) ... interpolated.
	if p50 := h.Quantile(0.5); p50 <= 0.0025 || p50 > 0.005 {
		t.Errorf("p50 %v, want in (0.0025, 0.005]", p50)
	}
	if p99 := h.Quantile(0.99); p99 <= 2.5 || p99 > 5 {
		t.Errorf("p99 %v, want in (2.5, 5]", p99)
	}
	if q := (metrics.Histogram{}).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("empty histogram's quantile %v, want NaN", q)
	}
}

func TestCached(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	calls := 0
	fn := metrics.Cached(10*time.Second, func() time.Time { return now }, func() (int, error) {
		calls++
		return calls, nil
	})
	for _, step := range []struct {
		advance time.Duration
		want    int
	}{{0, 1}, {5 * time.Second, 1}, {5 * time.Second, 2}, {time.Second, 2}} {
		now = now.Add(step.advance)
		if got, _ := fn(); got != step.want {
			t.Errorf("after %v: %d, want %d", step.advance, got, step.want)
		}
	}
}

func TestHeldCollector(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	fail := false
	if err := m.Register(metrics.HeldCollector(func() ([]metrics.Holding, error) {
		if fail {
			return nil, errors.New("store closed")
		}
		return []metrics.Holding{{Service: "escrow", Hold: "payment", Currency: "credits", Amount: 150}}, nil
	})); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, m).Sum("assay_money_held", map[string]string{"service": "escrow", "currency": "credits"}); got != 150 {
		t.Errorf("held %v, want 150", got)
	}
	fail = true
	s := scrape(t, m)
	if s["assay_money_held"] != nil || s["go_goroutines"] == nil {
		t.Errorf("a failing ledger read: held %v, go_goroutines %v; want only held left out", s["assay_money_held"], s["go_goroutines"])
	}
}
