package e2e

// Hostile acceptance criteria against a real `assay serve` held to a
// memory limit: every tier before the checkers decides within its budget,
// so no criteria take the server down, every dispute is answered with a
// deterministic verdict, and /health answers meanwhile.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/assayhq/assay/adjudicate"
	corpus "github.com/assayhq/assay/internal/hostile"
)

// tier0AddressSpace is the address space the test allows the server
// beyond what it has mapped once started, the memory adjudicate's
// RATIONALE.md states for tier 0: adjudicate.MaxTier0Slots decisions at
// once, each holding at most adjudicate.MaxExprHeldBytes of values its
// expressions build and 32 MiB more for its plan and its parsed
// deliverable, twice over for the garbage collector's headroom, and the
// 64 MiB a heap arena reserves at a time.
const tier0AddressSpace = 2*adjudicate.MaxTier0Slots*(adjudicate.MaxExprHeldBytes+32<<20) + 64<<20

// procStatus returns a field of /proc/pid/status in bytes (VmSize, VmHWM,
// VmPeak), 0 once the process is gone.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// healthProbe asks the server (directly, not through the validating
// proxy) for /health every interval until stop is closed, and records how
// long each answer took; an answer that is not 200 is an error.
type healthProbe struct {
	mu    sync.Mutex
	took  []time.Duration
	errs  []string
	stop  chan struct{}
	done  chan struct{}
	url   string
	every time.Duration
}

