package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

// mustObservedApp is mustApp with request logs into buf and metrics m.
func mustObservedApp(tb testing.TB, buf *bytes.Buffer, m *metrics.Metrics) *fiber.App {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{3})})
	if err != nil {
		tb.Fatal(err)
	}
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(buf, nil))
	return api.New(api.Config{Court: court, Keys: keys, OperatorToken: token, Version: "test",
		Logger: log, LogRequests: true, Metrics: m})
}

func TestObserve_RequestLog(t *testing.T) {
	var buf bytes.Buffer
	m := metrics.New()
	app := mustObservedApp(t, &buf, m)
	const secret = "body-secret-7f3a"
	r := do(t, app, call{method: "POST", path: "/contracts",
		body:   `{"buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50,"acceptance":{"assertions":[{"path":"note","op":"eq","value":"` + secret + `"}]}}`,
		header: map[string]string{"X-Request-Id": "req-given-1", "Authorization": "Bearer " + token}})
	if got := r.header.Get(api.HeaderRequestID); got != "req-given-1" {
		t.Errorf("X-Request-Id echoed %q, want req-given-1", got)
	}
	id := create(t, app, `{"schema":{"type":"object"}}`)
	fund := do(t, app, call{method: "POST", path: "/contracts/" + id + "/fund", body: "{}"})
	if fund.status != 200 {
		t.Fatalf("fund: %d %s", fund.status, fund.body)
	}
	made := fund.header.Get(api.HeaderRequestID)
	if made == "" || made == "req-given-1" {
		t.Errorf("made-up X-Request-Id %q", made)
	}
	bad := do(t, app, call{method: "GET", path: "/nowhere/" + id, header: map[string]string{"X-Request-Id": "has space"}})
	if bad.status != 404 || bad.header.Get(api.HeaderRequestID) == "has space" {
		t.Errorf("unmatched: %d, id %q", bad.status, bad.header.Get(api.HeaderRequestID))
	}
	do(t, app, call{method: "POST", path: "/contracts/" + id + "/resolve", body: `{"outcome":"release"}`,
		header: map[string]string{"Authorization": "Bearer " + token}})

	text := buf.String()
	for _, leak := range []string{secret, token, id, "nowhere", "did:nanda"} {
		if strings.Contains(text, leak) {
			t.Errorf("the log holds %q:\n%s", leak, text)
		}
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if e["msg"] == "request" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 5 {
		t.Fatalf("%d request lines, want 5:\n%s", len(lines), text)
	}
	want := []struct {
		route  string
		status float64
		id     string
	}{
		{"/contracts", 200, "req-given-1"},
		{"/contracts", 200, ""},
		{"/contracts/:id/fund", 200, made},
		{"unmatched", 404, ""},
		{"/contracts/:id/resolve", 0, ""},
	}
	for i, w := range want {
		e := lines[i]
		if e["route"] != w.route || e["method"] == nil || e["duration"] == nil || e["request_id"] == "" {
			t.Errorf("line %d: %v, want route %s", i, e, w.route)
		}
		if w.status != 0 && e["status"] != w.status {
			t.Errorf("line %d: status %v, want %v", i, e["status"], w.status)
		}
		if w.id != "" && e["request_id"] != w.id {
			t.Errorf("line %d: request_id %v, want %s", i, e["request_id"], w.id)
		}
	}
	if lines[3]["code"] != "route_not_found" {
		t.Errorf("the 404's line has code %v, want route_not_found", lines[3]["code"])
	}

	res := do(t, app, call{method: "GET", path: "/metrics"})
	s, err := metrics.Parse(bytes.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"route": "/contracts", "method": "POST", "status": "200"}, 2},
		{map[string]string{"route": "/contracts/:id/fund", "method": "POST", "status": "200"}, 1},
		{map[string]string{"route": "unmatched", "method": "GET", "status": "404"}, 1},
	} {
		if got := s.Sum("assay_http_requests_total", c.labels); got != c.want {
			t.Errorf("assay_http_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := s.Histogram("assay_http_request_duration_seconds", map[string]string{"route": "/contracts"}).Count(); got != 2 {
		t.Errorf("the /contracts latency histogram counts %v, want 2", got)
	}
}

func TestObserve_NoMetricsRoute(t *testing.T) {
	app := mustApp(t)
	if r := do(t, app, call{method: "GET", path: "/metrics"}); r.status != 404 {
		t.Errorf("GET /metrics without Config.Metrics: %d, want 404", r.status)
	}
}

// BenchmarkObserve: what the request middleware costs a request, with
// neither, metrics, request logs (text, to a discarding writer) or both.
func BenchmarkObserve(b *testing.B) {
	for _, c := range []struct {
		name      string
		log, metr bool
	}{{"Off", false, false}, {"Metrics", false, true}, {"Logs", true, false}, {"Both", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var m *metrics.Metrics
			if c.metr {
				m = metrics.New()
			}
			keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: b.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{3})})
			if err != nil {
				b.Fatal(err)
			}
			db, err := storage.Open("", storage.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: time.Now})
			if err != nil {
				b.Fatal(err)
			}
			app := api.New(api.Config{Court: court, Keys: keys, Version: "test", Metrics: m, LogRequests: c.log,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			h := app.Handler()
			var fc fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				fc.Request.Reset()
				fc.Response.Reset()
				fc.Request.Header.SetMethod("GET")
				fc.Request.SetRequestURI("/healthz")
				h(&fc)
				if fc.Response.StatusCode() != 200 {
					b.Fatal(fc.Response.StatusCode())
				}
			}
		})
	}
}
