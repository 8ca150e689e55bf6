package e2e

import (
	"bytes"
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMatters_nodeClient runs the few lines of Node.js that docs/matters.md
// shows against a real server in signed mode: a request they sign is
// accepted, and the same lines with another key are refused.
func TestMatters_nodeClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the Node.js client of docs/matters.md is not tested")
	}
	dir := t.TempDir()
	addPrincipal(t, dir, "carol", "acme", "requester", 9)
	s := start(t, dir)
	seed := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	run := func(seed string) string {
		out, err := exec.Command("node", "testdata/matters_client.mjs", s.base, "carol", seed,
			matterOpen(time.Now().Add(time.Hour), "node-"+seed[:4])).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(seed); !strings.HasPrefix(out, "201 ") || !strings.Contains(out, `"matter_id"`) {
		t.Fatalf("the signed open was not accepted: %s", out)
	}
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	if out := run(other); !strings.HasPrefix(out, "401 ") || !strings.Contains(out, "signature_invalid") {
		t.Fatalf("a request signed with another key: %s", out)
	}
}
