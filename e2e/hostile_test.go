package e2e

// Hostile checkers against a real `assay serve` and `assay check`: what
// two security reviews found an attacker could do, each tried again. The
// fixtures are in fixtures/checkers/hostile, each with its source.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/wasm"
)

const hostileDir = "../fixtures/checkers/hostile"

// hostile returns the bytes of a hostile fixture, by name without .wasm.
func hostile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(hostileDir, name+".wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkerFixture returns the bytes of fixtures/checkers/name.wasm.
func checkerFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name+".wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Bounds the tests hold the server to. The stalls they catch are seconds
// to minutes long, so a latency is compared with a baseline measured in
// the same run, with a wide margin (stallBound), never with a figure that
// only holds on a quiet machine: /health with the same request to a
// server that does nothing of the test's at the same moments (watch), a
// client's requests with the same requests before the hostile guests
// started. The latencies themselves are the benchmarks' business
// (BenchmarkContainment_SpinningDisputes).
const (
	// latencyFloor is the least a latency bound is: four times the
	// figure a quiet machine holds the server to (250 ms), under half the
	// shortest stall the tests catch.
	latencyFloor = time.Second
	// stallFactor is how many times its baseline a latency may be.
	stallFactor = 10
	// uploadFloor is the least bound of a compile bomb's refusal, a
	// module of up to 3 MB (the failure: no answer in two minutes).
	uploadFloor = 3 * time.Second
	// idleCPUBound is the CPU time the server may use in idleWindow once
	// a case is answered: its own process's, which other processes'
	// load does not add to.
	idleCPUBound = 100 * time.Millisecond
	idleWindow   = 500 * time.Millisecond
	// testFuel is the fuel a test gives a runaway loop that must end
	// fuel_exhausted: a few hundredths of a second of the cheapest loop.
	// What the default budget costs in time is BenchmarkHostileCheck's.
	testFuel uint64 = 100_000_000
)

// stallBound is the bound of a latency whose baseline, measured in the
// same run, is baseline: stallFactor times it, and at least floor.
func stallBound(baseline, floor time.Duration) time.Duration {
	return max(floor, stallFactor*baseline)
}

// budgetMiB is the --memory-budget the memory tests give the server (the
// least it takes). compileBudgetMiB is what they allow for compilation
// beside it: the sandbox states a peak of the budget plus GOMAXPROCS times
// a compilation's peak at the upload limits (2.2 GiB, wasm's package
// documentation), but the modules these tests compile are a few hundred
// bytes, so they hold the server to far less. The server's resident
// memory must stay under its baseline plus both.
const (
	budgetMiB        = 512
	compileBudgetMiB = 256
)

// cpuTime returns the CPU time (user and system) process pid has used.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis, where field 3 (state) comes first.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[14-3], 10, 64)
	stime, err2 := strconv.ParseInt(f[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// rss returns process pid's resident memory in bytes (VmRSS), 0 once it
// is gone.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// kill stops s at once with SIGKILL.
func (s *server) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// guard kills s at the end of a failed test, before start's graceful stop
// runs: a hostile guest left running (a compile bomb, a loop past its
// backstop, a growing table) would go on taking the shared machine's cores
// and memory while that stop waits.
func guard(tb testing.TB, s *server) {
	tb.Cleanup(func() {
		if tb.Failed() {
			s.kill()
		}
	})
}

// serveFlag reports whether `assay serve` has the flag.
func serveFlag(name string) bool {
	out, _ := exec.Command(binary, "serve", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("-"+name+" "))
}

// startBudget starts a server with --memory-budget budgetMiB. A server
// without the flag is an error of the test, which then runs on without it,
// to show what the server does with no budget.
func startBudget(tb testing.TB) *server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts a server")
	}
	var args []string
	if serveFlag("memory-budget") {
		args = []string{"--memory-budget", strconv.Itoa(budgetMiB)}
	} else {
		tb.Errorf("assay serve has no --memory-budget: nothing bounds the sum of runs' memory; running without one")
	}
	s := startServe(tb, tb.TempDir(), args, nil, 30*time.Second)
	guard(tb, s)
	return s
}

// startHostile is start, guarded, with env added.
func startHostile(tb testing.TB, env ...string) *server {
	tb.Helper()
	s := start(tb, tb.TempDir(), env...)
	guard(tb, s)
	return s
}

// call is one HTTP request with client, safe to make from any goroutine: it
// returns an error where s.do would fail the test. At most limit bytes of
// the body are kept; size is how many the server sent.
func (s *server) call(client *http.Client, method, path, contentType string, body []byte, limit int64) (r response, size int64, took time.Duration, err error) {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return r, 0, 0, err
	}
	req.Header.Set("Content-Type", contentType)
	began := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return r, 0, time.Since(began), err
	}
	defer res.Body.Close()
	var kept bytes.Buffer
	size, err = io.Copy(&kept, io.LimitReader(res.Body, limit))
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, res.Body)
		size += rest
	}
	took = time.Since(began)
	return response{status: res.StatusCode, header: res.Header, body: kept.Bytes()}, size, took, err
}

