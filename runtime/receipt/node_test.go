package receipt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeVerify proves that the offline verification in another language
// that docs/receipts.md shows works on real receipts: testdata/verify.mjs,
// with nothing but Node's standard library, accepts a receipt and rejects
// tampered ones.
func TestNodeVerify(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the offline verification script testdata/verify.mjs is not exercised")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "verify.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	k := mustKeyring(t, c)
	subject := sampleVerdict()
	subject.Reason = "tab\t, quote \", emoji 😀, é, \u2028, \u0001, 1e-7 as text"
	r, err := k.Sign(KindVerdict, "", map[string]any{
		"verdict":    subject,
		"amounts":    []any{0, -1, 1e21, 1e-7, 0.1, 123456789012345, 3.5},
		"empty":      map[string]any{},
		"list":       []any{},
		"null":       nil,
		"\u00e9":     "key sorted by UTF-16 code units",
		"\U0001F600": "astral key",
		"\uff61":     "sorts after the surrogate pair of U+1F600",
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := mustMarshal(t, r)
	court := k.Current().PublicKey

	run := func(t *testing.T, data []byte, args ...string) (string, bool) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "receipt.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(node, append([]string{script, path}, args...)...).CombinedOutput()
		if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out)), err == nil
	}
	t.Run("OK", func(t *testing.T) {
		if out, ok := run(t, raw, court); !ok || out != `{"valid":true,"hashOK":true,"sigOK":true,"keyOK":true}` {
			t.Fatalf("node rejected a valid receipt: %s", out)
		}
	})
	t.Run("OKWrapped", func(t *testing.T) {
		if out, ok := run(t, []byte(`{"receipt":`+string(raw)+`}`)); !ok {
			t.Fatalf("node rejected a wrapped receipt: %s", out)
		}
	})
	t.Run("OKGolden", func(t *testing.T) {
		if out, ok := run(t, readFile(t, filepath.Join("testdata", "receipt.golden.json"))); !ok {
			t.Fatalf("node rejected the golden receipt: %s", out)
		}
	})
	t.Run("ErrTampered", func(t *testing.T) {
		bad := tamper(t, raw, func(m map[string]any) { obj(obj(m, "credentialSubject"), "verdict")["verdict"] = "release" })
		if out, ok := run(t, bad, court); ok || !strings.Contains(out, `"hashOK":false`) {
			t.Fatalf("node accepted a tampered receipt: %s", out)
		}
	})
	t.Run("ErrForeignKey", func(t *testing.T) {
		other := mustKeyringSeed(t, c, 5)
		if out, ok := run(t, raw, other.Current().PublicKey); ok || !strings.Contains(out, `"keyOK":false`) {
			t.Fatalf("node accepted a receipt with another pinned key: %s", out)
		}
	})
}
