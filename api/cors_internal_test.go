package api

import (
	"net/http/httptest"
	"testing"
)

// TestCORS_Routes: a preflight of an open route is answered for any
// origin, without credentials; one of an operator's route or a market
// mutation is not (405 with Allow; the judgment routes' 401 comes
// first); a wrong method answers 405 with the
// route table's methods in Allow.
func TestCORS_Routes(t *testing.T) {
	app, _ := fullServer(t)
	preflight := func(path, method string) (int, string, string, string) {
		req := httptest.NewRequest("OPTIONS", path, nil)
		req.Header.Set("Origin", "https://arena.example")
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"), res.Header.Get("Access-Control-Allow-Credentials"), res.Header.Get("Allow")
	}
	for _, tc := range []struct {
		path, method string
		open         bool
	}{
		{"/contracts", "POST", true},
		{"/contracts/esc-1/fund", "POST", true},
		{"/verify", "POST", true},
		{"/market/listings", "GET", true},
		{"/market/search", "POST", true},
		{"/contracts/esc-1/resolve", "POST", false},
		{"/market/tick", "POST", false},
		{"/market/listings", "POST", false},
		{"/market/wallets/a/deposit", "POST", false},
		{mattersBase + "/open", "POST", false},
	} {
		status, origin, creds, allow := preflight(tc.path, tc.method)
		switch {
		case tc.open && (status != 204 || origin != "*" || creds != ""):
			t.Errorf("preflight %s %s: %d origin %q credentials %q", tc.method, tc.path, status, origin, creds)
		case !tc.open && (origin != "" || status < 400 || (status == 405) != (allow != "")):
			t.Errorf("preflight %s %s of a closed route: %d origin %q allow %q", tc.method, tc.path, status, origin, allow)
		}
	}
	res, err := app.Test(httptest.NewRequest("DELETE", "/contracts/esc-1", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Fatalf("DELETE a contract: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	res, _ = app.Test(httptest.NewRequest("PUT", "/contracts/esc-1/resolve", nil), -1)
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD, OPTIONS, POST" {
		// the usage note is a GET anyone may read; the POST is the operator's
		t.Fatalf("PUT resolve: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}
