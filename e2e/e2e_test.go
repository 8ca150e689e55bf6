// Package e2e runs assay end to end: TestMain builds the binary once,
// tests start `assay serve` on loopback ports and drive it over HTTP, with
// the seed's walkthroughs run verbatim by bash, curl and python3, and
// official clients (a browser, Node's MCP and x402 clients) where the
// interface is public.
//
// How the tests share the machine:
//   - A test that owns its servers, data and agents runs in parallel
//     (t.Parallel). One that only needs a running server shares one
//     (shared: plainServer, operatorServer) and names what it creates
//     after itself (unique).
//   - Every server's compile cache is one directory (compileCache, the
//     run's cache when make test made one), so that CPython and the Go
//     guests are compiled once per run.
//   - Up to parallelPerCPU parallel tests a core run at once (TestMain),
//     not go test's GOMAXPROCS: their work is in the processes they start.
//   - A test that times requests runs alone (not in parallel), and holds a
//     latency to stallFactor times what the same request takes meanwhile
//     on a server without its hostile guests, never to a figure only a
//     quiet machine meets; the figures themselves are the benchmarks'.
//   - Nothing sleeps to let something happen: tests poll a condition with
//     a deadline, or move a server's test clock (ASSAY_TEST_CLOCK).
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/wasmtest"
)

var (
	binary string // the assay binary TestMain built
	// tools is a directory of the run's own, for tools the tests build.
	tools string
	// compileCache is the compile cache every server the tests start
	// shares (each data directory's cache is a link to it), so that a
	// checker, CPython above all, is compiled once per run (wasmtest).
	compileCache string
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	flag.Parse()
	if !flagGiven("test.parallel") {
		// The tests' own CPU is little: they wait on the processes they
		// start (servers, node, a browser, go), so that a limit of
		// GOMAXPROCS, go test's default, leaves the cores idle while they
		// wait. A -parallel given to go test is kept.
		if err := flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "assay-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "assay")
	tools = filepath.Join(dir, "tools")
	// The run's cache when there is one (make test): then CPython is
	// compiled once for every package's tests and every server.
	compileCache = wasmtest.CacheDir(filepath.Join(dir, "cache"))
	if err := os.MkdirAll(compileCache, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("go", "build", "-o", binary, "github.com/assayhq/assay/cmd/assay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build assay:", err)
		return 1
	}
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	return code
}

// parallelPerCPU is how many parallel tests run at once per core, unless
// go test's -parallel says otherwise.
const parallelPerCPU = 4

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) (given bool) {
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// server is a running `assay serve`, behind a validating proxy (contract,
// openapi_test.go): base is the proxy's, which checks every request and
// answer against the server's /openapi.json; direct is the server's own,
// for what a proxy cannot carry (a connection's own behaviour).
type server struct {
	base   string
	direct string
	proxy  *contract
	cmd    *exec.Cmd
	data   string
	out    *bytes.Buffer // stderr
	said   *lockedWriter // stdout's lines
	// done receives the process's exit once; exited is closed then, after
	// exitErr is set.
	done    chan error
	exited  chan struct{}
	exitErr error
	shared  bool // a server the tests share (shared): never stopped by one
}

// listening matches the line in which the server says where it listens:
// it starts "assay: serving" and names the URL after "on", whatever
// services it lists before.
var listening = regexp.MustCompile(`^assay: serving\b.* on (http://[^\s,;()]+)`)

// start runs assay serve on a free loopback port with data in dir.
func start(tb testing.TB, dir string, env ...string) *server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts a server")
	}
	return startServe(tb, dir, nil, env, 30*time.Second)
}

// startServe runs `assay serve --addr 127.0.0.1:0 --data dir` with args and
// env added, and waits up to within for it to say where it listens. The
// server is stopped, and must exit cleanly, when tb ends.
func startServe(tb testing.TB, dir string, args, env []string, within time.Duration) *server {
	tb.Helper()
	s, err := launch(dir, args, env, within)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.stop(tb) })
	s.proxy = validatingProxy(tb, s.direct)
	s.base = s.proxy.base
	tb.Cleanup(s.proxy.close)
	return s
}

