package api

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
)

// TestServer_Operator: every operator route and tool goes through one
// check, which passes the configured bearer token only.
func TestServer_Operator(t *testing.T) {
	for _, tc := range []struct {
		name, configured, auth string
		status                 int
		code                   string
	}{
		{"OK", "s3cret", "Bearer s3cret", 200, ""},
		{"ErrNoHeader", "s3cret", "", 401, "unauthorized"},
		{"ErrOtherToken", "s3cret", "Bearer s3cre", 401, "unauthorized"},
		{"ErrLongerToken", "s3cret", "Bearer s3crett", 401, "unauthorized"},
		{"ErrNoScheme", "s3cret", "s3cret", 401, "unauthorized"},
		{"ErrOtherScheme", "s3cret", "Basic s3cret", 401, "unauthorized"},
		{"ErrLowercaseScheme", "s3cret", "bearer s3cret", 401, "unauthorized"},
		{"ErrDisabled", "", "Bearer ", 403, "operator_disabled"},
		{"ErrDisabledNoHeader", "", "", 403, "operator_disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := route{method: "POST", path: "/op", service: svcMeta, auth: RouteOperator,
				op: view(func(*server, *call) (string, error) { return "ran", nil })}
			app, s := newServer(Config{OperatorToken: tc.configured, Logger: slog.New(slog.DiscardHandler)}, []route{row})
			req := httptest.NewRequest("POST", "/op", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			res, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", res.StatusCode, b, tc.status)
			}
			challenge := res.Header.Get("WWW-Authenticate")
			if (tc.status == 401) != (challenge == `Bearer realm="assay-operator"`) {
				t.Errorf("WWW-Authenticate %q on %d", challenge, tc.status)
			}
			if tc.status == 200 && string(b) != `"ran"` {
				t.Errorf("the route did not run: %s", b)
			}
			// The MCP tools' check is the same one, on the Actor the
			// header makes.
			var a principal.Actor
			if s.isOperator(tc.auth) {
				a = principal.Operator()
			}
			err = s.allowedAs(svcMCP, a)
			if fault.CodeOf(err) != tc.code {
				t.Errorf("allowedAs: %v, want code %q", err, tc.code)
			}
		})
	}
}
