package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// raw sends a request as a client that sets only what it is given: no
// Content-Type unless ct is set, a fresh connection each time.
func (s *server) raw(tb testing.TB, method, path, ct string, body []byte, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %.80s: no HTTP answer: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// TestBadInput_Serve sends the edges of the request (oversized bodies,
// request targets and headers, bodies that are not JSON text, ids that
// are not ids) to a real `assay serve` and checks each coded answer and
// that nothing changed; then the overflow that was reported: 1,025
// deposits of 9007199254.740991 USD into one wallet end in refusals, not
// in a wrapped-around balance, and the ledger stays exact.
func TestBadInput_Serve(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), "ASSAY_OPERATOR_TOKEN=op")
	created := s.post(t, "/contracts", `{"buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50}`)
	if created.status != 200 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	id := created.obj(t)["contract_id"].(string)
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/ledger", "/activity?limit=1000", "/contracts/" + id, "/agents/did:nanda:seller/reputation"} {
			r := s.get(t, p)
			b.WriteString(p + " " + string(r.body) + "\n")
		}
		return b.String()
	}
	before := state()
	big := []byte(`{"buyer":"` + strings.Repeat("x", 40<<20) + `"}`)
	for _, tc := range []struct {
		name         string
		method, path string
		ct           string
		body         []byte
		header       []string
		status       int
		code         string
	}{
		{"Body40MiB", "POST", "/contracts", "application/json", big, nil, 413, "body_too_large"},
		{"Path16KB", "GET", "/contracts/" + strings.Repeat("a", 16<<10), "", nil, nil, 414, "uri_too_long"},
		{"Headers5KB", "GET", "/health", "", nil, []string{"X-Pad", strings.Repeat("h", 5<<10)}, 431, "headers_too_large"},
		{"Headers40KB", "GET", "/health", "", nil, []string{"X-Pad", strings.Repeat("h", 40<<10)}, 431, "headers_too_large"},
		{"NoContentType", "POST", "/contracts/" + id + "/fund", "", []byte(`{}`), nil, 415, "unsupported_media_type"},
		{"FormContentType", "POST", "/contracts/" + id + "/fund", "application/x-www-form-urlencoded", []byte(`{}`), nil, 415, "unsupported_media_type"},
		{"InvalidUTF8", "POST", "/contracts", "application/json", []byte("{\"buyer\":\"did:\xff\",\"seller\":\"did:b\",\"price\":5}"), nil, 400, "invalid_utf8"},
		{"LoneSurrogate", "POST", "/contracts", "application/json", []byte(`{"buyer":"did:\udc00","seller":"did:b","price":5}`), nil, 400, "invalid_utf8"},
		{"NullBody", "POST", "/contracts/" + id + "/fund", "application/json", []byte(`null`), nil, 400, "invalid_json"},
		{"DeepNesting", "POST", "/contracts", "application/json", []byte(`{"acceptance":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`), nil, 400, "invalid_json"},
		{"HugePrice", "POST", "/contracts", "application/json", []byte(`{"buyer":"did:a","seller":"did:b","price":9223372036854775807}`), nil, 400, "invalid_price"},
		{"BidiBuyer", "POST", "/contracts", "application/json", []byte(`{"buyer":"did:\u202ea","seller":"did:b","price":5}`), nil, 400, "invalid_did"},
		{"DotDotSeller", "POST", "/contracts", "application/json", []byte(`{"buyer":"did:a","seller":"..","price":5}`), nil, 400, "invalid_did"},
		{"NULReason", "POST", "/contracts/" + id + "/dispute", "application/json", []byte(`{"reason":"a\u0000b"}`), nil, 400, "invalid_reason"},
		{"InvalidUTF8Path", "GET", "/agents/did:%FF/reputation", "", nil, nil, 400, "invalid_utf8"},
		{"StarPath", "GET", "/agents/*/receipts", "", nil, nil, 400, "invalid_did"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.raw(t, tc.method, tc.path, tc.ct, tc.body, append(tc.header, malformed, "1")...)
			if r.status != tc.status || r.code(t) != tc.code {
				t.Fatalf("%d %.300s; want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if after := state(); after != before {
				t.Fatalf("the state changed:\n%s\n%s", before, after)
			}
		})
	}
	if r := s.raw(t, "POST", "/contracts/"+id+"/fund", "", nil); r.status != 200 {
		t.Fatalf("a body-less fund, as the seed's clients may send: %d %s", r.status, r.body)
	}

	t.Run("Overflow", func(t *testing.T) {
		taken, refused := 0, 0
		for i := range 1025 {
			// The operator's deposit: the signed market takes no other for
			// an agent that does not sign.
			r := s.raw(t, "POST", "/market/wallets/whale/deposit", "application/json", []byte(`{"amount_usd":"9007199254.740991"}`), "Authorization", "Bearer op")
			switch {
			case r.status == 201:
				taken++
			case r.status >= 400 && r.status < 500:
				// Refused for the amount, not for who asked.
				if code := r.code(t); code != "amount_too_large" && code != "wallet_limit_exceeded" {
					t.Fatalf("deposit %d: %d %s", i, r.status, r.body)
				}
				refused++
			default:
				t.Fatalf("deposit %d: %d %s", i, r.status, r.body)
			}
		}
		if refused == 0 {
			t.Fatalf("1,025 deposits of 9007199254.740991 were all taken")
		}
		w := s.get(t, "/market/wallets/whale").obj(t)
		bal, _ := w["balance_usd"].(float64)
		if want := float64(taken) * 9007199254.740991; bal < 0 || bal > 4.7e12 || bal < want*0.999999 || bal > want*1.000001 {
			t.Fatalf("wallet %v after %d deposits taken, want about %.0f", w, taken, want)
		}
		if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
			t.Fatalf("ledger %v", l)
		}
		t.Logf("%d deposits taken (%.0f USD), %d refused", taken, bal, refused)
	})
}
