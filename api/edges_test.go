package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/api"
)

// listen serves mustApp on a real loopback listener.
func listen(tb testing.TB) string {
	tb.Helper()
	app := mustApp(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(ln)
	tb.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

type edgeReq struct {
	method, path, ct, body string
	header                 map[string]string
}

// send sends r with a fresh connection each time, so that one refused
// request cannot hide behind another's connection.
func send(tb testing.TB, base string, r edgeReq) (int, string) {
	tb.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		tb.Fatal(err)
	}
	if r.ct != "" {
		req.Header.Set("Content-Type", r.ct)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %.60s: no HTTP answer: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func errCode(tb testing.TB, body string) string {
	tb.Helper()
	var e struct {
		Detail string
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" || e.Detail != e.Error.Message {
		tb.Fatalf("not a coded error body: %.300q", body)
	}
	return e.Error.Code
}

// TestEdges_Oversized: a body over the server's limit, a long request
// target and large headers get an HTTP answer with a coded JSON error, not
// a reset connection, from Go's client and from curl; the server goes on.
func TestEdges_Oversized(t *testing.T) {
	base := listen(t)
	// 40 MiB, well over the 8 MiB limit: smaller bodies fit in loopback
	// socket buffers, and their reset did not show.
	big := `{"buyer":"` + strings.Repeat("x", 40<<20) + `"}`
	for _, tc := range []struct {
		name   string
		r      edgeReq
		status int
		code   string
	}{
		{"Body40MiB", edgeReq{method: "POST", path: "/contracts", ct: "application/json", body: big}, 413, "body_too_large"},
		{"BodyOverRoute", edgeReq{method: "POST", path: "/contracts", ct: "application/json", body: `{"buyer":"` + strings.Repeat("x", 5000) + `"}`}, 413, "body_too_large"},
		{"Path16KB", edgeReq{method: "GET", path: "/contracts/" + strings.Repeat("a", 16<<10)}, 414, "uri_too_long"},
		{"Query16KB", edgeReq{method: "GET", path: "/activity?limit=" + strings.Repeat("9", 16<<10)}, 414, "uri_too_long"},
		{"Header5KB", edgeReq{method: "GET", path: "/health", header: map[string]string{"X-Big": strings.Repeat("h", api.MaxHeaderBytes+1000)}}, 431, "headers_too_large"},
		{"Header40KB", edgeReq{method: "POST", path: "/contracts", ct: "application/json", body: `{}`, header: map[string]string{"X-Big": strings.Repeat("h", 40<<10)}}, 431, "headers_too_large"},
		{"Path64KB", edgeReq{method: "GET", path: "/contracts/" + strings.Repeat("a", 64<<10)}, 431, "headers_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(t, base, tc.r)
			if status != tc.status || errCode(t, body) != tc.code {
				t.Fatalf("status %d %.200s; want %d %s", status, body, tc.status, tc.code)
			}
			if status, _ := send(t, base, edgeReq{method: "GET", path: "/health"}); status != 200 {
				t.Fatalf("after it, /health answers %d", status)
			}
		})
	}
	t.Run("Chunked40MiB", func(t *testing.T) {
		// No Content-Length: fasthttp finds the body too large while
		// reading its chunks.
		req, err := http.NewRequest("POST", base+"/contracts", io.MultiReader(strings.NewReader(big)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := (&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatalf("no HTTP answer: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 413 || errCode(t, string(b)) != "body_too_large" {
			t.Fatalf("status %d %.200s; want 413 body_too_large", res.StatusCode, b)
		}
	})
	t.Run("Curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("no curl")
		}
		for _, args := range [][]string{
			{"-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@-", base + "/contracts"},
			{base + "/contracts/" + strings.Repeat("a", 16<<10)},
			{"-H", "X-Big: " + strings.Repeat("h", 5<<10), base + "/health"},
			{"-H", "X-Big: " + strings.Repeat("h", 40<<10), base + "/health"},
		} {
			cmd := exec.Command("curl", append([]string{"-sS", "-o", "-", "-w", "\n%{http_code}"}, args...)...)
			cmd.Stdin = strings.NewReader(big)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("curl %.80q: %v: %.300s", args, err, out)
			}
			i := bytes.LastIndexByte(out, '\n')
			code := string(out[i+1:])
			if code != "413" && code != "414" && code != "431" {
				t.Fatalf("curl %.80q: status %s: %.300s", args, code, out)
			}
			errCode(t, string(out[:i]))
		}
	})
}

// TestEdges_Text: JSON routes take JSON text as JSON: valid UTF-8, sent
// with a JSON Content-Type; ids in paths, queries and headers are UTF-8.
// A body-less POST reads as {}.
func TestEdges_Text(t *testing.T) {
	base := listen(t)
	status, body := send(t, base, edgeReq{method: "POST", path: "/contracts", ct: "application/json",
		body: `{"buyer":"did:a","seller":"did:b","price":5}`})
	if status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created struct {
		ContractID string `json:"contract_id"`
	}
	_ = json.Unmarshal([]byte(body), &created)
	id := created.ContractID
	for _, tc := range []struct {
		name   string
		r      edgeReq
		status int
		code   string
	}{
		{"InvalidUTF8Body", edgeReq{method: "POST", path: "/contracts", ct: "application/json", body: "{\"buyer\":\"did:\xff\xfe\",\"seller\":\"did:b\",\"price\":5}"}, 400, "invalid_utf8"},
		{"InvalidUTF8Reason", edgeReq{method: "POST", path: "/contracts/" + id + "/dispute", ct: "application/json", body: "{\"reason\":\"\xc3\"}"}, 400, "invalid_utf8"},
		{"LoneHighSurrogate", edgeReq{method: "POST", path: "/contracts/" + id + "/dispute", ct: "application/json", body: `{"reason":"\ud800 alone"}`}, 400, "invalid_utf8"},
		{"LoneLowSurrogate", edgeReq{method: "POST", path: "/verify", ct: "application/json", body: `{"receipt":"\ud83d\ude00\udc00"}`}, 400, "invalid_utf8"},
		{"HighThenHigh", edgeReq{method: "POST", path: "/verify", ct: "application/json", body: `{"receipt":"\ud83d\ud83d"}`}, 400, "invalid_utf8"},
		{"NoContentType", edgeReq{method: "POST", path: "/contracts", body: `{"buyer":"did:a","seller":"did:b","price":5}`}, 415, "unsupported_media_type"},
		{"FormContentType", edgeReq{method: "POST", path: "/contracts", ct: "application/x-www-form-urlencoded", body: `{"buyer":"did:a","seller":"did:b","price":5}`}, 415, "unsupported_media_type"},
		{"TextPlain", edgeReq{method: "POST", path: "/verify", ct: "text/plain", body: `{}`}, 415, "unsupported_media_type"},
		{"Latin1Charset", edgeReq{method: "POST", path: "/contracts/" + id + "/fund", ct: "application/json; charset=iso-8859-1", body: `{}`}, 415, "unsupported_media_type"},
		{"BadMediaType", edgeReq{method: "POST", path: "/contracts/" + id + "/fund", ct: "application/", body: `{}`}, 415, "unsupported_media_type"},
		{"InvalidUTF8Path", edgeReq{method: "GET", path: "/agents/did:%FF/reputation"}, 400, "invalid_utf8"},
		{"InvalidUTF8Query", edgeReq{method: "GET", path: "/market/listings?query=%FF"}, 400, "invalid_utf8"},
		{"BidiPath", edgeReq{method: "GET", path: "/agents/did:%E2%80%AEx/reputation"}, 400, "invalid_did"},
		{"DotDotPath", edgeReq{method: "GET", path: "/agents/%2E%2E/receipts"}, 400, "invalid_did"},
		{"IdemKeyInvalidUTF8", edgeReq{method: "POST", path: "/contracts/" + id + "/fund", ct: "application/json", body: `{}`, header: map[string]string{"Idempotency-Key": "k\xff"}}, 400, "invalid_utf8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(t, base, tc.r)
			if status != tc.status || errCode(t, body) != tc.code {
				t.Fatalf("status %d %.300s; want %d %s", status, body, tc.status, tc.code)
			}
		})
	}
	t.Run("IdemKeyControl", func(t *testing.T) {
		// Go's client does not send a control character in a header.
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /contracts/%s/fund HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: k\x01\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", id)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 400 || errCode(t, string(b)) != "invalid_header" {
			t.Fatalf("status %d %s; want 400 invalid_header", res.StatusCode, b)
		}
	})
	// Nothing above changed the contract, and the seed's forms still work:
	// a +json type, a charset, and a body-less POST.
	if status, body := send(t, base, edgeReq{method: "GET", path: "/contracts/" + id}); status != 200 || !strings.Contains(body, `"status":"created"`) {
		t.Fatalf("contract after refusals: %d %s", status, body)
	}
	if status, body := send(t, base, edgeReq{method: "POST", path: "/contracts/" + id + "/fund"}); status != 200 {
		t.Fatalf("body-less fund: %d %s", status, body)
	}
	if status, body := send(t, base, edgeReq{method: "POST", path: "/contracts/" + id + "/deliver", ct: "application/vnd.assay+json; charset=UTF-8", body: `{"deliverable":{"rows":1}}`}); status != 200 {
		t.Fatalf("deliver as +json: %d %s", status, body)
	}
	if status, body := send(t, base, edgeReq{method: "POST", path: "/verify", ct: "application/json", body: `{"receipt":"\ud83d\ude00 \\ud800"}`}); status != 422 || !strings.Contains(body, "not_a_receipt") { // past the edges: no receipt, but no invalid_utf8
		t.Fatalf("a surrogate pair and an escaped backslash: %d %s", status, body)
	}
	if status, body := send(t, base, edgeReq{method: "GET", path: "/ledger"}); status != 200 || !strings.Contains(body, `"balanced":true`) {
		t.Fatalf("ledger: %d %s", status, body)
	}
}
