package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assayhq/assay/api"
)

// TestMCP_Schemas lists the tools of a server running every service and
// wants what stock clients need: a tool for each service's operations,
// every schema (input, output, and every schema inside them) an object
// schema with a type or a union of typed branches, every argument
// described, a title and the three hints on every tool, and tools the one
// capability advertised.
func TestMCP_Schemas(t *testing.T) {
	c := mustCorpus(t, api.MattersSigned)
	cl := mcp.NewClient(&mcp.Implementation{Name: "schemas", Version: "test"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: c.base + api.MCPPath, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var caps map[string]any
	if err := json.Unmarshal(mustJSON(cs.InitializeResult().Capabilities), &caps); err != nil || len(caps) != 1 || caps["tools"] == nil {
		t.Errorf("capabilities %v: want tools only", caps)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "dispute_delivery") || !strings.Contains(ins, "open_matter") {
		t.Errorf("the instructions do not name the tools: %s", ins)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{
		"create_contract", "fund_contract", "deliver_work", "accept_delivery", "dispute_delivery", "get_contract", "agent_reputation", "agent_receipts", "verify_receipt", "get_receipt",
		"open_matter", "assign_solver", "accept_assignment", "submit_verdict", "settle_matter", "get_matter", "matter_receipts", "register_solver", "commit_verdict", "reveal_verdict",
		"upload_checker", "replay_checker",
		"agent_profile", "challenge_listing", "deactivate_listing", "get_listing", "marketplace_stats", "publish_listing", "purchase", "resolve_challenge", "search_listings",
	} {
		if !names[want] {
			t.Errorf("no tool %s among %d", want, len(res.Tools))
		}
	}
	for _, tl := range res.Tools {
		if tl.Title == "" || tl.Description == "" || tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || tl.Annotations.Title == "" {
			t.Errorf("%s: title %q, annotations %+v", tl.Name, tl.Title, tl.Annotations)
		}
		if tl.Annotations != nil && tl.Annotations.ReadOnlyHint && *tl.Annotations.DestructiveHint {
			t.Errorf("%s is both read-only and destructive", tl.Name)
		}
		for what, s := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if o, ok := v.(map[string]any); !ok || o["type"] != "object" {
				t.Errorf("%s %s schema is not an object schema: %s", tl.Name, what, b)
				continue
			}
			for _, p := range badSchemas(v, what, what == "input") {
				t.Errorf("%s: %s", tl.Name, p)
			}
		}
	}
}

// badSchemas names the schemas under v that are not an object with a type
// (or anyOf, enum), and, when described is set, the properties without a
// description.
func badSchemas(v any, where string, described bool) []string {
	s, ok := v.(map[string]any)
	if !ok {
		return []string{where + " is " + strings.TrimSpace(string(mustJSON(v))) + ", not an object schema"}
	}
	var bad []string
	_, typed := s["type"]
	_, union := s["anyOf"]
	_, enum := s["enum"]
	if !typed && !union && !enum {
		bad = append(bad, where+" has no type")
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		po, _ := p.(map[string]any)
		if d, _ := po["description"].(string); described && d == "" {
			bad = append(bad, where+"."+name+" has no description")
		}
		bad = append(bad, badSchemas(p, where+"."+name, described)...)
	}
	if u, ok := s["anyOf"].([]any); ok {
		for _, b := range u {
			bad = append(bad, badSchemas(b, where+"|", false)...)
		}
	}
	if it, ok := s["items"]; ok {
		bad = append(bad, badSchemas(it, where+"[]", false)...)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		bad = append(bad, badSchemas(ap, where+"{}", false)...)
	}
	return bad
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// TestMCP_RPCErrors sends JSON-RPC calls that /mcp does not answer with a
// result: each is a JSON-RPC error with the protocol's code, never plain
// text, and nothing that is not advertised answers.
func TestMCP_RPCErrors(t *testing.T) {
	m := serveMarket(t)
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"UnknownMethod", `{"jsonrpc":"2.0","id":1,"method":"no/such_method"}`, -32601},
		{"ResourcesList", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, -32601},
		{"PromptsList", `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, -32601},
		{"ResourceTemplates", `{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`, -32601},
		{"SetLevel", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`, -32601},
		{"Complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`, -32601},
		{"ToolsCallNoParams", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, -32602},
		{"ToolsCallBadParams", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, -32602},
		{"UnknownTool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", m.base+api.MCPPath, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var rpc struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &rpc); err != nil || rpc.Error == nil {
				t.Fatalf("%d %s: not a JSON-RPC error", res.StatusCode, b)
			}
			if rpc.Error.Code != tc.code || rpc.ID != 1 || rpc.Result != nil {
				t.Fatalf("%d %s: want code %d", res.StatusCode, b, tc.code)
			}
		})
	}
}

// TestMCP_ArgumentErrors: an argument that does not fit a tool's input
// schema is a tool error with the coded JSON body that the service's own
// refusals have.
func TestMCP_ArgumentErrors(t *testing.T) {
	m := serveMarket(t)
	cl := mcp.NewClient(&mcp.Implementation{Name: "args", Version: "test"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: m.base + api.MCPPath, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		name string
		args map[string]any
		code string
	}{
		{"get_listing", map[string]any{"listing_id": 5}, "invalid_arguments"},
		{"get_listing", map[string]any{}, "invalid_arguments"},
		{"publish_listing", map[string]any{"agent": "s", "title": "t", "problem_statement": "squares table", "artifact": "x",
			"artifact_type": "dataset", "price_usd": "1.0000001"}, "invalid_arguments"},
		{"publish_listing", map[string]any{"agent": "s", "title": "t", "problem_statement": "squares table", "artifact": nil,
			"artifact_type": "dataset", "price_usd": "1"}, "invalid_arguments"},
		{"get_listing", map[string]any{"listing_id": "lst_000000000000"}, "listing_not_found"},
		{"resolve_challenge", map[string]any{"challenge_id": "chl_x", "verdict": "uphold"}, "unauthorized"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.name, tc.args, err)
		}
		var body struct {
			Detail string
			Error  struct{ Code, Message string }
		}
		text := ""
		if len(res.Content) == 1 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		if !res.IsError || json.Unmarshal([]byte(text), &body) != nil || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Errorf("%s %v: %s, want a coded %s", tc.name, tc.args, text, tc.code)
		}
	}
}
