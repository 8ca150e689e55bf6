package api_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServer_Console: the console's files with their types and policy; GET /
// gives the page to a browser asking for text/html and markdown to
// everyone else.
func TestServer_Console(t *testing.T) {
	app := mustApp(t)
	for _, tc := range []struct {
		name, path, accept string
		status             int
		typ, body          string
	}{
		{"Page", "/console", "", 200, "text/html", "<title>Assay console</title>"},
		{"PageSlashIsNoRoute", "/console/", "", 404, "application/json", "route_not_found"},
		{"Script", "/console/console.js", "", 200, "text/javascript", "crypto.subtle.verify('Ed25519'"},
		{"Style", "/console/console.css", "", 200, "text/css", ".verify-result"},
		{"ErrUnknownFile", "/console/nope.js", "", 404, "application/json", "route_not_found"},
		{"ErrGoSource", "/console/web.go", "", 404, "application/json", "route_not_found"},
		{"ErrEscape", "/console/..%2fweb.go", "", 404, "application/json", "route_not_found"},
		{"RootBrowser", "/", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", 200, "text/html", "<title>Assay console</title>"},
		{"RootAgent", "/", "*/*", 200, "text/markdown", "name: assay-court"},
		{"RootNoAccept", "/", "", 200, "text/markdown", "name: assay-court"},
		{"RootMarkdown", "/", "text/markdown, text/html;q=0", 200, "text/markdown", "name: assay-court"},
		{"RootHTMLQuality", "/", "text/markdown, text/html; q=0.5", 200, "text/html", "<title>Assay console</title>"},
		{"SkillBrowser", "/skill.md", "text/html", 200, "text/markdown", "name: assay-court"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			res, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.typ) || !strings.Contains(string(b), tc.body) {
				t.Fatalf("GET %s (Accept %q): %d %s %.200q; want %d %s …%s…", tc.path, tc.accept, res.StatusCode, res.Header.Get("Content-Type"), b, tc.status, tc.typ, tc.body)
			}
			if tc.status == 200 && tc.typ != "text/markdown" && !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("no content security policy: %v", res.Header)
			}
			if tc.path == "/" && res.Header.Get("Vary") != "Accept" {
				t.Errorf("GET / varies by Accept and must say so: Vary %q", res.Header.Get("Vary"))
			}
		})
	}
}
