package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestA2A_officialSDK runs testdata/a2a/card.mjs with the official
// @a2a-js/sdk (pinned by its package-lock.json) against a server whose
// court is signed: the SDK's resolver fetches the Agent Card, the SDK's
// verifier checks its signature with the key its kid names (from the
// JWKS its jku names, the same key as /.well-known/assay-keys), and the
// SDK's JSON-RPC client runs a dispute as a task: refused unsigned,
// completed when the buyer signs each request, the verdict receipt its
// artifact.
func TestA2A_officialSDK(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "a2a")
	nodePackages(t, dir, "@a2a-js/sdk")
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	s := startServe(t, t.TempDir(), []string{"--court-auth", "signed"}, nil, 30*time.Second)
	buyer, seller := newDIDKey(t), newDIDKey(t)
	r := s.post(t, "/contracts", fmt.Sprintf(`{"buyer":%q,"seller":%q,"price":50,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":100}]}}`,
		buyer.id(), seller.id()))
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		t.Fatalf("create %d %s", r.status, r.body)
	}
	id := r.obj(t)["contract_id"].(string)
	if r := s.signedAs(t, buyer, "POST", "/contracts/"+id+"/fund", `{}`); r.status != http.StatusOK {
		t.Fatalf("fund %d %s", r.status, r.body)
	}
	if r := s.signedAs(t, seller, "POST", "/contracts/"+id+"/deliver", `{"deliverable":{"rows":5}}`); r.status != http.StatusOK {
		t.Fatalf("deliver %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "card.mjs", s.base, id, buyer.id(), base64.StdEncoding.EncodeToString(buyer.priv.Seed()))
	node.Dir = dir
	out, err := node.CombinedOutput()
	// The SDK's verifier logs the forged card's failure before the end.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || !strings.HasPrefix(lines[len(lines)-1], "ok: ") {
		t.Fatalf("the official A2A SDK: %v\n%s\nserver:\n%s", err, out, s.out)
	}
	t.Logf("%s", lines[len(lines)-1])
	if c := s.get(t, "/contracts/"+id).obj(t); c["verdict"] != "refund" {
		t.Fatalf("contract %v", c)
	}
}