func probeHealth(url string, every time.Duration) *healthProbe {
	p := &healthProbe{url: url, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *healthProbe) run() {
	defer close(p.done)
	client := &http.Client{Timeout: time.Minute}
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		began := time.Now()
		res, err := client.Get(p.url + "/health")
		took := time.Since(began)
		p.mu.Lock()
		switch {
		case err != nil:
			p.errs = append(p.errs, err.Error())
		case res.StatusCode != http.StatusOK:
			p.errs = append(p.errs, res.Status)
		default:
			p.took = append(p.took, took)
		}
		p.mu.Unlock()
		if res != nil {
			res.Body.Close()
		}
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// finish stops the probe and returns its latencies, sorted, and errors.
func (p *healthProbe) finish() ([]time.Duration, []string) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	slices.Sort(p.took)
	return p.took, p.errs
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// disputed is what a dispute of one hostile case answered.
type disputed struct {
	status  int
	code    string // the error's, when status is not 200
	verdict string
	checks  string // the receipt's checks, as JSON
	last    string // the detail of the last check that ran
	took    time.Duration
}

// disputeCase creates, funds, delivers and disputes a contract under the
// case's criteria, and returns what the court answered; a refused
// creation is returned as it is.
func (s *server) disputeCase(client *http.Client, criteria, deliverable []byte, seller string) (disputed, error) {
	var out disputed
	create := `{"buyer":"did:e2e:buyer","seller":"` + seller + `","price":40,"acceptance":` + string(criteria) + `}`
	status, body, err := s.postJSON(client, "/contracts", create)
	if err != nil {
		return out, err
	}
	if status != http.StatusOK {
		e, _ := body["error"].(map[string]any)
		out.status, out.code = status, fmt.Sprint(e["code"])
		return out, nil
	}
	id, _ := body["contract_id"].(string)
	if status, body, err = s.postJSON(client, "/contracts/"+id+"/fund", `{}`); err != nil || status != http.StatusOK {
		return out, fmt.Errorf("fund %d %v %v", status, body, err)
	}
	deliver := `{"deliverable":` + string(deliverable) + `}`
	if status, body, err = s.postJSON(client, "/contracts/"+id+"/deliver", deliver); err != nil || status != http.StatusOK {
		return out, fmt.Errorf("deliver %d %.200v %v", status, body, err)
	}
	began := time.Now()
	status, body, err = s.postJSON(client, "/contracts/"+id+"/dispute", `{}`)
	out.took = time.Since(began)
	if err != nil {
		return out, err
	}
	out.status = status
	if status != http.StatusOK {
		return out, fmt.Errorf("dispute %d %.300v", status, body)
	}
	subject, _ := body["credentialSubject"].(map[string]any)
	out.verdict, _ = subject["verdict"].(string)
	checks, _ := subject["checks"].([]any)
	b, _ := json.Marshal(checks)
	out.checks = string(b)
	for _, ch := range checks {
		if m, _ := ch.(map[string]any); m["skipped"] != true {
			out.last, _ = m["detail"].(string)
		}
	}
	return out, nil
}

// TestBudget_HostileCriteria runs every hostile case of internal/hostile
// twice against one server, held to its address space at start plus what
// tier 0 may hold, from more clients at once than decisions run at once:
// the server stays up, every dispute is answered with its case's verdict,
// the same bytes both times, and /health answers meanwhile.
func TestBudget_HostileCriteria(t *testing.T) {
	cases, err := corpus.Cases()
	if err != nil {
		t.Fatal(err)
	}
	s := startHostile(t)
	pid := s.cmd.Process.Pid

	// Baseline: /health with the server idle, in this run.
	var base []time.Duration
	for range 50 {
		began := time.Now()
		res, err := http.Get(s.direct + "/health")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/health while idle: %s", res.Status)
		}
		base = append(base, time.Since(began))
	}
	slices.Sort(base)

	// The memory limit.
	start := procStatus(pid, "VmSize")
	limit := uint64(start) + tier0AddressSpace
	if err := unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	t.Logf("address space: %d MiB at start, limited to %d MiB", start>>20, limit>>20)

	probe := probeHealth(s.direct, 20*time.Millisecond)
	type job struct {
		c                     corpus.Case
		criteria, deliverable []byte
		round                 int
	}
	jobs := make(chan job)
	results := make([][2]disputed, len(cases))
	index := map[string]int{}
	for i, c := range cases {
		index[c.Name] = i
	}
	var wg sync.WaitGroup
	errs := make(chan string, 2*len(cases))
	clients := 2 * runtime.GOMAXPROCS(0) // the server's, on this machine
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Minute} // a hang, not a bound
			for j := range jobs {
				d, err := s.disputeCase(client, j.criteria, j.deliverable, fmt.Sprintf("did:e2e:budget-%s-%d", j.c.Name, j.round))
				if err != nil {
					errs <- j.c.Name + ": " + err.Error()
					continue
				}
				results[index[j.c.Name]][j.round] = d
			}
		}()
	}
	all := make([]job, len(cases))
	for i, c := range cases {
		criteria, err := c.Criteria()
		if err != nil {
			t.Fatal(err)
		}
		all[i] = job{c: c, criteria: criteria, deliverable: c.Deliverable()}
	}
	began := time.Now()
	for round := range 2 {
		for _, j := range all {
			j.round = round
			jobs <- j
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	elapsed := time.Since(began)
	loaded, probeErrs := probe.finish()
	for e := range errs {
		t.Error(e)
	}

	if s.cmd.ProcessState != nil || procStatus(pid, "VmSize") == 0 {
		t.Fatalf("the server is gone:\n%s", s.out)
	}
	if r := s.get(t, "/health"); r.status != http.StatusOK {
		t.Fatalf("/health after the corpus: %d", r.status)
	}

	var slowest time.Duration
	for i, c := range cases {
		a, b := results[i][0], results[i][1]
		slowest = max(slowest, a.took, b.took)
		switch {
		case c.Error != "":
			if a.status != http.StatusBadRequest || a.code != c.Error || b.code != c.Error {
				t.Errorf("%s: created %d %q, want 400 %q", c.Name, a.status, a.code, c.Error)
			}
		case a.verdict != c.Verdict:
			t.Errorf("%s: verdict %q, want %q (%s)", c.Name, a.verdict, c.Verdict, a.last)
		case !strings.Contains(a.last, c.Detail):
			t.Errorf("%s: detail %q does not say %q", c.Name, a.last, c.Detail)
		case a.checks != b.checks || a.verdict != b.verdict:
			t.Errorf("%s: two disputes differ:\n%.600s\n%.600s", c.Name, a.checks, b.checks)
		}
	}

	if len(probeErrs) > 0 {
		t.Errorf("/health failed %d times under the corpus: %v", len(probeErrs), probeErrs[:min(len(probeErrs), 5)])
	}
	// A wide margin over this run's idle baseline: /health waits its turn
	// on a loaded machine, never for a decision.
	baseP90, loadedP50, loadedMax := quantile(base, 0.9), quantile(loaded, 0.5), quantile(loaded, 1)
	if bound := 100 * baseP90; loadedP50 > bound {
		t.Errorf("/health's median under the corpus %v is over 100 times its idle p90 %v", loadedP50, baseP90)
	}
	if len(loaded) < int(elapsed/time.Second) {
		t.Errorf("/health answered %d times in %v", len(loaded), elapsed)
	}
	t.Logf("%d disputes by %d clients in %v, the slowest answered in %v", 2*len(cases), clients, elapsed.Round(time.Millisecond), slowest.Round(time.Millisecond))
	t.Logf("/health: idle p90 %v; under the corpus %d answers, p50 %v, p99 %v, max %v",
		baseP90, len(loaded), loadedP50, quantile(loaded, 0.99), loadedMax)
	t.Logf("memory: peak resident %d MiB, peak address space %d MiB of the %d MiB allowed",
		procStatus(pid, "VmHWM")>>20, procStatus(pid, "VmPeak")>>20, limit>>20)
}