// launch starts `assay serve` on dir with args and env added and waits up
// to within for it to say where it listens. The data directory's compile
// cache is a link to compileCache unless the directory has one already.
func launch(dir string, args, env []string, within time.Duration) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Symlink(compileCache, filepath.Join(dir, "cache")); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	argv := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--limits", harnessLimits}, args...)
	cmd := exec.Command(binary, argv...)
	cmd.Env = append(os.Environ(), env...)
	// A test binary that dies (a panic, go test's -timeout) takes its
	// servers with it: a server left running would slow every later run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, data: dir, out: &bytes.Buffer{}, said: &lockedWriter{w: &bytes.Buffer{}}, done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: s.out}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(stdout)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			fmt.Fprintln(s.said, lines.Text())
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case found <- strings.TrimRight(m[1], "."):
				default:
				}
			}
		}
		s.exitErr = cmd.Wait()
		close(s.exited)
		s.done <- s.exitErr
	}()
	select {
	case s.direct = <-found:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("assay %v exited: %v\n%s", argv, s.exitErr, s.log())
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-s.exited
		return nil, fmt.Errorf("assay %v did not start within %v\n%s", argv, within, s.log())
	}
}

// stdout returns what the server wrote to stdout so far, in whole lines.
func (s *server) stdout() string {
	s.said.mu.Lock()
	defer s.said.mu.Unlock()
	return s.said.w.(*bytes.Buffer).String()
}

// log returns what the server wrote to stderr so far.
func (s *server) log() string {
	w := s.cmd.Stderr.(*lockedWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return s.out.String()
}

// stop sends SIGTERM and wants a clean exit; a server that exited
// already (killed by the test) is left as it is. Stopping a shared server
// is an error of the test: TestMain stops those.
func (s *server) stop(tb testing.TB) {
	tb.Helper()
	if s.shared {
		tb.Fatal("e2e: a test stopped a server the tests share; start one of its own")
	}
	if err := s.terminate(); err != nil {
		tb.Error(err)
	}
}

// terminate sends SIGTERM and waits for a clean exit; a server that does
// not exit within 45 s gets SIGQUIT, for its goroutines' stacks.
func (s *server) terminate() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.exitErr != nil {
			return fmt.Errorf("assay serve exited with %v\n%s", s.exitErr, s.log())
		}
		return nil
	case <-time.After(45 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		<-s.exited
		return fmt.Errorf("assay serve did not stop on SIGTERM\n%s", s.log())
	}
}

// sharedServer is one `assay serve` that the tests which only need a
// running server share: started by the first of them, stopped by TestMain
// after the last. Each test reaches it through a validating proxy of its
// own, so that a mismatch fails the test that made the exchange.
type sharedServer struct {
	name string
	args []string
	env  []string

	once sync.Once
	s    *server
	dir  string
	err  error
}

// The servers tests share: one as `assay serve` starts with no settings,
// and one with every route on: the operator's (ASSAY_OPERATOR_TOKEN=op)
// and the market's test clock (ASSAY_TEST_CLOCK=1), which no test that
// shares it may move.
var (
	plainServer    = &sharedServer{name: "plain"}
	operatorServer = &sharedServer{name: "operator", env: []string{"ASSAY_OPERATOR_TOKEN=op", "ASSAY_TEST_CLOCK=1"}}
	sharedServers  = []*sharedServer{plainServer, operatorServer}
)

// shared returns g's server, started on first use, behind a validating
// proxy of tb's own. Tests that use it own only what they create on it:
// contracts, agents and listings named after themselves (unique), never
// the server's totals.
func shared(tb testing.TB, g *sharedServer) *server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts a server")
	}
	g.once.Do(func() {
		g.dir, g.err = os.MkdirTemp("", "assay-e2e-"+g.name)
		if g.err == nil {
			g.s, g.err = launch(g.dir, g.args, g.env, time.Minute)
		}
	})
	if g.err != nil {
		tb.Fatalf("e2e: the shared %s server: %v", g.name, g.err)
	}
	s := *g.s
	s.shared = true
	s.proxy = validatingProxy(tb, s.direct)
	s.base = s.proxy.base
	tb.Cleanup(s.proxy.close)
	return &s
}