// postJSON posts body and decodes a JSON object answer.
func (s *server) postJSON(client *http.Client, path, body string) (int, map[string]any, error) {
	r, _, _, err := s.call(client, "POST", path, "application/json", []byte(body), 16<<20)
	if err != nil {
		return 0, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		return r.status, nil, fmt.Errorf("%s %d: %q: %v", path, r.status, r.body, err)
	}
	return r.status, m, nil
}

// upload stores a wasm checker and returns its SHA-256.
func (s *server) upload(tb testing.TB, module []byte) string {
	tb.Helper()
	r := s.do(tb, "POST", "/checkers", module, "Content-Type", "application/wasm")
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		tb.Fatalf("upload: %d %s", r.status, r.body)
	}
	return r.obj(tb)["sha256"].(string)
}

// checkerCriteria is acceptance criteria of one wasm checker; zero limits
// are left to the defaults.
func checkerCriteria(sum string, fuel uint64, memoryMiB uint32) string {
	ref := fmt.Sprintf(`"sha256":%q`, sum)
	if fuel > 0 {
		ref += fmt.Sprintf(`,"fuel":%d`, fuel)
	}
	if memoryMiB > 0 {
		ref += fmt.Sprintf(`,"memory_mib":%d`, memoryMiB)
	}
	return `{"checkers":[{` + ref + `}]}`
}

// decided is a dispute's answer.
type decided struct {
	verdict string
	kind    wasm.Kind     // the checker's outcome kind, "" when none ran
	detail  string        // the checker's detail
	took    time.Duration // the dispute request alone
}

func (d decided) String() string {
	return fmt.Sprintf("%s (%s: %s) in %.2f s", d.verdict, d.kind, d.detail, d.took.Seconds())
}

// sellers numbers the sellers of disputeChecker's contracts: each has one,
// so that lost disputes never get a seller banned.
var sellers atomic.Int64

// disputeChecker runs a contract with acceptance to delivered and disputes
// it, with client, from any goroutine.
func (s *server) disputeChecker(client *http.Client, acceptance string) (decided, error) {
	seller := fmt.Sprintf("did:e2e:hostile%d", sellers.Add(1))
	st, c, err := s.postJSON(client, "/contracts", `{"buyer":"did:e2e:buyer","seller":"`+seller+`","price":40,"acceptance":`+acceptance+`}`)
	if err != nil || st != http.StatusOK {
		return decided{}, fmt.Errorf("create: %d %v %v", st, c, err)
	}
	id, _ := c["contract_id"].(string)
	// A deliverable of its own, so that the outcome memo never answers
	// for the checker.
	deliver := fmt.Sprintf(`{"deliverable":{"rows":3,"seller":%q}}`, seller)
	for _, step := range []struct{ path, body string }{{"/fund", `{}`}, {"/deliver", deliver}} {
		if st, m, err := s.postJSON(client, "/contracts/"+id+step.path, step.body); err != nil || st != http.StatusOK {
			return decided{}, fmt.Errorf("%s: %d %v %v", step.path, st, m, err)
		}
	}
	began := time.Now()
	st, rec, err := s.postJSON(client, "/contracts/"+id+"/dispute", `{"reason":"hostile checker"}`)
	d := decided{took: time.Since(began)}
	if err != nil || st != http.StatusOK {
		return d, fmt.Errorf("dispute after %v: %d %v %v", d.took, st, rec, err)
	}
	cs, _ := rec["credentialSubject"].(map[string]any)
	d.verdict, _ = cs["verdict"].(string)
	checks, _ := cs["checks"].([]any)
	for _, c := range checks {
		c, _ := c.(map[string]any)
		if c["kind"] != "checker" {
			continue
		}
		d.detail, _ = c["detail"].(string)
		if o, ok := c["outcome"].(map[string]any); ok {
			k, _ := o["kind"].(string)
			d.kind = wasm.Kind(k)
		}
	}
	return d, nil
}

