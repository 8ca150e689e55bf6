package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP_inspector lists the tools of `assay serve` with the MCP
// Inspector's CLI (@modelcontextprotocol/inspector, pinned by
// testdata/inspector/package-lock.json), in both of its protocol eras:
// legacy (initialize, 2025-11-25) and modern (pinned to the stateless
// 2026-07-28, through a config file, as the Inspector takes it). Each
// lists every tool the Go SDK's client lists, and the modern era
// negotiates 2026-07-28.
func TestMCP_inspector(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "inspector")
	nodePackages(t, dir, "@modelcontextprotocol/inspector")
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), nil, nil, 30*time.Second)
	cs := connectMCP(t, s, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range res.Tools {
		want = append(want, tl.Name)
	}
	slices.Sort(want)

	config := filepath.Join(t.TempDir(), "mcp.json")
	cfg := fmt.Sprintf(`{"mcpServers": {"assay": {"type": "http", "url": %q, "protocolEra": "modern"}}}`, s.direct+"/mcp")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	inspector, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli"}, append(args, "--format", "json")...)...)
		// No keychain on a test machine: keep the Inspector's secrets in
		// memory, as it would fall back to anyway.
		cmd.Env = append(os.Environ(), "MCP_INSPECTOR_SECRET_STORE=memory")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("mcp-inspector %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return out
	}
	for _, era := range []struct {
		name, version string
		target        []string
	}{
		{"legacy", "2025-11-25", []string{s.direct + "/mcp", "--transport", "http"}},
		{"modern", "2026-07-28", []string{"--config", config, "--server", "assay"}},
	} {
		var init struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct{ Name string }
			} `json:"result"`
		}
		out := run(append(era.target, "--method", "initialize")...)
		if err := json.Unmarshal(out, &init); err != nil || init.Result.ProtocolVersion != era.version || init.Result.ServerInfo.Name != "assay" {
			t.Errorf("%s: initialize %v %.300s, want %s", era.name, err, out, era.version)
		}
		var list struct {
			Result mcp.ListToolsResult `json:"result"`
		}
		out = run(append(era.target, "--method", "tools/list")...)
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatalf("%s: tools/list %v %.300s", era.name, err, out)
		}
		var got []string
		for _, tl := range list.Result.Tools {
			got = append(got, tl.Name)
			if tl.OutputSchema == nil || tl.Annotations == nil {
				t.Errorf("%s: %s has no outputSchema or annotations", era.name, tl.Name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the Inspector lists %d tools %v, the SDK %d", era.name, len(got), got, len(want))
		}
		t.Logf("%s era (%s): the Inspector lists %d tools: %s", era.name, era.version, len(got), strings.Join(got[:5], ", ")+", …")
	}
}
