package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCP_officialSDK drives /mcp of a real server with the official
// TypeScript MCP SDK (testdata/mcp/flow.mjs, @modelcontextprotocol/sdk
// pinned by its package-lock.json): listTools with the SDK's own schema
// checks, every input and output schema compiled by the SDK's validator,
// then publish -> search -> purchase -> challenge -> resolve through
// callTool with the SDK's output-schema validation on, and the protocol's
// errors (coded tool errors, -32601, -32602). The market is signed, as
// assay serve starts it: each agent calls through a client of its own
// with a bearer API key that assay principals issue-key issued, and a
// client without one, or with another agent's, is refused. It runs `npm
// ci` when node_modules is absent, and skips when node or npm is not
// installed.
func TestMCP_officialSDK(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "mcp")
	nodePackages(t, dir, "@modelcontextprotocol/sdk")

	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	data := t.TempDir()
	keys := map[string]string{}
	for _, agent := range []string{"sdk-seller", "sdk-seller-b", "sdk-buyer"} {
		_, keys[agent] = issueKey(t, data, agent)
	}
	keysJSON, err := json.Marshal(keys)
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, data, nil, []string{"ASSAY_OPERATOR_TOKEN=op"}, 30*time.Second)
	wasmBytes, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasmBytes, "Content-Type", "application/wasm")
	if up.status != http.StatusCreated {
		t.Fatalf("upload %d %s", up.status, up.body)
	}
	sum := up.obj(t)["sha256"].(string)
	for agent, amount := range map[string]string{"sdk-buyer": "20", "sdk-seller-b": "1"} {
		if r := s.bearer(t, "op", "POST", "/market/wallets/"+agent+"/deposit", fmt.Sprintf(`{"amount_usd":%q}`, amount)); r.status != http.StatusCreated {
			t.Fatalf("deposit %d %s", r.status, r.body)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "flow.mjs", s.base, "op", sum, string(keysJSON))
	node.Dir = dir
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("the official SDK's client: %v\n%s\nserver:\n%s", err, out, s.log())
	}
	if !strings.HasPrefix(string(out), "ok: ") || !strings.Contains(string(out), "bearer API key") {
		t.Fatalf("the official SDK's client did not finish: %s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
		t.Fatalf("ledger %s", r.body)
	}
}