// watch samples a server's resident memory and the latency of GET /health
// until it is stopped; it kills the server when RSS passes killAt, so that a
// failure does not take the shared machine's memory with it. At the same
// moments it asks the same of control, a server doing nothing of the
// test's: what the machine's load alone does to the request, the baseline
// of healthBound.
type watch struct {
	s, control                    *server
	maxRSS, maxHealth, maxControl atomic.Int64
	killed                        atomic.Bool
	healthErr                     atomic.Value // error
	stop                          chan struct{}
	wg                            sync.WaitGroup
}

func watchServer(tb testing.TB, s *server, killAt int64) *watch {
	tb.Helper()
	w := &watch{s: s, control: shared(tb, plainServer), stop: make(chan struct{})}
	pid := s.cmd.Process.Pid
	w.wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := rss(pid); n > w.maxRSS.Load() {
				w.maxRSS.Store(n)
				if n > killAt && !w.killed.Swap(true) {
					_ = s.cmd.Process.Signal(syscall.SIGKILL)
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	})
	poll := func(srv *server, slowest *atomic.Int64, report bool) {
		// A /health that takes longer than this counts as this long.
		client := &http.Client{Timeout: 10 * time.Second}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			r, _, took, err := srv.call(client, "GET", "/health", "application/json", nil, 1<<20)
			if err == nil && r.status != http.StatusOK {
				err = fmt.Errorf("/health %d %s", r.status, r.body)
			}
			if err != nil && report && !w.killed.Load() {
				w.healthErr.CompareAndSwap(nil, err)
			}
			if int64(took) > slowest.Load() {
				slowest.Store(int64(took))
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}
	w.wg.Go(func() { poll(s, &w.maxHealth, true) })
	w.wg.Go(func() { poll(w.control, &w.maxControl, false) })
	return w
}

// done stops the sampling and returns the highest RSS and /health latency
// seen.
func (w *watch) done() (maxRSS int64, maxHealth time.Duration) {
	close(w.stop)
	w.wg.Wait()
	return w.maxRSS.Load(), time.Duration(w.maxHealth.Load())
}

// healthBound returns the bound of the watched server's /health latency,
// stallBound of the control's slowest over the same time, and that
// slowest. Call it after done.
func (w *watch) healthBound() (bound, control time.Duration) {
	control = time.Duration(w.maxControl.Load())
	return stallBound(control, latencyFloor), control
}

// checkOutcome is what `assay check --json` prints.
type checkOutcome struct {
	Kind     wasm.Kind `json:"kind"`
	ExitCode int       `json:"exit_code"`
	FuelUsed uint64    `json:"fuel_used"`
	WallNS   int64     `json:"wall_ns"`
	Detail   string    `json:"detail"`
}

// checkWithin bounds an `assay check`: three times the backstop. One that
// runs longer is killed, and the check is an error.
const checkWithin = 3 * wasm.DefaultTimeout

// check runs `assay check --json` on a hostile fixture at default limits,
// with the compile cache in cache, and returns the outcome and the seconds
// the command took. A command that does not answer within checkWithin is
// an error of the test, and its outcome is the zero one.
func check(tb testing.TB, cache, name string, args ...string) (checkOutcome, time.Duration) {
	tb.Helper()
	artifact := filepath.Join(tb.TempDir(), "artifact.json")
	if err := os.WriteFile(artifact, []byte(`{"rows":3}`), 0o644); err != nil {
		tb.Fatal(err)
	}
	argv := append([]string{"check", "--json", "--cache", cache, "--checker", filepath.Join(hostileDir, name+".wasm"), "--artifact", artifact}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), checkWithin)
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(ctx, binary, argv...).Output()
	took := time.Since(began)
	if ctx.Err() != nil {
		tb.Errorf("assay check %s: no answer within %v: killed", name, checkWithin)
		return checkOutcome{}, took
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		tb.Fatal(err)
	}
	var o checkOutcome
	if err := json.Unmarshal(out, &o); err != nil {
		tb.Fatalf("assay check %s: %v: %q", name, err, out)
	}
	return o, took
}

