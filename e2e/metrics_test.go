package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/metrics"
)

// scrape reads and parses s's /metrics with Prometheus' text parser.
func (s *server) scrape(tb testing.TB) metrics.Scrape {
	tb.Helper()
	r := s.get(tb, "/metrics")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		tb.Fatalf("GET /metrics: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	sc, err := metrics.Parse(bytes.NewReader(r.body))
	if err != nil {
		tb.Fatalf("%v\n%s", err, r.body)
	}
	return sc
}

type delta struct {
	name   string
	labels map[string]string
	want   float64
}

func wantDeltas(tb testing.TB, step string, before, after metrics.Scrape, ds []delta) {
	tb.Helper()
	for _, d := range ds {
		if got := after.Sum(d.name, d.labels) - before.Sum(d.name, d.labels); got != d.want {
			tb.Errorf("%s: %s%v moved by %v, want %v", step, d.name, d.labels, got, d.want)
		}
	}
}

func post(route string) map[string]string {
	return map[string]string{"route": route, "method": "POST", "status": "200"}
}

// TestMetrics: a case (create, fund, deliver, dispute with a checker) and
// two replay batches against the real binary move /metrics' counters by
// what they did; request logs are JSON lines without ids or bodies; pprof
// answers on the debug listener only.
func TestMetrics(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), []string{"--log-format", "json", "--debug-addr", "127.0.0.1:0"}, nil, 30*time.Second)
	m := regexp.MustCompile(`(?m)^assay: profiling \(net/http/pprof\) on http://(\S+)/debug/pprof/$`).FindStringSubmatch(s.stdout())
	if m == nil {
		t.Fatalf("the server does not say where its debug listener is:\n%s", s.stdout())
	}
	debug := m[1]

	warmCache(t, filepath.Join("..", "fixtures", "checkers", "rows.wasm"))
	module, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", "rows.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := checkers.SHA256(module)
	s0 := s.scrape(t)

	// One case, decided by the checker: 1 run, 1 verdict receipt.
	if up := s.do(t, "POST", "/checkers", module, "Content-Type", "application/wasm"); up.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	const marker = "deliverable-marker-5c1e"
	acceptance := fmt.Sprintf(`{"checkers":[{"sha256":%q}]}`, sum)
	id := s.deliveredCase(t, "did:e2e:seller", acceptance, `{"min_rows":3,"rows":[{"id":"`+marker+`"}]}`)
	if r := s.post(t, "/contracts/"+id+"/dispute", `{"reason":"too few rows"}`); r.status != 200 {
		t.Fatalf("dispute: %d %s", r.status, r.body)
	} else if cs := subjectOf(t, r.obj(t)); cs["verdict"] != "refund" {
		t.Fatalf("verdict %v", cs)
	}
	s1 := s.scrape(t)
	wantDeltas(t, "the case", s0, s1, []delta{
		{"assay_http_requests_total", map[string]string{"route": "/checkers", "method": "POST", "status": "201"}, 1},
		{"assay_http_requests_total", post("/contracts"), 1},
		{"assay_http_requests_total", post("/contracts/:id/fund"), 1},
		{"assay_http_requests_total", post("/contracts/:id/deliver"), 1},
		{"assay_http_requests_total", post("/contracts/:id/dispute"), 1},
		{"assay_http_requests_total", map[string]string{"route": "/metrics"}, 1}, // the first scrape
		{"assay_http_request_duration_seconds", map[string]string{"route": "/contracts/:id/dispute"}, 1},
		{"assay_checker_runs_started_total", nil, 1},
		{"assay_checker_runs_total", map[string]string{"kind": "wasm", "outcome": "fail", "engine": "compiler"}, 1},
		{"assay_checker_fuel_used", map[string]string{"kind": "wasm"}, 1},
		{"assay_receipts_signed_total", map[string]string{"kind": "AssayVerdict"}, 1},
		{"assay_receipts_signed_total", nil, 1},
	})
	if s1.Sum("assay_store_commit_duration_seconds", nil)-s0.Sum("assay_store_commit_duration_seconds", nil) < 4 {
		t.Errorf("store commits moved by less than the case's 4 writes")
	}
	if s1.Sum("assay_store_sync_batch_commits", nil) == s0.Sum("assay_store_sync_batch_commits", nil) {
		t.Errorf("no group sync observed")
	}
	for name := range s1 {
		if strings.Contains(name, id) {
			t.Errorf("a metric is named after the contract: %s", name)
		}
	}
	for _, f := range s1 {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), id) || strings.Contains(l.GetValue(), "did:") {
					t.Errorf("%s has label %s=%q", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}

	// Two replay batches of the same 3 artifacts: 3 misses and runs, then
	// 3 memo hits and no runs.
	var arts []string
	for i := range 3 {
		arts = append(arts, fmt.Sprintf(`{"min_rows":%d,"rows":[{"id":"a"},{"id":"b"}]}`, i+1))
	}
	body := fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[%s]}`, sum, strings.Join(arts, ","))
	for range 2 {
		if r := s.post(t, "/replays", body); r.status != 200 {
			t.Fatalf("replays: %d %s", r.status, r.body)
		}
	}
	s2 := s.scrape(t)
	wantDeltas(t, "the replays", s1, s2, []delta{
		{"assay_http_requests_total", post("/replays"), 2},
		{"assay_checker_runs_started_total", nil, 3},
		{"assay_checker_runs_total", map[string]string{"kind": "wasm"}, 3},
		{"assay_checker_run_duration_seconds", map[string]string{"kind": "wasm"}, 3},
		{"assay_replay_memo_misses_total", nil, 3},
		{"assay_replay_memo_hits_total", nil, 3},
	})
	if slots := s2.Sum("assay_sandbox_slots", nil); slots < 1 {
		t.Errorf("assay_sandbox_slots is %v", slots)
	}

	// Money held: a funded case holds its price; the decided one nothing.
	r := s.post(t, "/contracts", `{"buyer":"did:e2e:buyer","seller":"did:e2e:seller","price":40,"acceptance":{}}`)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if f := s.post(t, "/contracts/"+r.obj(t)["contract_id"].(string)+"/fund", `{}`); f.status != 200 {
		t.Fatalf("fund: %d %s", f.status, f.body)
	}
	var held float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if held = s.scrape(t).Sum("assay_money_held", map[string]string{"service": "escrow"}); held == 40 {
			break
		}
	}
	if held != 40 {
		t.Errorf("assay_money_held{service=escrow} = %v, want 40", held)
	}

	// pprof: on the debug listener, never on the public port.
	if r := s.get(t, "/debug/pprof/"); r.status != http.StatusNotFound {
		t.Errorf("public /debug/pprof/: %d, want 404", r.status)
	}
	res, err := http.Get("http://" + debug + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("debug listener /debug/pprof/: %d, want 200", res.StatusCode)
	}

	// Request logs: a JSON line per request, naming the route's template,
	// never the contract's id or the deliverable.
	s.stop(t)
	routes := map[string]int{}
	for _, line := range strings.Split(s.log(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["msg"] != "request" {
			continue
		}
		routes[fmt.Sprint(e["method"], " ", e["route"])]++
		if strings.Contains(line, id) || strings.Contains(line, marker) || e["request_id"] == "" || e["status"] == nil {
			t.Errorf("request line %s", line)
		}
	}
	for _, want := range []string{"POST /contracts/:id/dispute", "POST /replays", "GET /metrics", "GET unmatched"} {
		if routes[want] == 0 {
			t.Errorf("no request line for %s: %v", want, routes)
		}
	}
}

// TestMetrics_off: --metrics=false serves no /metrics.
func TestMetrics_off(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), []string{"--metrics=false", "--log-requests=false"}, nil, 30*time.Second)
	if r := s.get(t, "/metrics"); r.status != http.StatusNotFound {
		t.Errorf("GET /metrics with --metrics=false: %d, want 404", r.status)
	}
	s.stop(t)
	if strings.Contains(s.log(), "msg=request") {
		t.Errorf("--log-requests=false logged requests:\n%s", s.log())
	}
}

// TestMetrics_benchCourt: assay bench court reports the servers' own
// latency from /metrics: every request of the run, by route, and none
// when the server has no /metrics.
func TestMetrics_benchCourt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	type lat struct {
		Requests int64
		P50      int64 `json:"p50_ns"`
		P99      int64 `json:"p99_ns"`
	}
	var res struct {
		Cases  int
		Server *struct {
			lat
			Routes map[string]lat
			CPU    float64 `json:"cpu_us_per_case"`
			Faults float64 `json:"page_faults_per_case"`
		}
		ServerNote string  `json:"server_note"`
		ClientCPU  float64 `json:"client_cpu_us_per_case"`
	}
	bench := func(s *server, cases int) {
		out, err := exec.Command(binary, "bench", "court", "--base", s.base, "--clients", "4", "--cases", strconv.Itoa(cases), "--json").Output()
		if err != nil {
			t.Fatalf("assay bench court: %v\n%s", err, out)
		}
		res.Server = nil
		if err := json.Unmarshal(out, &res); err != nil || res.Cases != cases {
			t.Fatalf("%v: %s", err, out)
		}
	}
	s := start(t, t.TempDir())
	bench(s, 40)
	sv := res.Server
	if sv == nil {
		t.Fatalf("no server-side latency: %s", res.ServerNote)
	}
	if sv.Requests != 160 || sv.P50 <= 0 || sv.P99 < sv.P50 {
		t.Errorf("server-side: %+v, want 160 requests and 0 < p50 <= p99", sv.lat)
	}
	for route, want := range map[string]int64{"POST /contracts": 40, "POST /contracts/:id/fund": 40, "POST /contracts/:id/dispute": 20, "POST /contracts/:id/accept": 20} {
		if got := sv.Routes[route].Requests; got != want {
			t.Errorf("%s: %d requests, want %d (%v)", route, got, want, sv.Routes)
		}
	}
	// The CPU a case, the server's from its process collector (in ticks
	// of 10 ms: a run long enough to take several) and the load
	// generator's own: the split of the machine they share.
	bench(s, 200)
	if res.Server == nil || res.Server.CPU <= 0 || res.ClientCPU <= 0 {
		t.Errorf("CPU a case: server %+v, client %.0f µs, want both measured", res.Server, res.ClientCPU)
	}
	// And the server's page faults a case: its writes land on pages
	// the store had not touched (a memtable's, the write-ahead log's).
	if res.Server != nil && res.Server.Faults <= 0 {
		t.Errorf("page faults a case: %v, want some", res.Server.Faults)
	}
	bench(startServe(t, t.TempDir(), []string{"--metrics=false"}, nil, 30*time.Second), 40)
	if res.Server != nil || !strings.Contains(res.ServerNote, "no /metrics") {
		t.Errorf("against --metrics=false: server %v, note %q", res.Server, res.ServerNote)
	}
}
