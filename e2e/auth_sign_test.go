package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuth_signDocs runs the signed request of docs/identity.md, as a user
// would paste it into a shell, against the default (signed) server: a
// did:key agent made by assay principals keygen deposits into its own
// wallet with curl and the headers assay sign printed, then withdraws with
// assay sign --run; the same headers sent again are refused.
func TestAuth_signDocs(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("e2e: %s not found", tool)
		}
	}
	doc, err := os.ReadFile("../docs/identity.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- run by e2e/auth_sign_test.go -->\n```sh\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/identity.md has no block to run")
	}
	s := start(t, t.TempDir())
	dir := t.TempDir()
	run := func(script string) []byte {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BASE="+s.base, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v\n%s\n%s\nserver:\n%s", err, out, stderr.Bytes(), s.out)
		}
		return out
	}
	out := run(script)
	dec := json.NewDecoder(bytes.NewReader(out))
	var deposit, withdrawal map[string]any
	if err := dec.Decode(&deposit); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := dec.Decode(&withdrawal); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	agent, _ := deposit["agent"].(string)
	if !strings.HasPrefix(agent, "did:key:z6Mk") || deposit["balance_usd"] != 5.0 || withdrawal["balance_usd"] != 3.0 || withdrawal["agent"] != agent {
		t.Fatalf("the doc's requests answered %s", out)
	}
	before := s.snapshot(t, "/market/wallets/"+agent)
	again := run(`curl -sS -w '\n%{http_code}' -X POST "$BASE/market/wallets/` + agent + `/deposit" -H @work/headers.txt --data-binary '{"amount_usd":"5"}'`)
	body, status, _ := strings.Cut(strings.TrimSpace(string(again)), "\n")
	r := response{status: map[string]int{"401": 401}[status], body: []byte(body)}
	if r.status != 401 || r.code(t) != "nonce_replayed" {
		t.Fatalf("the headers sent again: %s", again)
	}
	if after := s.snapshot(t, "/market/wallets/"+agent); after != before {
		t.Fatalf("a replay changed the wallet:\n%s\n%s", before, after)
	}
}
