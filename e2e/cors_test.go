package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// crossOriginPage is a page of another origin that runs a whole case
// against the court with fetch: create, fund, deliver, accept, each a JSON
// POST (so each is preflighted), then verifies the receipt, reads the
// contract, and tries the operator's resolve, which the browser must
// refuse (no CORS on operator routes).
const crossOriginPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>arena</title></head><body>
<script>
const court = %q;
async function post(path, body) {
  const r = await fetch(court + path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const j = await r.json();
  if (!r.ok) throw new Error(path + ": " + r.status + " " + JSON.stringify(j));
  return j;
}
window.runCase = async function () {
  const c = await post("/contracts", {buyer: "did:arena:buyer", seller: "did:arena:seller", price: 7,
    acceptance: {assertions: [{path: "rows", op: "gte", value: 3}]}});
  const id = c.contract_id;
  const funded = await post("/contracts/" + id + "/fund", {});
  const delivered = await post("/contracts/" + id + "/deliver", {deliverable: {rows: 5}, evidence: {}});
  const receipt = await post("/contracts/" + id + "/accept", {});
  const verified = await post("/verify", {receipt});
  const contract = await (await fetch(court + "/contracts/" + id)).json();
  let resolve = "answered";
  try {
    await fetch(court + "/contracts/" + id + "/resolve", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
  } catch (e) {
    resolve = "refused by the browser";
  }
  return JSON.stringify({id, created: c.status, funded: funded.status, delivered: delivered.status,
    verdict: receipt.credentialSubject.verdict, tier: receipt.credentialSubject.tier, valid: verified.valid,
    status: contract.status, resolve});
};
</script></body></html>`

// TestCORS_BrowserCase: a page served from another origin (a second
// loopback server) runs a whole case against assay serve in headless
// Chromium: every JSON POST is preflighted and allowed, the receipt
// verifies, and the operator's route is refused by the browser.
func TestCORS_BrowserCase(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	s := shared(t, operatorServer)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := fmt.Sprintf(crossOriginPage, s.base)
	arena := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})}
	go arena.Serve(ln)
	t.Cleanup(func() { arena.Close() })
	origin := "http://" + ln.Addr().String()
	if strings.HasPrefix(s.base, origin) {
		t.Fatalf("the page's origin %s is the court's", origin)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/"), chromedp.WaitReady("body")); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.runCase()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's case: %v", err)
	}
	t.Logf("the page's case: %s", out)
	for _, want := range []string{`"created":"created"`, `"funded":"funded"`, `"delivered":"delivered"`, `"verdict":"release"`,
		`"tier":"buyer-accept"`, `"valid":true`, `"resolve":"refused by the browser"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the page's case lacks %s: %s", want, out)
		}
	}
	if n := s.proxy.preflighted("/contracts"); n == 0 {
		t.Errorf("no preflight of POST /contracts reached the server")
	}
	if n := s.proxy.preflighted("/verify"); n == 0 {
		t.Errorf("no preflight of POST /verify reached the server")
	}
}

// TestCORS_Headers: with an Origin, an open route's answer allows any
// origin without credentials; an operator's route's does not; the
// preflight of a route that takes no such method answers 405 with Allow;
// --cors-origins narrows the origins.
func TestCORS_Headers(t *testing.T) {
	t.Parallel()
	s := shared(t, operatorServer)
	r := s.do(t, "GET", "/health", nil, "Origin", "https://arena.example")
	if r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("GET /health from another origin: %v", r.header)
	}
	pre := s.do(t, "OPTIONS", "/contracts/esc-0000000000000000/resolve", nil, "Origin", "https://arena.example", "Access-Control-Request-Method", "POST")
	if pre.status != 405 || pre.header.Get("Access-Control-Allow-Origin") != "" || pre.header.Get("Allow") == "" || pre.code(t) != "method_not_allowed" {
		t.Fatalf("preflight of the operator's resolve: %d %v %s", pre.status, pre.header, pre.body)
	}
	if r := s.do(t, "DELETE", "/contracts/esc-0000000000000000", nil, malformed, "1"); r.status != 405 || r.header.Get("Allow") != "GET, HEAD, OPTIONS" || r.code(t) != "method_not_allowed" {
		t.Fatalf("DELETE a contract: %d %v %s", r.status, r.header, r.body)
	}

	narrow := startServe(t, t.TempDir(), []string{"--cors-origins", "https://arena.example"}, nil, 30e9)
	for origin, want := range map[string]string{"https://arena.example": "https://arena.example", "https://elsewhere.example": ""} {
		pre := narrow.do(t, "OPTIONS", "/contracts", nil, "Origin", origin, "Access-Control-Request-Method", "POST")
		if got := pre.header.Get("Access-Control-Allow-Origin"); got != want {
			t.Errorf("preflight from %s: Access-Control-Allow-Origin %q, want %q (%d)", origin, got, want, pre.status)
		}
	}
}