// warmed holds, by checker path, a sync.Once that compiled it.
var warmed sync.Map

// warmCache compiles the checker at path (a .wasm or .py file) into
// compileCache once per run, with assay check, so that servers started
// after it, several at once among them, load it compiled instead of each
// compiling it.
func warmCache(tb testing.TB, path string) {
	tb.Helper()
	v, _ := warmed.LoadOrStore(path, new(sync.Once))
	v.(*sync.Once).Do(func() {
		artifact := filepath.Join(tb.TempDir(), "artifact")
		if err := os.WriteFile(artifact, []byte("{}"), 0o644); err != nil {
			tb.Fatal(err)
		}
		// The outcome does not matter: the compiled module does.
		out, err := exec.Command(binary, "check", "--json", "--cache", compileCache, "--checker", path, "--artifact", artifact).CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			tb.Fatalf("assay check %s: %v\n%s", path, err, out)
		}
	})
}

// names numbers what unique returns.
var names atomic.Int64

// unique returns prefix followed by a number no other call in this
// process returns: an agent, a key or a name of a test's own on a shared
// server, in every run of -count.
func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, names.Add(1)) }

// stopShared stops the shared servers that were started, and the shared
// browser (console_test.go).
func stopShared() error {
	if chrome.stop != nil {
		chrome.stop()
	}
	var errs []error
	for _, g := range sharedServers {
		if g.s != nil {
			errs = append(errs, g.s.terminate())
		}
		if g.dir != "" {
			errs = append(errs, os.RemoveAll(g.dir))
		}
	}
	return errors.Join(errs...)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) obj(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("%d %q: %v", r.status, r.body, err)
	}
	return m
}

func (r response) code(tb testing.TB) string {
	tb.Helper()
	m := r.obj(tb)
	e, ok := m["error"].(map[string]any)
	if !ok || m["detail"] == nil {
		tb.Fatalf("not an error: %s", r.body)
	}
	return e["code"].(string)
}

func (s *server) do(tb testing.TB, method, path string, body []byte, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (s *server) post(tb testing.TB, path, body string, header ...string) response {
	tb.Helper()
	return s.do(tb, "POST", path, []byte(body), header...)
}

func (s *server) get(tb testing.TB, path string) response {
	tb.Helper()
	return s.do(tb, "GET", path, nil)
}

// walkthrough runs a seed walkthrough with BASE pointed at s and returns the
// JSON values its curls printed, in order.
func (s *server) walkthrough(tb testing.TB, name string) []map[string]any {
	tb.Helper()
	for _, tool := range []string{"bash", "curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("e2e: %s not found", tool)
		}
	}
	script, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	const seedBase = "BASE=https://lex-automata-999015027200.us-central1.run.app\n"
	if !bytes.Contains(script, []byte(seedBase)) {
		tb.Fatalf("%s lost its BASE line", name)
	}
	script = bytes.Replace(script, []byte(seedBase), []byte("BASE="+s.base+"\n"), 1)
	cmd := exec.Command("bash", "-e", "-o", "pipefail")
	cmd.Stdin = bytes.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v\n%s\n%s", name, err, out, stderr.String())
	}
	var values []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			tb.Fatalf("%s printed %q: %v", name, out, err)
		}
		values = append(values, v)
	}
	return values
}

func subjectOf(tb testing.TB, receipt map[string]any) map[string]any {
	tb.Helper()
	cs, ok := receipt["credentialSubject"].(map[string]any)
	if !ok {
		tb.Fatalf("not a receipt: %v", receipt)
	}
	return cs
}

func TestWalkthroughA(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir()) // the walkthrough's agents are fixed: a server of its own
	out := s.walkthrough(t, "walkthrough_a.sh")
	if len(out) != 3 {
		t.Fatalf("printed %d JSON values, want 3: %v", len(out), out)
	}
	if out[0]["status"] != "funded" || out[1]["status"] != "delivered" || len(out[1]["evidence_hash"].(string)) != 64 {
		t.Fatalf("fund and deliver printed %v", out[:2])
	}
	cs := subjectOf(t, out[2])
	if cs["verdict"] != "release" || cs["tier"] != "buyer-accept" || !equalPayout(cs["payout"], "did:nanda:seller", 50) {
		t.Fatalf("accept printed %v", cs)
	}
	s.verify(t, out[2])
}