// TestHostile_SpinCheck: `assay check` on (loop (br 0)) ends
// fuel_exhausted with the same fuel_used on every run; a dispute with it
// is refund (a review found it ran past the 10 s backstop, timeout, and the
// dispute was escalated). It runs at testFuel: that the default budget
// ends it well within the backstop is BenchmarkHostileCheck's to show.
func TestHostile_SpinCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: runs a checker through its whole fuel")
	}
	t.Parallel()
	cache := t.TempDir()
	var fuel []uint64
	for i := range 3 {
		o, _ := check(t, cache, "spin", "--fuel", fmt.Sprint(testFuel))
		if o.Kind != wasm.KindFuelExhausted {
			t.Errorf("run %d ended %s (%s), want fuel_exhausted", i+1, o.Kind, o.Detail)
		}
		fuel = append(fuel, o.FuelUsed)
	}
	if fuel[0] != fuel[1] || fuel[1] != fuel[2] || fuel[0] != testFuel {
		t.Errorf("fuel_used %v differs between runs, or from the fuel %d", fuel, testFuel)
	}

	s := startHostile(t)
	sum := s.upload(t, hostile(t, "spin"))
	d, err := s.disputeChecker(&http.Client{Timeout: time.Minute}, checkerCriteria(sum, testFuel, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dispute: %v", d)
	if d.verdict != "refund" || d.kind != wasm.KindFuelExhausted {
		t.Errorf("dispute answered %v, want refund (fuel_exhausted)", d)
	}
}

// TestHostile_HostCallLoops: loops over poll_oneoff, random_get and a
// many-vectored fd_write end fuel_exhausted in about the guest time the
// cheapest arithmetic loop (spin) takes on the same fuel (a review found a
// poll_oneoff loop took 229 s for fuel spin spends in seconds, a hundred
// times more). So does a loop of table.grow, which calls into the host
// too, each call refused past the table limit (tables are charged too).
// The reference is the slower of the runs of spin just before and just
// after each loop, so that the machine's load at the time is in it.
func TestHostile_HostCallLoops(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: runs checkers through their whole fuel")
	}
	t.Parallel()
	cache := t.TempDir()
	fuel := fmt.Sprint(testFuel)
	spin := func() time.Duration {
		ref, _ := check(t, cache, "spin", "--fuel", fuel)
		if ref.Kind != wasm.KindFuelExhausted {
			t.Fatalf("spin, the reference, ended %s (%s)", ref.Kind, ref.Detail)
		}
		return time.Duration(ref.WallNS)
	}
	before := spin()
	for _, name := range []string{"pollloop", "randloop", "writeloop", "tablegrow"} {
		t.Run(name, func(t *testing.T) {
			o, _ := check(t, cache, name, "--fuel", fuel)
			if o.Kind != wasm.KindFuelExhausted || o.FuelUsed != testFuel {
				t.Errorf("%s ended %s (%s) with fuel_used %d, want fuel_exhausted at %d", name, o.Kind, o.Detail, o.FuelUsed, testFuel)
			}
			took := time.Duration(o.WallNS)
			// The reference is the slower of spin's runs just before the
			// loop and just after it.
			after := spin()
			ref := max(before, after)
			before = after
			// Wide: the failure is a hundred times slower than spin.
			bound := stallBound(ref, 100*time.Millisecond)
			t.Logf("%s: %v of guest time for %d fuel (%.1fx spin's %v)", name, took, testFuel, took.Seconds()/ref.Seconds(), ref)
			if took > bound {
				t.Errorf("%s spent its %d fuel in %v, over %v (spin: %v): its host calls are not charged enough", name, testFuel, took, bound, ref)
			}
		})
	}
}

