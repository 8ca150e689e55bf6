package e2e

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/receipt"
)

// assay runs the binary with args and env added and wants exit status 0.
func assay(tb testing.TB, env []string, args ...string) (stdout []byte) {
	tb.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("assay %v: %v\n%s%s", args, err, out, errOut.Bytes())
	}
	return out
}

// TestConfig_principalsPostgres: on a PostgreSQL deployment, a principal
// that `assay principals add --store postgres:URL` adds is one that a
// server on that store accepts signatures of, without a restart, and one
// that `assay principals revoke` revokes is refused.
func TestConfig_principalsPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	s := startNode(t, dbURL, t.TempDir(), nil)
	const open = "/api/v1/economic/matters/open"
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	wantResp(t, s.signed(t, priv, "alice", "POST", open, matterOpen(time.Now().Add(time.Hour), "o1")), 401, "unknown_key")

	// The command's own data directory is empty: nothing of the
	// principal may land there, where no server reads it.
	data := t.TempDir()
	store := "postgres:" + dbURL
	pub := base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	assay(t, nil, "principals", "add", "--data", data, "--store", store, "--key-id", "alice", "--public-key", pub,
		"--tenant", "acme", "--roles", "requester", "--scopes", "economic:read,economic:write")
	r := s.signed(t, priv, "alice", "POST", open, matterOpen(time.Now().Add(time.Hour), "o2"))
	wantResp(t, r, 201, "")
	if m, ok := r.obj(t)["matter"].(map[string]any); !ok || m["matter_id"] == nil {
		t.Fatalf("open: %s", r.body)
	}

	// $ASSAY_STORE names the store as --store does.
	var listed struct {
		Principals []struct {
			KeyID  string `json:"key_id"`
			Tenant string `json:"tenant_id"`
		}
	}
	if err := json.Unmarshal(assay(t, []string{"ASSAY_STORE=" + store, "ASSAY_DATA=" + data}, "principals", "list"), &listed); err != nil ||
		len(listed.Principals) != 1 || listed.Principals[0].KeyID != "alice" || listed.Principals[0].Tenant != "acme" {
		t.Fatalf("principals list: %+v %v", listed, err)
	}
	assay(t, nil, "principals", "revoke", "--data", data, "--store", store, "--key-id", "alice")
	if r := s.signed(t, priv, "alice", "POST", open, matterOpen(time.Now().Add(time.Hour), "o3")); r.status != 401 {
		t.Fatalf("a revoked principal's request: %d %s", r.status, r.body)
	}
	if ents, _ := os.ReadDir(data); len(ents) != 0 {
		t.Errorf("assay principals wrote in its data directory: %v", ents)
	}
}

// TestConfig_keysDir: `assay keys rotate --keys DIR` writes the keys in
// DIR, and a server started with --keys DIR publishes them and signs with
// the newest.
func TestConfig_keysDir(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	keys := t.TempDir()
	assay(t, nil, "keys", "rotate", "--keys", keys)
	var rotated receipt.KeySet
	if err := json.Unmarshal(assay(t, nil, "keys", "rotate", "--keys", keys), &rotated); err != nil || len(rotated.Keys) != 2 {
		t.Fatalf("keys rotate: %+v %v", rotated, err)
	}
	if _, err := os.Stat(filepath.Join(keys, receipt.KeysDir, receipt.KeysFile)); err != nil {
		t.Fatalf("keys rotate --keys did not write there: %v", err)
	}

	data := t.TempDir()
	s := startServe(t, data, []string{"--keys", keys}, nil, 30*time.Second)
	var published receipt.KeySet
	if err := json.Unmarshal(s.get(t, "/.well-known/assay-keys").body, &published); err != nil || len(published.Keys) != 2 {
		t.Fatalf("published: %+v %v", published, err)
	}
	for i, k := range published.Keys {
		if k.PublicKey != rotated.Keys[i].PublicKey {
			t.Errorf("key %d: the server publishes %s, keys rotate made %s", i, k.PublicKey, rotated.Keys[i].PublicKey)
		}
	}
	facts := s.get(t, "/.well-known/agent-facts").obj(t)
	if cur := facts["certification"].(map[string]any)["court_public_key"]; cur != rotated.Keys[1].PublicKey {
		t.Errorf("the server signs with %v, want the rotated key %s", cur, rotated.Keys[1].PublicKey)
	}
	if _, err := os.Stat(filepath.Join(data, receipt.KeysDir)); err == nil {
		t.Errorf("the server made keys in its data directory, not in --keys")
	}
	// $ASSAY_KEYS names the directory as --keys does.
	var listed receipt.KeySet
	if err := json.Unmarshal(assay(t, []string{"ASSAY_KEYS=" + keys}, "keys", "list", "--data", data), &listed); err != nil ||
		len(listed.Keys) != 2 || listed.Keys[1].PublicKey != rotated.Keys[1].PublicKey {
		t.Errorf("keys list with $ASSAY_KEYS: %+v %v", listed, err)
	}
}