func TestWalkthroughB(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir()) // the walkthrough's agents are fixed: a server of its own
	out := s.walkthrough(t, "walkthrough_b.sh")
	if len(out) != 3 {
		t.Fatalf("printed %d JSON values, want 3: %v", len(out), out)
	}
	cs := subjectOf(t, out[2])
	if cs["verdict"] != "refund" || cs["tier"] != "tier0" || !equalPayout(cs["payout"], "did:nanda:buyer", 50) || cs["reason"] != "far fewer rows than agreed" {
		t.Fatalf("dispute printed %v", cs)
	}
	checks := cs["checks"].([]any)
	if len(checks) != 1 || checks[0].(map[string]any)["passed"] != false || checks[0].(map[string]any)["kind"] != "assertion" {
		t.Fatalf("checks %v", checks)
	}
	s.verify(t, out[2])
	id := cs["contract_id"].(string)
	c := s.get(t, "/contracts/"+id).obj(t)
	if c["status"] != "resolved" || c["evidence_hash"] != cs["evidence_hash"] || c["contract_hash"] != cs["contract_hash"] {
		t.Fatalf("contract %v", c)
	}
	// The court's key at /health signed it.
	h := s.get(t, "/health").obj(t)
	if h["court_public_key"] != out[2]["proof"].(map[string]any)["publicKey"] {
		t.Fatalf("health key %v", h["court_public_key"])
	}
}

func equalPayout(p any, did string, amount float64) bool {
	m, ok := p.(map[string]any)
	return ok && len(m) == 1 && m[did] == amount
}

func (s *server) verify(tb testing.TB, receipt map[string]any) {
	tb.Helper()
	b, _ := json.Marshal(map[string]any{"receipt": receipt})
	if v := s.post(tb, "/verify", string(b)).obj(tb); v["valid"] != true {
		tb.Fatalf("verify: %v", v)
	}
}

// deliveredCase runs a contract to delivered over HTTP.
func (s *server) deliveredCase(tb testing.TB, seller, acceptance, deliverable string) string {
	tb.Helper()
	r := s.post(tb, "/contracts", `{"buyer":"did:e2e:buyer","seller":"`+seller+`","price":40,"acceptance":`+acceptance+`}`)
	if r.status != 200 {
		tb.Fatalf("create %d %s", r.status, r.body)
	}
	id := r.obj(tb)["contract_id"].(string)
	if r := s.post(tb, "/contracts/"+id+"/fund", `{}`); r.status != 200 {
		tb.Fatalf("fund %d %s", r.status, r.body)
	}
	if r := s.post(tb, "/contracts/"+id+"/deliver", `{"deliverable":`+deliverable+`}`); r.status != 200 {
		tb.Fatalf("deliver %d %s", r.status, r.body)
	}
	return id
}

const rows100 = `{"assertions":[{"path":"rows","op":"gte","value":100}]}`

