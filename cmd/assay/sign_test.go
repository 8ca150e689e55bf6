package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/receipt"
)

// assay sign's headers verify as the server verifies them, for a key
// written by assay principals keygen, as a 64-byte key or as PKCS #8 PEM.
func TestSign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedFile := filepath.Join(dir, "agent.key")
	code, out, stderr := runWithStdin(t, "", "principals", "keygen", "--out", seedFile)
	if code != exitOK {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	var made struct {
		DID       string `json:"did"`
		PublicKey string `json:"public_key"`
	}
	if err := json.Unmarshal([]byte(out), &made); err != nil || !strings.HasPrefix(made.DID, "did:key:z6Mk") {
		t.Fatalf("keygen printed %s", out)
	}
	if info, err := os.Stat(seedFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", info, err)
	}
	if code, _, _ := runWithStdin(t, "", "principals", "keygen", "--out", seedFile); code != exitNo {
		t.Fatalf("keygen over an existing file: exit %d", code)
	}
	priv, err := readPrivateKey(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full.key")
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(dir, "key.pem")
	for f, b := range map[string][]byte{full: []byte(base64.StdEncoding.EncodeToString(priv)),
		pemFile: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for _, f := range []string{seedFile, full, pemFile} {
		body := `{"amount_usd":"5"}`
		code, out, stderr := runWithStdin(t, "", "sign", "--key", f, "-d", body, "http://127.0.0.1:8080/market/wallets/"+made.DID+"/deposit?x=1")
		if code != exitOK {
			t.Fatalf("%s: %d %s", f, code, stderr)
		}
		h := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			h[strings.ToLower(k)] = v
		}
		if httpsig.CheckContentDigest(h["content-digest"], []byte(body)) != nil || h["content-type"] != "application/json" {
			t.Fatalf("%s: headers %v", f, h)
		}
		p, sig, err := httpsig.Parse(h["signature-input"], h["signature"], "")
		if err != nil || p.KeyID != made.DID || p.Nonce == "" || p.Alg != "ed25519" || !p.Covers("@query") {
			t.Fatalf("%s: %+v %v", f, p, err)
		}
		pub, _ := receipt.ParsePublicKey(made.PublicKey)
		m := httpsig.Message{Method: "POST", Authority: "127.0.0.1:8080", Path: "/market/wallets/" + made.DID + "/deposit", Query: "x=1",
			Header: func(n string) []string { return []string{h[n]} }}
		if err := httpsig.Verify(ed25519.PublicKey(pub), m, p, sig); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if code, out, _ := runWithStdin(t, "", "sign", "--key", seedFile, "--keyid", "acme-seller", "--curl", "-d", "{}", "http://h/x"); code != exitOK ||
		!strings.HasPrefix(out, "curl -sS -X POST 'http://h/x' -H ") || !strings.Contains(out, `keyid="acme-seller"`) {
		t.Fatalf("--curl: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"sign", "http://h/x"},
		{"sign", "--key", seedFile},
		{"sign", "--key", seedFile, "ftp://h/x"},
		{"sign", "--key", seedFile, "--curl", "--run", "http://h/x"},
		{"sign", "--key", filepath.Join(dir, "none"), "http://h/x"},
	} {
		if code, _, _ := runWithStdin(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
