package e2e

import (
	"bytes"
	"context"
	"encoding/json"
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

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logArgs run a server whose log integrates every 50 ms, under a lease of
// a second: a server started again on the same data directory waits for
// the lease of the one before it to run out before it integrates.
var logArgs = []string{"--log-origin", "e2e.test/log", "--log-interval", "50ms", "--log-lease", "1s"}

// logged starts a server with the three services open and its log on.
func logged(tb testing.TB, dir string, args ...string) *server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts a server")
	}
	return startServe(tb, dir, append(append([]string{}, logArgs...), args...),
		[]string{"ASSAY_OPERATOR_TOKEN=op", "ASSAY_MARKET_AUTH=open", "ASSAY_MATTERS_AUTH=open"}, 30*time.Second)
}

// courtCase runs a contract to its receipt: accepted, or disputed on
// criteria the delivery fails. It returns the receipt's id.
func courtCase(tb testing.TB, s *server, buyer, seller string, dispute bool) string {
	tb.Helper()
	c := s.post(tb, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":10,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":100}]}}`, buyer, seller))
	if c.status/100 != 2 {
		tb.Fatalf("create: %d %s", c.status, c.body)
	}
	id := c.obj(tb)["contract_id"].(string)
	rows := 120
	if dispute {
		rows = 40
	}
	for _, step := range []struct{ path, body string }{{"/fund", `{}`}, {"/deliver", fmt.Sprintf(`{"deliverable":{"rows":%d}}`, rows)}} {
		if r := s.post(tb, "/contracts/"+id+step.path, step.body); r.status != 200 {
			tb.Fatalf("%s: %d %s", step.path, r.status, r.body)
		}
	}
	end := "/accept"
	if dispute {
		end = "/dispute"
	}
	r := s.post(tb, "/contracts/"+id+end, `{}`)
	if r.status != 200 {
		tb.Fatalf("%s: %d %s", end, r.status, r.body)
	}
	return strings.TrimPrefix(r.obj(tb)["id"].(string), "urn:assay:receipt:")
}

// logKey is the server's log verifier key.
func logKey(tb testing.TB, s *server) string {
	tb.Helper()
	r := s.get(tb, "/log/key")
	if r.status != 200 {
		tb.Fatalf("/log/key: %d %s", r.status, r.body)
	}
	return r.obj(tb)["verifier_key"].(string)
}

// waitLogged polls the checkpoint until every id is included in it, and
// returns the checkpoint.
func waitLogged(tb testing.TB, s *server, ids ...string) []byte {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := true
		for _, id := range ids {
			if r := s.get(tb, "/receipts/"+id); r.header.Get("Assay-Log-Status") != "included" {
				all = false
				break
			}
		}
		if all {
			return getBytes(tb, s.base+"/log/checkpoint")
		}
		if time.Now().After(deadline) {
			tb.Fatalf("receipts not in the log after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getBytes fetches a URL by plain HTTP, as a log client written from the
// specifications does (through the validating proxy, which checks each
// tile path against the document's rows).
func getBytes(tb testing.TB, url string) []byte {
	tb.Helper()
	res, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		tb.Fatalf("GET %s: %d %v %s", url, res.StatusCode, err, b)
	}
	return b
}

// httpTiles is a tlog.TileReader over plain HTTP, written from C2SP
// tlog-tiles: <prefix>/tile/<L>/<N>[.p/<W>], N in 3-digit groups.
type httpTiles struct {
	tb     testing.TB
	prefix string
}

func (h httpTiles) Height() int { return 8 }

func (h httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		n := fmt.Sprintf("%03d", t.N%1000)
		for x := t.N / 1000; x > 0; x /= 1000 {
			n = fmt.Sprintf("x%03d/", x%1000) + n
		}
		p := fmt.Sprintf("%s/tile/%d/%s", h.prefix, t.L, n)
		if t.W < 256 {
			p += fmt.Sprintf(".p/%d", t.W)
		}
		out[i] = getBytes(h.tb, p)
	}
	return out, nil
}

func (httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// openCheckpoint verifies a checkpoint note with key and parses its tree.
func openCheckpoint(tb testing.TB, key string, cp []byte) tlog.Tree {
	tb.Helper()
	v, err := note.NewVerifier(key)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		tb.Fatalf("checkpoint: %v\n%s", err, cp)
	}
	lines := strings.Split(n.Text, "\n")
	size, _ := strconv.ParseInt(lines[1], 10, 64)
	h, err := tlog.ParseHash(lines[2])
	if err != nil || lines[0] != "e2e.test/log" {
		tb.Fatalf("checkpoint text %q: %v", n.Text, err)
	}
	return tlog.Tree{N: size, Hash: h}
}

// TestLog_ThreeServices runs cases in the court, the market and judgment
// matters, then verifies every receipt's inclusion with two clients that
// share no code with the server's log: golang.org/x/mod/sumdb/tlog's
// proofs over tiles fetched by plain HTTP, and a Node.js verifier written
// from the C2SP specifications (testdata/tlog/verify.mjs); and that the
// later checkpoint is consistent with the earlier.
func TestLog_ThreeServices(t *testing.T) {
	t.Parallel()
	s := logged(t, t.TempDir())
	key := logKey(t, s)
	ids := []string{courtCase(t, s, "did:example:b1", "did:example:s1", false)}
	earlier := waitLogged(t, s, ids...)
	ids = append(ids, courtCase(t, s, "did:example:b1", "did:example:s2", true))

	// The market: a listing whose checker passes, bought, challenged.
	wasm, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasm, "Content-Type", "application/wasm")
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	sum := up.obj(t)["sha256"].(string)
	if r := s.post(t, "/market/wallets/buyer/deposit", `{"amount_usd":"10"}`); r.status != 201 {
		t.Fatalf("deposit: %d %s", r.status, r.body)
	}
	pub := s.post(t, "/market/listings", fmt.Sprintf(`{"agent":"seller","title":"squares 1-3","problem_statement":"table of squares of the integers 1 to 3",
		"artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"2.50","est_recompute_cost_usd":25,"checker":{"sha256":%q}}`, sum))
	if pub.status != 201 {
		t.Fatalf("publish: %d %s", pub.status, pub.body)
	}
	lid := pub.obj(t)["listing"].(map[string]any)["listing_id"].(string)
	if r := s.post(t, "/market/listings/"+lid+"/purchase", `{"agent":"buyer"}`); r.status != 201 {
		t.Fatalf("purchase: %d %s", r.status, r.body)
	}
	ch := s.post(t, "/market/listings/"+lid+"/challenge", `{"agent":"buyer","evidence":"4"}`)
	if ch.status != 201 {
		t.Fatalf("challenge: %d %s", ch.status, ch.body)
	}
	for _, agent := range []string{"buyer", "seller"} {
		var page struct{ Receipts []struct{ ID string } }
		if err := json.Unmarshal(s.get(t, "/agents/"+agent+"/receipts").body, &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Receipts {
			ids = append(ids, strings.TrimPrefix(r.ID, "urn:assay:receipt:"))
		}
	}

	// Judgment matters: a Matter opened.
	m := s.post(t, "/api/v1/economic/matters/open", `{"requester_id":"alice",`+strings.TrimPrefix(matterOpen(time.Now().Add(time.Hour), "o1"), "{"))
	if m.status != 201 {
		t.Fatalf("open: %d %s", m.status, m.body)
	}
	ids = append(ids, strings.TrimPrefix(m.obj(t)["receipt"].(map[string]any)["id"].(string), "urn:assay:receipt:"))
	if len(ids) < 5 {
		t.Fatalf("only %d receipts: %v", len(ids), ids)
	}
	later := waitLogged(t, s, ids...)

	// x/mod's tlog over plain HTTP: each receipt's entry is at its index,
	// and the later tree extends the earlier.
	tree := openCheckpoint(t, key, later)
	old := openCheckpoint(t, key, earlier)
	hr := tlog.TileHashReader(tree, httpTiles{tb: t, prefix: s.base + "/log"})
	for _, id := range ids {
		r := s.get(t, "/receipts/"+id)
		idx, err := strconv.ParseInt(r.header.Get("Assay-Log-Index"), 10, 64)
		if err != nil {
			t.Fatalf("%s: no log index: %v", id, r.header)
		}
		var rc struct {
			ID, IssuanceDate string
			Type             []string
			Proof            struct{ SubjectHash, PublicKey, Signature string }
		}
		json.Unmarshal(r.body, &rc)
		entry := fmt.Sprintf("assay-receipt/v1\nid %s\nkind %s\nissued %s\nsubject %s\nkey %s\nsignature %s\n",
			strings.TrimPrefix(rc.ID, "urn:assay:receipt:"), rc.Type[1], rc.IssuanceDate, rc.Proof.SubjectHash, rc.Proof.PublicKey, rc.Proof.Signature)
		p, err := tlog.ProveRecord(tree.N, idx, hr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, tree.N, tree.Hash, idx, tlog.RecordHash([]byte(entry))); err != nil {
			t.Fatalf("%s at %d: %v", id, idx, err)
		}
	}
	tp, err := tlog.ProveTree(tree.N, old.N, hr)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(tp, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		t.Fatalf("the later checkpoint does not extend the earlier: %v", err)
	}

	// The Node.js verifier.
	if _, err := exec.LookPath("node"); err != nil {
		t.Log("node not found: the independent verifier did not run")
	} else {
		in, _ := json.Marshal(map[string]any{"receipts": ids, "earlier": string(earlier)})
		cmd := exec.Command("node", "testdata/tlog/verify.mjs", s.base, key)
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"ok":true`) {
			t.Fatalf("verify.mjs: %v\n%s", err, out)
		}
		t.Logf("verify.mjs: %s", out)
	}

	// assay verify: against the live log, and offline from the bundle.
	bundle := s.get(t, "/receipts/"+ids[0]+"?log=true")
	file := filepath.Join(t.TempDir(), "bundle.json")
	os.WriteFile(file, bundle.body, 0o600)
	for _, args := range [][]string{{"--log", s.base, "--log-key", key, file}, {"--log-key", key, file}} {
		out, err := exec.Command(binary, append([]string{"verify"}, args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"included":true`) {
			t.Fatalf("assay verify %v: %v\n%s", args, err, out)
		}
	}
}