func TestErrors(t *testing.T) {
	t.Parallel()
	s := shared(t, plainServer) // the operator's routes are off on it
	created := s.post(t, "/contracts", `{"buyer":"did:e2e:buyer","seller":"`+unique("did:e2e:seller")+`","price":5}`).obj(t)
	id := created["contract_id"].(string)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"UnknownContract", "GET", "/contracts/esc-0000000000000000", "", 404, "contract_not_found"},
		{"UnknownReceipt", "GET", "/receipts/0000000000000000", "", 404, "receipt_not_found"},
		{"UnknownRoute", "GET", "/nowhere", "", 404, "route_not_found"},
		{"OutOfOrderDeliver", "POST", "/contracts/" + id + "/deliver", `{"deliverable":{}}`, 409, "invalid_state"},
		{"OutOfOrderAccept", "POST", "/contracts/" + id + "/accept", `{}`, 409, "invalid_state"},
		{"OutOfOrderDispute", "POST", "/contracts/" + id + "/dispute", `{}`, 409, "invalid_state"},
		{"FloatPrice", "POST", "/contracts", `{"buyer":"did:a","seller":"did:b","price":1.5}`, 400, "invalid_price"},
		{"UnknownField", "POST", "/contracts", `{"buyer":"did:a","seller":"did:b","price":1,"colour":"red"}`, 400, "unknown_field"},
		{"BadJSON", "POST", "/contracts", `{`, 400, "invalid_json"},
		{"ResolveDisabled", "POST", "/contracts/" + id + "/resolve", `{"verdict":"refund"}`, 403, "operator_disabled"},
		{"JSONTooLarge", "POST", "/contracts", `{"buyer":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "body_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, tc.method, tc.path, []byte(tc.body), malformed, "1") // each is refused on purpose
			if r.status != tc.status || r.code(t) != tc.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	t.Run("CheckerTooLarge", func(t *testing.T) {
		// The server answers as soon as it reads Content-Length and closes
		// the connection, so the body is never sent: speak HTTP by hand.
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.direct, "http://")) // the server's own early answer
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /checkers HTTP/1.1\r\nHost: x\r\nContent-Type: application/wasm\r\nContent-Length: %d\r\n\r\n", 9<<20)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		r := response{status: res.StatusCode, body: b}
		if r.status != 413 || r.code(t) != "body_too_large" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("Idempotency", func(t *testing.T) {
		key := unique("fund-")
		r1 := s.post(t, "/contracts/"+id+"/fund", `{}`, "Idempotency-Key", key)
		r2 := s.post(t, "/contracts/"+id+"/fund", `{}`, "Idempotency-Key", key)
		if r1.status != 200 || r2.status != 200 || string(r1.body) != string(r2.body) || r2.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%d %s / %d %s", r1.status, r1.body, r2.status, r2.body)
		}
		r3 := s.post(t, "/contracts/"+id+"/fund", `{"again":1}`, "Idempotency-Key", key, malformed, "1")
		if r3.status != 409 || r3.code(t) != "idempotency_conflict" {
			t.Fatalf("%d %s", r3.status, r3.body)
		}
		if r4 := s.post(t, "/contracts/"+id+"/fund", `{}`); r4.status != 409 || r4.code(t) != "invalid_state" {
			t.Fatalf("%d %s", r4.status, r4.body)
		}
		hold := s.get(t, "/accounts/hold:escrow:"+id).obj(t)
		if hold["balances"].(map[string]any)["credits"] != 5.0 {
			t.Fatalf("hold %v", hold)
		}
	})
	t.Run("IdempotencyMarkup", func(t *testing.T) {
		// A replay answers the first answer's bytes, markup and all, as
		// a client comparing the two bodies byte for byte expects.
		cid := s.deliveredCase(t, unique("did:e2e:markup"), rows100, `{"rows":150,"html":"<p>"}`)
		body := `{"reason":"<b>late</b> & short"}`
		key := unique("dispute-markup-")
		r1 := s.post(t, "/contracts/"+cid+"/dispute", body, "Idempotency-Key", key)
		r2 := s.post(t, "/contracts/"+cid+"/dispute", body, "Idempotency-Key", key)
		if r1.status != 200 || r2.status != 200 || r2.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(r1.body), `<b>late</b> & short`) {
			t.Fatalf("%d %s / %d %s", r1.status, r1.body, r2.status, r2.body)
		}
		if string(r1.body) != string(r2.body) {
			t.Errorf("the replay's body differs from the first answer:\n%s\n%s", r1.body, r2.body)
		}
	})
	t.Run("BannedSeller", func(t *testing.T) {
		cheat := unique("did:e2e:cheat")
		for range 3 {
			cid := s.deliveredCase(t, cheat, rows100, `{"rows":1}`)
			if r := s.post(t, "/contracts/"+cid+"/dispute", `{"reason":"short"}`); r.status != 200 {
				t.Fatalf("dispute %d %s", r.status, r.body)
			}
		}
		rep := s.get(t, "/agents/"+cheat+"/reputation").obj(t)
		if rep["standing"] != "BANNED" {
			t.Fatalf("reputation %v", rep)
		}
		r := s.post(t, "/contracts", `{"buyer":"did:e2e:buyer","seller":"`+cheat+`","price":5}`)
		if r.status != 400 || r.code(t) != "seller_banned" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

// TestOneWinner: 50 concurrent accepts and disputes over HTTP on one
// delivered contract give one receipt and one payout; the rest get 409.
func TestOneWinner(t *testing.T) {
	t.Parallel()
	s := shared(t, plainServer)
	id := s.deliveredCase(t, unique("did:e2e:seller"), rows100, `{"rows":3}`)
	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/contracts/" + id + "/accept"
			if i%2 == 1 {
				path = "/contracts/" + id + "/dispute"
			}
			statuses[i] = s.post(t, path, `{}`).status
		}()
	}
	wg.Wait()
	won, lost := 0, 0
	for _, st := range statuses {
		switch st {
		case 200:
			won++
		case 409:
			lost++
		default:
			t.Errorf("status %d", st)
		}
	}
	if won != 1 || lost != n-1 {
		t.Fatalf("%d won, %d got 409; want 1 and %d", won, lost, n-1)
	}
	c := s.get(t, "/contracts/"+id).obj(t)
	if c["status"] != "resolved" || len(c["receipts"].([]any)) != 1 {
		t.Fatalf("contract %v", c)
	}
	hold := s.get(t, "/accounts/hold:escrow:"+id).obj(t)
	if len(hold["entries"].([]any)) != 2 || hold["balances"].(map[string]any)["credits"] != 0.0 {
		t.Fatalf("hold %v", hold)
	}
	if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
		t.Fatalf("ledger %v", l)
	}
}

// TestRestart: a graceful stop keeps every contract, receipt and key.
func TestRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir)
	id := s.deliveredCase(t, "did:e2e:seller", rows100, `{"rows":300}`)
	receipt := s.post(t, "/contracts/"+id+"/dispute", `{}`).obj(t)
	key := s.get(t, "/health").obj(t)["court_public_key"]
	s.stop(t)

	s = start(t, dir)
	if c := s.get(t, "/contracts/"+id).obj(t); c["status"] != "resolved" || c["verdict"] != "release" {
		t.Fatalf("contract after restart %v", c)
	}
	if s.get(t, "/health").obj(t)["court_public_key"] != key {
		t.Fatal("the court key changed across a restart")
	}
	s.verify(t, receipt)
	a := s.get(t, "/activity?limit=1").obj(t)
	if a["total_seq"] != 4.0 {
		t.Fatalf("activity %v", a)
	}
	if r := s.post(t, "/contracts", `{"buyer":"did:a","seller":"did:b","price":1}`); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if a := s.get(t, "/activity?limit=1").obj(t); a["total_seq"] != 5.0 {
		t.Fatalf("activity %v", a)
	}
}

func TestOperatorResolve(t *testing.T) {
	t.Parallel()
	s := shared(t, operatorServer)
	id := s.deliveredCase(t, unique("did:e2e:seller"), `{"assertions":[{"path":"summary","op":"nonempty","semantic":true,"description":"faithful"}]}`, `{"summary":"x"}`)
	r := s.post(t, "/contracts/"+id+"/dispute", `{"reason":"unfaithful"}`)
	if cs := subjectOf(t, r.obj(t)); cs["verdict"] != "escalated" {
		t.Fatalf("dispute %v", cs)
	}
	if r := s.post(t, "/contracts/"+id+"/resolve", `{"verdict":"refund"}`, "Authorization", "Bearer wrong"); r.status != 401 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = s.post(t, "/contracts/"+id+"/resolve", `{"verdict":"refund","reason":"invented"}`, "Authorization", "Bearer op")
	cs := subjectOf(t, r.obj(t))
	if r.status != 200 || cs["tier"] != "operator" || !equalPayout(cs["payout"], "did:e2e:buyer", 40) {
		t.Fatalf("%d %v", r.status, cs)
	}
	s.verify(t, r.obj(t))
}
