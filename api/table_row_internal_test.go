package api

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The body and answer of the row TestRouteTable_OneRow adds.
type (
	echoIn struct {
		Agent string `json:"agent"`
	}
	echoOut struct {
		Echoed string `json:"echoed"`
	}
)

// TestRouteTable_OneRow: a route is declared once, as a row of the route
// table, and everything else is derived from it: a row added here is
// served by the router, listed and called as an MCP tool, documented in
// /openapi.json and the manual, and has a usage note at a bare GET.
func TestRouteTable_OneRow(t *testing.T) {
	row := route{method: "POST", path: "/market/echo", service: svcMarket, auth: RouteOpen, summary: "echo an agent id (a test row)",
		req: schemaFn[echoIn], resp: schemaFn[echoOut],
		op:   viewBody(func(_ *server, _ *call, in echoIn) (echoOut, error) { return echoOut{Echoed: in.Agent}, nil }),
		tool: &toolSpec{name: "echo_agent", title: "Echo an agent", kind: read, desc: "Answers the agent id it is given."}}
	app, s := fullServerOf(t, append(slices.Clone(routeTable), row))
	send := func(method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	// the router
	if status, body := send("POST", "/market/echo", `{"agent":"g17-mathema"}`); status != 200 || body != `{"echoed":"g17-mathema"}` {
		t.Errorf("POST /market/echo: %d %s", status, body)
	}
	if status, _ := send("POST", "/market/Echo", `{"agent":"x"}`); status != 404 {
		t.Errorf("POST /market/Echo: %d, want 404", status)
	}
	// the MCP tools
	status, body := send("POST", MCPPath, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if status != 200 || !strings.Contains(body, `"name":"echo_agent"`) {
		t.Errorf("tools/list: %d %.300s", status, body)
	}
	status, body = send("POST", MCPPath, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_agent","arguments":{"agent":"g17-mathema"}}}`)
	if status != 200 || !strings.Contains(body, `"structuredContent":{"echoed":"g17-mathema"}`) {
		t.Errorf("tools/call echo_agent: %d %.500s", status, body)
	}
	// /openapi.json
	var doc struct {
		Paths map[string]map[string]struct {
			Summary string `json:"summary"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(s.openapi(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Paths["/market/echo"]["post"].Summary != row.summary {
		t.Errorf("/openapi.json has no POST /market/echo: %v", doc.Paths["/market/echo"])
	}
	// the manual and the usage note
	if !strings.Contains(s.manual, "`POST /market/echo`") {
		t.Error("the manual does not list POST /market/echo")
	}
	status, body = send("GET", "/market/echo", "")
	if status != 200 || !strings.Contains(body, `"how_to_echo"`) || !strings.Contains(body, `"path":"/market/echo"`) {
		t.Errorf("GET /market/echo: %d %s", status, body)
	}
}
