package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nodePackages installs dir's node packages from its lock file when they are
// absent (probe, a package, is not in its node_modules), or skips when node
// or npm is not installed. Tests that share dir install it one at a time.
func nodePackages(tb testing.TB, dir, probe string) {
	tb.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("%s is not installed: %s is not run", tool, dir)
		}
	}
	mu, _ := installing.LoadOrStore(dir, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", probe)); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ci := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	ci.Dir = dir
	if out, err := ci.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// installing holds, by directory, the lock nodePackages installs under.
var installing sync.Map

// agentsServer starts assay serve with two registered principals of one
// tenant, a requester and a solver, and answers them.
func agentsServer(t *testing.T) (*server, agentKey, agentKey) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	requester, solver := newPrincipalKey(t, "mcp-requester"), newPrincipalKey(t, "mcp-solver")
	for _, k := range []agentKey{requester, solver} {
		registerPrincipal(t, data, k, "economic:read,economic:private,economic:write")
	}
	return startServe(t, data, nil, nil, 30*time.Second), requester, solver
}

// TestMCP_agentsTypeScript runs testdata/mcp/agents.mjs with the official
// TypeScript SDK against one server, once per revision: the v2 client
// (@modelcontextprotocol/client) pinned to the stateless 2026-07-28
// revision, and the v1 client (@modelcontextprotocol/sdk) on 2025-11-25.
// Each runs a whole court case, a signed Matter to a judged verdict and
// a replay batch through tools only, every structuredContent validated
// against its outputSchema.
func TestMCP_agentsTypeScript(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "mcp")
	nodePackages(t, dir, "@modelcontextprotocol/client")
	s, requester, solver := agentsServer(t)
	wasm, err := filepath.Abs("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		cfg, _ := json.Marshal(map[string]any{"wasm": wasm, "tag": strings.ReplaceAll(rev, "-", ""),
			"requester": map[string]string{"id": requester.id(), "seed": base64.StdEncoding.EncodeToString(requester.priv.Seed())},
			"solver":    map[string]string{"id": solver.id(), "seed": base64.StdEncoding.EncodeToString(solver.priv.Seed())}})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		node := exec.CommandContext(ctx, "node", "agents.mjs", s.base, rev, string(cfg))
		node.Dir = dir
		out, err := node.CombinedOutput()
		cancel()
		if err != nil || !strings.HasPrefix(string(out), "ok: "+rev) {
			t.Fatalf("%s: the official SDK's client: %v\n%s\nserver:\n%s", rev, err, out, s.out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
		t.Fatalf("ledger %s", r.body)
	}
}

// toolsClient calls tools through a Go SDK session and validates every
// structured answer against the tool's outputSchema (jsonschema-go, a
// validator the server does not use to answer).
type toolsClient struct {
	tb      testing.TB
	cs      *mcp.ClientSession
	outputs map[string]*jsonschema.Resolved
}

func newToolsClient(tb testing.TB, cs *mcp.ClientSession) *toolsClient {
	tb.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	c := &toolsClient{tb: tb, cs: cs, outputs: map[string]*jsonschema.Resolved{}}
	for _, tl := range res.Tools {
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			tb.Fatalf("%s: outputSchema %s: %v", tl.Name, b, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			tb.Fatalf("%s: outputSchema does not resolve: %v", tl.Name, err)
		}
		c.outputs[tl.Name] = r
	}
	return c
}

// call answers a tool's structured content, or the code of its refusal.
func (c *toolsClient) call(name string, args map[string]any) (map[string]any, string) {
	c.tb.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.tb.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if json.Unmarshal([]byte(text), &body) != nil || body.Error.Code == "" {
			c.tb.Fatalf("%s: tool error is not a coded body: %s", name, text)
		}
		return nil, body.Error.Code
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		c.tb.Fatal(err)
	}
	if err := c.outputs[name].Validate(v); err != nil {
		c.tb.Fatalf("%s: structuredContent does not fit its outputSchema: %v\n%.400s", name, err, b)
	}
	m, _ := v.(map[string]any)
	return m, ""
}

func (c *toolsClient) ok(name string, args map[string]any) map[string]any {
	c.tb.Helper()
	m, code := c.call(name, args)
	if code != "" {
		c.tb.Fatalf("%s %v: refused %s", name, args, code)
	}
	return m
}

