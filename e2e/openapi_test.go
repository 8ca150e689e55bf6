package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// malformed is the header a test sets on a request it makes wrong on
// purpose (the bad-input corpus, a wrong type to get its refusal): the
// validating proxy does not check such a request against the document,
// and still checks the answer. The proxy drops the header.
const malformed = "Assay-Test-Malformed"

// maxValidatedBody is the largest request body the proxy reads before it
// forwards it; a larger one is forwarded as it comes, unchecked (the
// server refuses it with 413 anyway), so that a test sending only the
// headers of a huge body gets the server's early answer.
const maxValidatedBody = 16 << 20

func init() {
	for _, ct := range []string{"application/wasm", "text/x-python", "text/markdown", "text/html", "text/css", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

// contract is a validating reverse proxy in front of one `assay serve`:
// every request and answer the tests exchange through it is checked
// against the server's own /openapi.json, and a mismatch fails the test
// that started the server.
type contract struct {
	tb     testing.TB
	router routers.Router
	srv    *http.Server
	base   string

	mu     sync.Mutex
	closed bool
	seen   int
	// preflights counts the CORS preflights the proxy carried, by path.
	preflights map[string]int
}

// preflighted is how many CORS preflights of path the proxy carried.
func (p *contract) preflighted(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.preflights[path]
}

// validatingProxy starts a contract proxy on a free loopback port for
// the server at upstream.
func validatingProxy(tb testing.TB, upstream string) *contract {
	tb.Helper()
	_, rt := loadOpenAPI(tb, upstream)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	target, _ := url.Parse(upstream)
	p := &contract{tb: tb, router: rt, base: "http://" + ln.Addr().String(), preflights: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // signatures cover @authority: the one the client used
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 10 * time.Minute},
		// no buffering of answers: each is read whole to be checked
		ModifyResponse: p.checkResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The server closed the connection without an answer: the
			// test sees what a client would.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, herr := hj.Hijack(); herr == nil {
					conn.Close()
					return
				}
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: time.Minute, MaxHeaderBytes: 4 << 20}
	go p.srv.Serve(ln)
	return p
}

// close stops the proxy; checks after it report nothing.
func (p *contract) close() {
	p.mu.Lock()
	if !p.closed {
		p.tb.Logf("openapi: %d exchanges checked against /openapi.json", p.seen)
	}
	p.closed = true
	p.mu.Unlock()
	// The test is over: connections still open (a client that gave up
	// on a hostile request) are closed, not waited for.
	_ = p.srv.Close()
}

func (p *contract) fail(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.tb.Errorf("openapi: "+format, args...)
	}
}

// parsedDocuments holds the routers of the documents the servers served, by the
// SHA-256 of the document's bytes: servers of one binary with the same
// settings serve the same document, which is parsed and validated once.
var parsedDocuments sync.Map // [32]byte -> *parsedDocument

type parsedDocument struct {
	once sync.Once
	doc  *openapi3.T
	rt   routers.Router
	err  error
}

func loadOpenAPI(tb testing.TB, base string) (*openapi3.T, routers.Router) {
	tb.Helper()
	res, err := http.Get(base + "/openapi.json")
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		tb.Fatalf("GET /openapi.json: %d %v", res.StatusCode, err)
	}
	v, _ := parsedDocuments.LoadOrStore(sha256.Sum256(b), &parsedDocument{})
	p := v.(*parsedDocument)
	p.once.Do(func() { p.doc, p.rt, p.err = parseOpenAPI(b) })
	if p.err != nil {
		tb.Fatal(p.err)
	}
	return p.doc, p.rt
}

// parseOpenAPI parses and validates an OpenAPI document and routes its
// operations.
func parseOpenAPI(b []byte) (*openapi3.T, routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("/openapi.json is not valid OpenAPI: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://assay.test"}}
	rt, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, rt, nil
}

type checkKey struct{}

// pending is what the proxy knows of a request when its answer comes.
type pending struct {
	input     *openapi3filter.RequestValidationInput
	malformed bool
	// unrouted: the document has no route for the request; the answer
	// must then be 404 route_not_found, or 405 method_not_allowed with
	// Allow, or the server serves a route the document lacks.
	unrouted error
	what     string
}

