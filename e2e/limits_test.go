package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// harnessLimits are the limits of the servers the harness starts
// (startServe): the whole suite talks to its servers from one address,
// far faster than any one client of a real server would, so each class
// gets a rate no test reaches, each uploader a quota no test fills, and
// the server more decisions at once than any test runs. A
// test of the limits themselves names its own after them.
const harnessLimits = "reads=20000/1s,writes=20000/1s,decisions=20000/1s,uploads=20000/1s,agent-bytes=4GiB/1h,address-bytes=4GiB/1h,concurrent-decisions=1000"

// defaultLimits are assay serve's own defaults (api.DefaultRates,
// replays.DefaultQuotas, api.DefaultConcurrentDecisions), for a test that
// runs a server as production would.
const defaultLimits = "reads=100/1s,writes=30/1s,decisions=60/1m,uploads=10/1m,agent-bytes=64MiB/24h,address-bytes=16MiB/24h,concurrent-decisions=32"

// viaPeer sends a request to the server itself, not through the
// validating proxy (which forwards no X-Forwarded-For of its client's):
// the test is then the peer, a trusted proxy when the server says so.
func (s *server) viaPeer(tb testing.TB, method, path, ctype string, body []byte, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.direct+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
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

// retryAfter is a 429's Retry-After in seconds, failing the test when
// the answer is not a coded 429 with one.
func retryAfter(tb testing.TB, r response, code string) int {
	tb.Helper()
	if r.status != http.StatusTooManyRequests || r.code(tb) != code {
		tb.Fatalf("%d %s, want 429 %s", r.status, r.body, code)
	}
	n, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || n < 1 {
		tb.Fatalf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
	return n
}

// TestLimits_Rate: a client over its class's rate is answered 429
// rate_limited with Retry-After, and what it asked is not done; another
// client (another address, named by a trusted proxy) is answered
// meanwhile, /health included; a client cannot pass for another by
// writing X-Forwarded-For itself.
func TestLimits_Rate(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), []string{"--limits", "reads=4/1h,writes=2/1h", "--trusted-proxies", "127.0.0.1"}, nil, 30*time.Second)
	a := []string{"X-Forwarded-For", "198.51.100.1"}
	b := []string{"X-Forwarded-For", "198.51.100.2"}
	contract := []byte(`{"buyer":"did:nanda:b","seller":"did:nanda:s","price":5,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":1}]}}`)
	for range 2 {
		if r := s.viaPeer(t, "POST", "/contracts", "application/json", contract, a...); r.status != 200 {
			t.Fatalf("a creation within the rate: %d %s", r.status, r.body)
		}
	}
	wait := retryAfter(t, s.viaPeer(t, "POST", "/contracts", "application/json", contract, a...), "rate_limited")
	if wait < 1700 || wait > 1800 {
		t.Errorf("Retry-After %d, want about half an hour (2 writes an hour)", wait)
	}
	// The refused creation was not made: the court has two contracts.
	act := s.viaPeer(t, "GET", "/activity", "", nil, b...)
	if act.status != 200 || act.obj(t)["count"] != float64(2) {
		t.Errorf("activity after the refusal: %d %s, want 2 events", act.status, act.body)
	}
	// Client a spends its reads too; b's /health is answered all along.
	for range 4 {
		if r := s.viaPeer(t, "GET", "/health", "", nil, a...); r.status != 200 {
			t.Fatalf("a's reads within the rate: %d %s", r.status, r.body)
		}
	}
	retryAfter(t, s.viaPeer(t, "GET", "/health", "", nil, a...), "rate_limited")
	for range 3 {
		if r := s.viaPeer(t, "GET", "/health", "", nil, b...); r.status != 200 {
			t.Errorf("/health for another client while a is limited: %d %s", r.status, r.body)
		}
	}
	// A client that writes its own X-Forwarded-For is a hop on the left,
	// which is never taken: the trusted proxy's (here the test's) right
	// hop is the client.
	spoof := []string{"X-Forwarded-For", "203.0.113.9, 198.51.100.1"}
	retryAfter(t, s.viaPeer(t, "GET", "/health", "", nil, spoof...), "rate_limited")
}