// audit runs assay audit and returns its report and exit status.
func runAudit(tb testing.TB, args ...string) (map[string]any, int) {
	tb.Helper()
	cmd := exec.Command(binary, append([]string{"audit"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(out, &rep); err != nil {
		tb.Fatalf("assay audit %v: %d %s %s", args, code, out, stderr.Bytes())
	}
	return rep, code
}

func problems(rep map[string]any) string {
	b, _ := json.Marshal(rep["problems"])
	return string(b)
}

// TestLog_Tamper: a receipt removed from the store, a receipt changed, and
// a fork signed with the log's own key are each caught by assay audit; the
// witness refuses to cosign the fork.
func TestLog_Tamper(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A witness of the log.
	s := logged(t, dir)
	key := logKey(t, s)
	s.stop(t)
	wdir := t.TempDir()
	wcmd := exec.Command(binary, "witness", "--addr", "127.0.0.1:0", "--data", wdir, "--name", "e2e.test/w1", "--log", key)
	wout, _ := wcmd.StdoutPipe()
	var werr bytes.Buffer
	wcmd.Stderr = &werr
	if err := wcmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wcmd.Process.Signal(syscall.SIGTERM); wcmd.Wait() })
	head := make([]byte, 4096)
	n, _ := io.ReadAtLeast(wout, head, 1)
	for !strings.Contains(string(head[:n]), "\nkey ") || !strings.HasSuffix(string(head[:n]), "\n") {
		m, err := wout.Read(head[n:])
		if err != nil {
			t.Fatalf("witness: %v %s %s", err, head[:n], werr.String())
		}
		n += m
	}
	var waddr, wkey string
	for _, line := range strings.Split(string(head[:n]), "\n") {
		if i := strings.Index(line, " on http://"); i > 0 {
			waddr = line[i+4:]
		}
		if k, ok := strings.CutPrefix(line, "key "); ok {
			wkey = k
		}
	}
	witnessed := []string{"--log-witness", wkey + "@" + waddr}

	s = logged(t, dir, witnessed...)
	ids := []string{courtCase(t, s, "did:example:b", "did:example:s", false), courtCase(t, s, "did:example:b", "did:example:s", true)}
	waitLogged(t, s, ids...)
	state := t.TempDir()
	auditArgs := func(s *server, extra ...string) []string {
		return append([]string{"--log", s.base, "--state", state, "--log-key", key}, extra...)
	}
	if rep, code := runAudit(t, auditArgs(s, "--witness", wkey, "--agent", "did:example:b")...); code != 0 || rep["size"].(float64) < 2 {
		t.Fatalf("a sound log: %d %v", code, rep)
	}
	s.stop(t)

	// A fork: a copy of the data directory (the same keys) that goes its
	// own way.
	fork := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", fork).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	s = logged(t, dir, witnessed...)
	waitLogged(t, s, courtCase(t, s, "did:example:b", "did:example:s", false))
	if rep, code := runAudit(t, auditArgs(s, "--witness", wkey, "--agent", "did:example:b")...); code != 0 {
		t.Fatalf("the log grew soundly: %d %v", code, rep)
	}
	s.stop(t)
	f := logged(t, fork, witnessed...)
	fid := courtCase(t, f, "did:example:x", "did:example:y", true)
	courtCase(t, f, "did:example:x", "did:example:y", false)
	// The witness holds the original's larger tree: it refuses the fork,
	// which the forked server cannot publish with the witness's quorum.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(f.out.String(), "does not extend") && !strings.Contains(f.out.String(), "answered 4") {
		if time.Now().After(deadline) {
			t.Fatalf("the witness did not refuse the fork:\n%s", f.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := f.get(t, "/receipts/"+fid); r.header.Get("Assay-Log-Status") == "included" {
		t.Fatalf("the fork published a checkpoint its witness refused")
	}
	f.stop(t)
	// Without the witness, the fork publishes, signed with the log's key:
	// the auditor sees a checkpoint that does not extend the one it saw.
	f = logged(t, fork)
	waitLogged(t, f, fid)
	rep, code := runAudit(t, auditArgs(f)...)
	if code != 1 || rep["split_view"] != true {
		t.Fatalf("a fork was not reported: %d %v", code, rep)
	}
	f.stop(t)

	// A receipt removed from the store, and one changed.
	s = logged(t, dir)
	waitLogged(t, s, ids...)
	s.stop(t)
	tamper(t, dir, "receipts", ids[0], ids[1])
	s = logged(t, dir)
	rep, code = runAudit(t, auditArgs(s, "--served", "all")...)
	if code != 1 || !strings.Contains(problems(rep), "no longer serves it") || !strings.Contains(problems(rep), "other bytes than the log holds") {
		t.Fatalf("tampering not reported: %d %v", code, rep)
	}
	s.stop(t)

	// An entry changed in its bundle, the tree left as it was: an auditor
	// reading the log afresh finds an entry the tree does not hold.
	tamper(t, dir, "entry", "0")
	s = logged(t, dir)
	rep, code = runAudit(t, "--log", s.base, "--state", t.TempDir(), "--log-key", key, "--served", "none")
	if code != 1 || !strings.Contains(problems(rep), "reading the entries from 0") {
		t.Fatalf("a changed entry was not reported: %d %v", code, rep)
	}
	s.stop(t)

	// The entry changed and the tree built again from it, signed with the
	// log's key: the witness refuses to cosign a second root for the
	// size it cosigned; without it, the server publishes, and the auditor
	// who saw the first tree reports a split view.
	tamper(t, dir, "rewrite", "0")
	s = logged(t, dir, witnessed...)
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(s.out.String(), "answered 422") {
		if time.Now().After(deadline) {
			t.Fatalf("the witness did not refuse the rewritten log:\n%s", s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := s.get(t, "/log/checkpoint"); r.status != 404 {
		t.Fatalf("the rewritten log published a checkpoint its witness refused: %d %s", r.status, r.body)
	}
	s.stop(t)
	s = logged(t, dir)
	deadline = time.Now().Add(10 * time.Second)
	for s.get(t, "/log/checkpoint").status != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("the rewritten log published nothing:\n%s", s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep, code = runAudit(t, auditArgs(s, "--served", "none")...)
	if code != 1 || rep["split_view"] != true {
		t.Fatalf("a rewritten history was not reported: %d %v", code, rep)
	}
}

// tamperTool is testdata/tlog/tamper, built once per run.
var tamperTool struct {
	once sync.Once
	path string
	err  error
}

// tamper changes the court's badger store in dir, with the server
// stopped, as testdata/tlog/tamper's mode says.
func tamper(tb testing.TB, dir, mode string, args ...string) {
	tb.Helper()
	tamperTool.once.Do(func() {
		tamperTool.path = filepath.Join(tools, "tamper")
		if tamperTool.err = os.MkdirAll(tools, 0o700); tamperTool.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", tamperTool.path, "./testdata/tlog/tamper").CombinedOutput()
		if err != nil {
			tamperTool.err = fmt.Errorf("go build ./testdata/tlog/tamper: %v\n%s", err, out)
		}
	})
	if tamperTool.err != nil {
		tb.Fatal(tamperTool.err)
	}
	out, err := exec.Command(tamperTool.path, append([]string{mode, filepath.Join(dir, "db")}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("tamper %s: %v %s", mode, err, out)
	}
}

// TestLog_SIGKILL: a server killed under load loses no acknowledged
// receipt from the log: after a restart, each is included.
func TestLog_SIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := logged(t, dir)
	var mu sync.Mutex
	var acked []string
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				id, ok := tryCase(s.direct, fmt.Sprintf("did:example:k%d", w), fmt.Sprintf("did:example:s%d-%d", w, i))
				if ok {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	ids := append([]string(nil), acked...)
	mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("no case was acknowledged before the kill")
	}
	s2 := logged(t, dir)
	waitLogged(t, s2, ids...)
	t.Logf("%d acknowledged receipts, all in the log after a SIGKILL", len(ids))
}

// tryCase runs an accepted case by plain HTTP, and reports its receipt id
// if the server acknowledged the accept.
func tryCase(base, buyer, seller string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(path, body string) (map[string]any, bool) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, false
		}
		defer res.Body.Close()
		var m map[string]any
		if json.NewDecoder(res.Body).Decode(&m) != nil || res.StatusCode/100 != 2 {
			return nil, false
		}
		return m, true
	}
	c, ok := post("/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":1,"acceptance":{"assertions":[]}}`, buyer, seller))
	if !ok {
		return "", false
	}
	id := c["contract_id"].(string)
	for _, p := range []string{"/fund", "/deliver"} {
		body := `{}`
		if p == "/deliver" {
			body = `{"deliverable":{"rows":1}}`
		}
		if _, ok := post("/contracts/"+id+p, body); !ok {
			return "", false
		}
	}
	r, ok := post("/contracts/"+id+"/accept", `{}`)
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(r["id"].(string), "urn:assay:receipt:"), true
}