// TestHostile_Exit256: proc_exit(256) is a fail, not a pass, in `assay
// check` and in a dispute, which is refund (a review found it a pass).
func TestHostile_Exit256(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	t.Parallel()
	o, _ := check(t, t.TempDir(), "exit256")
	if o.Kind != wasm.KindFail || o.ExitCode != 256 {
		t.Errorf("assay check: %s exit %d (%s), want fail exit 256", o.Kind, o.ExitCode, o.Detail)
	}
	s := startHostile(t)
	sum := s.upload(t, hostile(t, "exit256"))
	d, err := s.disputeChecker(&http.Client{Timeout: time.Minute}, checkerCriteria(sum, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dispute: %v", d)
	if d.verdict != "refund" || d.kind != wasm.KindFail {
		t.Errorf("dispute answered %v, want refund (fail)", d)
	}
}

// TestHostile_CompileBombs: a module of one br_table with a million targets
// and one of a million nested blocks are refused at upload as
// invalid_checker naming the limit, each about as fast as an ordinary bad
// module, and /health stays responsive meanwhile (a review found no answer in
// 120 s, both cores busy for minutes, 3.5 GB). A million nested blocks are
// over a MiB of one body, and may be refused for that; 300,000 are not,
// and must be refused for their nesting. Each bomb gets a server of its
// own. It runs alone (not in parallel), as it times requests.
func TestHostile_CompileBombs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string // words one of which the refusal names the limit by
	}{
		{"brtable", []string{"br_table"}},
		{"nest", []string{"nest", "depth", "body"}},
		{"nest300k", []string{"nest", "depth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startHostile(t)
			client := &http.Client{Timeout: 10 * time.Second}
			// The upload's baseline: the refusal of a module that imports
			// what the sandbox does not have.
			ordinary, _, refTook, err := s.call(client, "POST", "/checkers", "application/wasm", checkerFixture(t, "badimport"), 1<<20)
			if err != nil || ordinary.status != http.StatusBadRequest {
				t.Fatalf("the ordinary bad module: %d %s %v", ordinary.status, ordinary.body, err)
			}
			w := watchServer(t, s, 2<<30)
			r, _, took, err := s.call(client, "POST", "/checkers", "application/wasm", hostile(t, tc.name), 1<<20)
			maxRSS, maxHealth := w.done()
			healthBound, control := w.healthBound()
			t.Logf("upload answered in %.3f s (an ordinary bad module: %.3f s): %d %s; /health at most %v (a quiet server's %v), RSS at most %s", took.Seconds(), refTook.Seconds(), r.status, r.body, maxHealth, control, mib(maxRSS))
			if err != nil {
				t.Fatalf("upload: no answer after %.1f s: %v", took.Seconds(), err)
			}
			if r.status != http.StatusBadRequest || r.code(t) != "invalid_checker" || !namesOne(string(r.body), tc.names) {
				t.Errorf("upload answered %d %s, want 400 invalid_checker naming the limit (%s)", r.status, r.body, strings.Join(tc.names, " or "))
			}
			if bound := stallBound(max(refTook, control), uploadFloor); took > bound {
				t.Errorf("refused in %v, want under %v (an ordinary bad module: %v; a quiet server's /health: %v)", took, bound, refTook, control)
			}
			if maxHealth > healthBound {
				t.Errorf("/health took up to %v, want under %v (a quiet server's: %v)", maxHealth, healthBound, control)
			}
		})
	}
}

