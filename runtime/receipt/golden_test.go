package receipt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestKeyring_Golden pins the exact bytes of a receipt and of its Data
// Integrity form, signed by a seeded key at a fixed time. Run with -update
// after a deliberate format change.
func TestKeyring_Golden(t *testing.T) {
	c := newClock()
	k := mustKeyring(t, c)
	r, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	receipt, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := k.Credential(r)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, cred, "", "  "); err != nil {
		t.Fatal(err)
	}
	keys, err := json.MarshalIndent(KeySet{Keys: k.Keys()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{
		"receipt.golden.json":    append(receipt, '\n'),
		"credential.golden.json": append(pretty.Bytes(), '\n'),
		"keys.golden.json":       append(keys, '\n'),
	} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file\n got: %s\nwant: %s", name, got, want)
		}
		// The golden files themselves verify, pinned to the golden keys.
		if name != "keys.golden.json" {
			pinned, err := ParseKeys(readFile(t, filepath.Join("testdata", "keys.golden.json")))
			if err != nil {
				t.Fatal(err)
			}
			if res := NewVerifier(pinned).Verify(want); !res.Valid {
				t.Errorf("%s: %s", name, res.Reason)
			}
		}
	}
}