func (p *contract) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &pending{malformed: r.Header.Get(malformed) != "", what: fmt.Sprintf("%s %.120s", r.Method, r.URL.RequestURI())}
		r.Header.Del(malformed)
		// A body too large to check is forwarded as it comes, and what the
		// server did not read is drained afterwards, as the server does
		// itself, so that the client reads the answer rather than a reset.
		orig := r.Body
		_ = http.NewResponseController(w).EnableFullDuplex()
		defer func() { _, _ = io.CopyN(io.Discard, orig, 64<<20) }()
		var body []byte
		whole := r.ContentLength >= 0 && r.ContentLength <= maxValidatedBody
		if whole {
			var err error
			body, err = io.ReadAll(r.Body)
			if err != nil {
				return // the client went away
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		} else {
			r.Body = io.NopCloser(orig)
		}
		p.mu.Lock()
		p.seen++
		if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			p.preflights[r.URL.Path]++
		}
		p.mu.Unlock()
		// HEAD has no body to check; a browser asks for /favicon.ico of
		// its own accord, not the test.
		if r.Method != http.MethodHead && r.URL.Path != "/favicon.ico" {
			vreq := r.Clone(context.Background())
			vreq.URL.Scheme, vreq.URL.Host = "http", "assay.test"
			vreq.Body = io.NopCloser(bytes.NewReader(body))
			route, params, err := p.router.FindRoute(vreq)
			if err != nil {
				c.unrouted = err
			} else {
				c.input = &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
					Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
				if !c.malformed && whole {
					if err := openapi3filter.ValidateRequest(context.Background(), c.input); err != nil {
						p.fail("%s: the request does not match the document (mark a deliberate one with %s): %.2000v", c.what, malformed, err)
					}
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), checkKey{}, c)))
	})
}

// checkResponse reads the answer whole and checks it against the
// document's answers of the request's route.
func (p *contract) checkResponse(res *http.Response) error {
	c, _ := res.Request.Context().Value(checkKey{}).(*pending)
	if c == nil || (c.input == nil && c.unrouted == nil) {
		return nil
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	if c.unrouted != nil {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		refused := json.Unmarshal(b, &e) == nil &&
			(res.StatusCode == http.StatusNotFound && e.Error.Code == "route_not_found" ||
				res.StatusCode == http.StatusMethodNotAllowed && e.Error.Code == "method_not_allowed" && res.Header.Get("Allow") != "")
		if !refused {
			p.fail("%s: answered %d, but the document has no such route (%v): %.300s", c.what, res.StatusCode, c.unrouted, b)
		}
		return nil
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: c.input, Status: res.StatusCode, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(b)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		var me openapi3.MultiError
		if errors.As(err, &me) && len(me) == 0 {
			return nil
		}
		p.fail("%s: the answer %d does not match the document: %.2000v\nbody: %.500s", c.what, res.StatusCode, err, b)
	}
	return nil
}

// TestOpenAPI_Lint lints the served document with Redocly's CLI (npm,
// e2e/testdata/openapi): no errors.
func TestOpenAPI_Lint(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (.ci/run installs Node.js)", tool)
		}
	}
	s := shared(t, operatorServer) // every route served: the operator's and the test clock's too
	dir, err := filepath.Abs("testdata/openapi")
	if err != nil {
		t.Fatal(err)
	}
	nodePackages(t, dir, "@redocly/cli")
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, s.get(t, "/openapi.json").body, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lint := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "redocly"), "lint", "--format", "stylish", doc)
	lint.Dir = dir
	lint.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := lint.CombinedOutput()
	t.Logf("redocly lint:\n%s", out)
	if err != nil {
		t.Fatalf("redocly lint: %v", err)
	}
	if !strings.Contains(string(out), "valid") {
		t.Fatalf("redocly lint said nothing of the document")
	}
}

// recordingTB is a testing.TB whose errors are recorded, not reported.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingTB) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// TestOpenAPI_ProxyCatches: the validating proxy, in front of a server
// that serves assay's own document but answers wrongly, fails the test:
// a field of the wrong type, an error code the route lacks, a route the
// document lacks; a right answer passes.
func TestOpenAPI_ProxyCatches(t *testing.T) {
	t.Parallel()
	real := shared(t, plainServer)
	doc := real.get(t, "/openapi.json").body
	upstream := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/openapi.json":
			w.Write(doc)
		case "/healthz":
			fmt.Fprint(w, `{"status":"ok"}`)
		case "/ledger":
			fmt.Fprint(w, `{"sums":{},"balanced":"yes"}`)
		case "/contracts/esc-1":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"detail":"no","error":{"code":"listing_not_found","message":"no"}}`)
		default:
			fmt.Fprint(w, `{"served":"but undocumented"}`)
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go upstream.Serve(ln)
	t.Cleanup(func() { upstream.Close() })

	for path, wrong := range map[string]bool{"/healthz": false, "/ledger": true, "/contracts/esc-1": true, "/nowhere": true} {
		rec := &recordingTB{TB: t}
		p := validatingProxy(rec, "http://"+ln.Addr().String())
		res, err := http.Get(p.base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		p.close()
		if got := rec.recorded(); (len(got) > 0) != wrong {
			t.Errorf("GET %s through the proxy: recorded %q, want a failure: %v", path, got, wrong)
		} else if wrong {
			t.Logf("GET %s: %.160s", path, got[0])
		}
	}
}