// namesOne reports whether s holds one of words, case aside.
func namesOne(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(strings.ToLower(s), w) {
			return true
		}
	}
	return false
}

// TestHostile_ReplayFlood: two concurrent POST /replays of 1,000 artifacts
// with a checker that writes its whole stdout and stderr caps keep the
// server's RSS under its budget and each response bounded (a review found one
// 30 KB request made a 787 MB response and 2.57 GB of RSS; two, 5.06 GB).
func TestHostile_ReplayFlood(t *testing.T) {
	t.Parallel()
	s := startBudget(t)
	sum := s.upload(t, hostile(t, "fullout"))
	baseline := rss(s.cmd.Process.Pid)
	bound := baseline + (budgetMiB+compileBudgetMiB)<<20
	w := watchServer(t, s, bound+(1<<30))
	// The answer keeps at most replays.MaxOutputBytes of output, and every
	// outcome beyond is a few hundred bytes of kinds and hashes.
	const responseBound = replays.MaxOutputBytes + replays.MaxBatch*(8<<10)
	var wg sync.WaitGroup
	for b := range 2 {
		wg.Go(func() {
			var artifacts []string
			for i := range 1000 {
				artifacts = append(artifacts, fmt.Sprintf(`"flood %d %d"`, b, i))
			}
			body := fmt.Sprintf(`{"checker":{"sha256":%q},"no_memo":true,"artifacts":[%s]}`, sum, strings.Join(artifacts, ","))
			r, size, took, err := s.call(&http.Client{Timeout: 2 * time.Minute}, "POST", "/replays", "application/json", []byte(body), responseBound)
			if err != nil {
				t.Errorf("batch %d: %v after %.1f s", b, err, took.Seconds())
				return
			}
			t.Logf("batch %d: %d, %s of answer to %d bytes of request, in %.1f s", b, r.status, mib(size), len(body), took.Seconds())
			if size > responseBound {
				t.Errorf("batch %d: the answer is %s, want at most %s", b, mib(size), mib(responseBound))
				return
			}
			var res struct {
				Count    int
				Outcomes []json.RawMessage
			}
			if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil || res.Count != 1000 || len(res.Outcomes) != 1000 {
				t.Errorf("batch %d: %d %.300s", b, r.status, r.body)
			}
		})
	}
	wg.Wait()
	maxRSS, maxHealth := w.done()
	t.Logf("RSS at most %s (baseline %s, bound %s); /health at most %v", mib(maxRSS), mib(baseline), mib(bound), maxHealth)
	if w.killed.Load() {
		t.Errorf("RSS passed %s: the server was killed", mib(bound+(1<<30)))
	}
	if maxRSS > bound {
		t.Errorf("RSS reached %s, over the bound %s (baseline %s + budget %d MiB + compile budget %d MiB)", mib(maxRSS), mib(bound), mib(baseline), budgetMiB, compileBudgetMiB)
	}
}