// TestLimits_ForwardedIgnored: without --trusted-proxies, X-Forwarded-For
// names nobody: every request from one peer is one client's.
func TestLimits_ForwardedIgnored(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), []string{"--limits", "writes=3/1h"}, nil, 30*time.Second)
	contract := []byte(`{"buyer":"did:nanda:b","seller":"did:nanda:s","price":5}`)
	for i := range 3 {
		if r := s.viaPeer(t, "POST", "/contracts", "application/json", contract, "X-Forwarded-For", "198.51.100."+strconv.Itoa(i)); r.status != 200 {
			t.Fatalf("within the rate: %d %s", r.status, r.body)
		}
	}
	retryAfter(t, s.viaPeer(t, "POST", "/contracts", "application/json", contract, "X-Forwarded-For", "198.51.100.99"), "rate_limited")
}

// padded is the fixture pass.wasm with a custom section that makes it
// size bytes, its content n: a valid checker of that size, distinct for
// each n.
func padded(tb testing.TB, n, size int) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "checkers", "pass.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	head := len(b) + 1 + 5 // the section's id and a five-byte size
	payload := append([]byte{3, 'p', 'a', 'd'}, strconv.Itoa(n)...)
	payload = append(payload, make([]byte, size-head-len(payload))...)
	l := uint32(len(payload))
	b = append(b, 0, byte(l&0x7f)|0x80, byte(l>>7&0x7f)|0x80, byte(l>>14&0x7f)|0x80, byte(l>>21&0x7f)|0x80, byte(l>>28))
	return append(b, payload...)
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestLimits_Uploads: fifteen anonymous 1 MB checker uploads, as an
// attacker sent them, against the default limits: the uploads rate stores
// ten and refuses five with 429 and Retry-After, and a refused upload
// stores nothing.
func TestLimits_Uploads(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), []string{"--limits", defaultLimits}, nil, 30*time.Second)
	var stored, refused []string
	began := time.Now()
	for n := range 15 {
		m := padded(t, n, 1_000_000)
		r := s.do(t, "POST", "/checkers", m, "Content-Type", "application/wasm")
		switch r.status {
		case 201:
			stored = append(stored, sha(m))
		default:
			retryAfter(t, r, "rate_limited")
			refused = append(refused, sha(m))
		}
	}
	// The rate refills one upload every 6 s: a run slower than that (a
	// loaded machine) may store one more for each 6 s it took.
	refills := int(time.Since(began) / (time.Minute / 10))
	if len(stored) < 10 || len(stored) > 10+refills || len(refused) == 0 {
		t.Fatalf("stored %d and refused %d in %v, want 10 (and one more each 6 s) and the rest refused (uploads=10/1m)", len(stored), len(refused), time.Since(began))
	}
	for _, sum := range stored {
		if r := s.get(t, "/checkers/"+sum); r.status != 200 {
			t.Errorf("a stored checker: %d %s", r.status, r.body)
		}
	}
	for _, sum := range refused {
		if r := s.get(t, "/checkers/"+sum); r.status != 404 {
			t.Errorf("a refused checker: %d %s, want 404", r.status, r.body)
		}
	}
}

// TestLimits_UploadQuota: an address that has stored its quota's bytes is
// refused with 429 upload_quota_exceeded and Retry-After, storing
// nothing, until the bytes come back; another address has its own; a
// checker already stored costs nothing.
func TestLimits_UploadQuota(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), []string{"--limits", "address-bytes=1MiB/24h", "--trusted-proxies", "127.0.0.1"}, nil, 30*time.Second)
	a := []string{"X-Forwarded-For", "198.51.100.1"}
	first, second, third := padded(t, 1, 400_000), padded(t, 2, 400_000), padded(t, 3, 400_000)
	for _, m := range [][]byte{first, second} {
		if r := s.viaPeer(t, "POST", "/checkers", "application/wasm", m, a...); r.status != 201 {
			t.Fatalf("within the quota: %d %s", r.status, r.body)
		}
	}
	wait := retryAfter(t, s.viaPeer(t, "POST", "/checkers", "application/wasm", third, a...), "upload_quota_exceeded")
	if wait < 3600 || wait > 24*3600 {
		t.Errorf("Retry-After %d s, want hours (about 1 MiB a day comes back)", wait)
	}
	if r := s.get(t, "/checkers/"+sha(third)); r.status != 404 {
		t.Errorf("the refused checker: %d %s, want 404", r.status, r.body)
	}
	// A checker already stored stores nothing and costs nothing.
	if r := s.viaPeer(t, "POST", "/checkers", "application/wasm", first, a...); r.status != 200 {
		t.Errorf("a stored checker again: %d %s, want 200", r.status, r.body)
	}
	if r := s.viaPeer(t, "POST", "/checkers", "application/wasm", third, "X-Forwarded-For", "198.51.100.2"); r.status != 201 {
		t.Errorf("another address: %d %s", r.status, r.body)
	}
}