// TestMCP_agentsGo runs the same three flows with the official Go SDK as
// the client, on the stateless 2026-07-28 revision: its default, which
// it reaches with server/discover and no initialize, and which this test
// checks it negotiated.
func TestMCP_agentsGo(t *testing.T) {
	t.Parallel()
	s, requester, solver := agentsServer(t)
	connect := func(rt http.RoundTripper) *mcp.ClientSession {
		t.Helper()
		tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1}
		if rt != nil {
			tr.HTTPClient = &http.Client{Transport: rt}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "assay-e2e-agents", Version: "test"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, s.out)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
			t.Fatalf("negotiated %s, session %q: want the stateless 2026-07-28", v, cs.ID())
		}
		return cs
	}
	anonSession := connect(nil)
	anon := newToolsClient(t, anonSession)
	asRequester := newToolsClient(t, connect(signingTransport{t, requester}))
	asSolver := newToolsClient(t, connect(signingTransport{t, solver}))

	// A court case to a refund.
	created := anon.ok("create_contract", map[string]any{"buyer": "did:nanda:go-buyer", "seller": "did:nanda:go-seller", "price": 50,
		"acceptance": map[string]any{"assertions": []any{map[string]any{"path": "rows", "op": "gte", "value": 100}}}})
	id := created["contract_id"].(string)
	anon.ok("fund_contract", map[string]any{"contract_id": id})
	anon.ok("deliver_work", map[string]any{"contract_id": id, "deliverable": map[string]any{"rows": 5}})
	verdict := anon.ok("dispute_delivery", map[string]any{"contract_id": id, "reason": "five rows", "idempotency_key": "go-dispute"})
	if subj := verdict["credentialSubject"].(map[string]any); subj["verdict"] != "refund" {
		t.Fatalf("verdict %v", subj)
	}
	if v := anon.ok("verify_receipt", map[string]any{"receipt": verdict}); v["valid"] != true {
		t.Fatalf("verify %v", v)
	}
	if c := anon.ok("get_contract", map[string]any{"contract_id": id}); c["status"] != "resolved" {
		t.Fatalf("contract %v", c)
	}

	// A signed Matter to a judged verdict.
	deadline := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	open := map[string]any{"action_digest": mattersDigest, "question": "publish?", "stakes_usdc": "1", "deadline": deadline, "risk_class": "publish",
		"verdict_schema":  map[string]any{"type": "object", "required": []any{"ok"}, "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		"idempotency_key": "go-open"}
	if _, code := anon.call("open_matter", open); code != "signature_missing" {
		t.Fatalf("an unsigned open_matter: %q", code)
	}
	mid := asRequester.ok("open_matter", open)["matter"].(map[string]any)["matter_id"].(string)
	asRequester.ok("assign_solver", map[string]any{"matter_id": mid, "solver_id": solver.id(), "solver_kind": "model", "conflict_free": true, "idempotency_key": "go-assign"})
	asSolver.ok("accept_assignment", map[string]any{"matter_id": mid, "idempotency_key": "go-accept"})
	judged := asSolver.ok("submit_verdict", map[string]any{"matter_id": mid, "solver_kind": "model", "action_digest": mattersDigest,
		"verdict": map[string]any{"ok": true}, "idempotency_key": "go-verdict"})
	if judged["matter"].(map[string]any)["status"] != "judged" {
		t.Fatalf("judged %v", judged["matter"])
	}
	if chain := asRequester.ok("matter_receipts", map[string]any{"matter_id": mid}); chain["count"] != 4.0 {
		t.Fatalf("chain %v", chain["count"])
	}

	// A replay batch, the checker uploaded through the tool.
	wasm, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := anon.ok("upload_checker", map[string]any{"wasm_base64": base64.StdEncoding.EncodeToString(wasm)})
	batch := anon.ok("replay_checker", map[string]any{"checker": map[string]any{"sha256": up["sha256"]}, "artifacts": []any{"1 1\n2 4\n3 9\n", "4"}})
	outs := batch["outcomes"].([]any)
	if len(outs) != 2 || outs[0].(map[string]any)["kind"] != "pass" || outs[1].(map[string]any)["kind"] == "pass" {
		t.Fatalf("replays %v", fmt.Sprint(outs)[:min(400, len(fmt.Sprint(outs)))])
	}
	if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
		t.Fatalf("ledger %s", r.body)
	}
}
