package api

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkServer_Chain is what every request pays before and after its
// handler (observe with metrics, edges, CORS, routing, the court's auth
// middleware where it applies), measured on routes whose handlers do
// little: GET /healthz, and a POST of {} to a contract that does not
// exist (the error path: 404 contract_not_found).
func BenchmarkServer_Chain(b *testing.B) {
	app, _ := fullServer(b)
	h := app.Handler()
	for _, tc := range []struct{ name, method, uri, body string }{
		{"healthz", "GET", "/healthz", ""},
		{"fund-missing", "POST", "/contracts/esc-missing/fund", "{}"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				var req fasthttp.Request
				req.Header.SetMethod(tc.method)
				req.SetRequestURI(tc.uri)
				if tc.body != "" {
					req.Header.SetContentType("application/json")
					req.SetBodyString(tc.body)
				}
				ctx.Init(&req, nil, nil)
				h(&ctx)
			}
		})
	}
}
