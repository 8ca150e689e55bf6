package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/receipt"
)

// signedReceipt makes a court in a fresh data directory, signs one verdict
// and returns the data directory and the receipt's path.
func signedReceipt(t *testing.T) (dataDir, path string) {
	t.Helper()
	dataDir = t.TempDir()
	court, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: dataDir, Now: time.Now, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	r, err := court.Sign(receipt.KindVerdict, "", map[string]any{"contract_id": "lex-1", "verdict": "refund"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "receipt.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dataDir, path
}

func runWithStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = doMain(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestVerify_exitCodes(t *testing.T) {
	t.Parallel()
	data, path := signedReceipt(t)
	keysPath := filepath.Join(t.TempDir(), "keys.json")
	code, keys, stderr := runWithStdin(t, "", "keys", "list", "--data", data)
	if code != exitOK {
		t.Fatalf("keys list: %d %s", code, stderr)
	}
	if err := os.WriteFile(keysPath, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	var set receipt.KeySet
	if err := json.Unmarshal([]byte(keys), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("keys list printed %s (%v)", keys, err)
	}
	courtKey := set.Keys[0].PublicKey
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(tampered, bytes.Replace(raw, []byte(`"refund"`), []byte(`"release"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, otherPath := signedReceipt(t)

	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		reason string
	}{
		{"OKKeys", "", []string{"--keys", keysPath, path}, exitOK, "pinned court key"},
		{"OKKey", "", []string{"--key", courtKey, path}, exitOK, "pinned key"},
		{"OKKeyDID", "", []string{"--key", set.Keys[0].DID, path}, exitOK, "pinned key"},
		{"OKIntegrityOnly", "", []string{path}, exitOK, "integrity only"},
		{"OKStdinWrapped", `{"receipt": ` + string(raw) + `}`, []string{"--keys", keysPath, "-"}, exitOK, "pinned court key"},
		{"ErrTampered", "", []string{"--keys", keysPath, tampered}, exitNo, "subjectHash"},
		{"ErrForeignKey", "", []string{"--keys", keysPath, otherPath}, exitNo, "not one of the pinned court keys"},
		{"ErrNotAReceipt", `{"hello": 1}`, []string{"-"}, exitNo, "not a receipt"},
		{"ErrUnreadable", "", []string{filepath.Join(t.TempDir(), "absent.json")}, exitUsage, ""},
		{"ErrBothPins", "", []string{"--key", courtKey, "--keys", keysPath, path}, exitUsage, ""},
		{"ErrBadKey", "", []string{"--key", "abc", path}, exitUsage, ""},
		{"ErrNoArg", "", nil, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runWithStdin(t, tt.stdin, append([]string{"verify"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.code == exitUsage {
				if errOut == "" {
					t.Error("no message on stderr")
				}
				return
			}
			var res receipt.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout %q: %v", out, err)
			}
			if res.Valid != (tt.code == exitOK) || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("%+v, want reason with %q", res, tt.reason)
			}
		})
	}
}