// TestHostile_LoopBatch: batches of replays of spin with the most fuel a
// run may have answer within the batch's bound with their guests stopped:
// the server's CPU goes idle at once; /health is served throughout, if not
// at once (a review found /health unanswered for about 150 s, batch_timeout
// after 158 s). Eight, the review's batch, may finish within the bound or
// be cut at it; a full batch (replays.MaxBatch) is many times the bound's
// work, and must be cut at it. The server's bound is batchBound
// (ASSAY_REPLAY_BATCH_TIMEOUT, its least), not the default
// replays.BatchTimeout, so that the test takes seconds, not minutes, of
// both cores. It runs alone (not in
// parallel), as it times requests.
func TestHostile_LoopBatch(t *testing.T) {
	const batchBound = time.Second
	s := startHostile(t, "ASSAY_REPLAY_BATCH_TIMEOUT="+batchBound.String())
	sum := s.upload(t, hostile(t, "spin"))
	for _, tc := range []struct {
		name        string
		count       int
		mustTimeOut bool
	}{
		{"Eight", 8, false},
		{"PastTheBound", replays.MaxBatch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var artifacts []string
			for i := range tc.count {
				artifacts = append(artifacts, fmt.Sprintf(`"%s %d"`, tc.name, i))
			}
			body := fmt.Sprintf(`{"checker":{"sha256":%q,"fuel":%d},"no_memo":true,"artifacts":[%s]}`, sum, wasm.MaxFuel, strings.Join(artifacts, ","))
			w := watchServer(t, s, 2<<30)
			r, _, took, err := s.call(&http.Client{Timeout: batchBound + 15*time.Second}, "POST", "/replays", "application/json", []byte(body), 1<<20)
			pid := s.cmd.Process.Pid
			cpu0 := cpuTime(t, pid)
			time.Sleep(idleWindow) // a window to measure the CPU in, not a wait for something to happen
			idle := cpuTime(t, pid) - cpu0
			_, maxHealth := w.done()
			// Served, if not at once, while guests hold every core.
			servedBound, control := w.healthBound()
			servedBound = max(servedBound, time.Second)
			t.Logf("%d replays answered in %.1f s: %d %.160s; then %v of CPU in %v; /health at most %v (a quiet server's %v)", tc.count, took.Seconds(), r.status, r.body, idle, idleWindow, maxHealth, control)
			if err != nil {
				t.Fatalf("batch: no answer after %.1f s: %v", took.Seconds(), err)
			}
			if took > batchBound+5*time.Second {
				t.Errorf("answered after %.1f s, past its bound of %v", took.Seconds(), batchBound)
			}
			switch {
			case r.status == http.StatusServiceUnavailable:
				if c := r.code(t); c != "batch_timeout" {
					t.Errorf("answered 503 %s, want batch_timeout", c)
				}
			case tc.mustTimeOut:
				t.Errorf("answered %d %.300s, want 503 batch_timeout", r.status, r.body)
			case r.status != http.StatusOK || bytes.Count(r.body, []byte(`"kind":"fuel_exhausted"`)) != tc.count:
				t.Errorf("answered %d %.300s, want batch_timeout or %d fuel_exhausted", r.status, r.body, tc.count)
			}
			if idle > idleCPUBound {
				t.Errorf("the server used %v of CPU in the %v after the answer, want at most %v: its guests run on", idle, idleWindow, idleCPUBound)
			}
			if maxHealth > servedBound {
				t.Errorf("/health took up to %v, want under %v (a quiet server's: %v)", maxHealth, servedBound, control)
			}
		})
	}
}

// BenchmarkHostileCheck reports the seconds `assay check` takes to run
// each runaway loop through the default fuel (the goal: spin under 2 s);
// the guest's own wall time is guest-s, and backstop-share that over the
// backstop, wasm.DefaultTimeout: fuel, not the clock, must decide, so it
// must stay well under 1. Each loop must end fuel_exhausted.
func BenchmarkHostileCheck(b *testing.B) {
	cache := b.TempDir()
	for _, name := range []string{"spin", "spinwork", "pollloop", "randloop", "writeloop", "tablegrow"} {
		b.Run(name, func(b *testing.B) {
			var guest int64
			kinds := map[wasm.Kind]int{}
			b.ResetTimer()
			for range b.N {
				o, _ := check(b, cache, name)
				guest += o.WallNS
				kinds[o.Kind]++
			}
			b.ReportMetric(float64(guest)/1e9/float64(b.N), "guest-s")
			b.ReportMetric(float64(guest)/float64(b.N)/float64(wasm.DefaultTimeout), "backstop-share")
			if kinds[wasm.KindFuelExhausted] != b.N {
				// A failed benchmark prints no metrics: say them here.
				b.Errorf("%s ended %v in %.2f guest-s, want fuel_exhausted every time", name, kinds, float64(guest)/1e9/float64(b.N))
			}
		})
	}
}
