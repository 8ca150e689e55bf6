package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/runtime/receipt"
)

func TestKeys_listRotate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	t.Setenv("ASSAY_DATA", data)

	t.Run("ErrListEmpty", func(t *testing.T) {
		if code, _, stderr := runWithStdin(t, "", "keys", "list"); code != exitNo || !strings.Contains(stderr, "no keys") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	var first receipt.KeySet
	t.Run("OKRotateCreates", func(t *testing.T) {
		code, out, stderr := runWithStdin(t, "", "keys", "rotate")
		if code != exitOK || !strings.Contains(stderr, "first key") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &first); err != nil || len(first.Keys) != 1 {
			t.Fatalf("%s (%v)", out, err)
		}
		fi, err := os.Stat(filepath.Join(data, receipt.KeysDir, receipt.KeysFile))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("keys file: %v %v", fi, err)
		}
	})
	t.Run("OKRotate", func(t *testing.T) {
		code, out, stderr := runWithStdin(t, "", "keys", "rotate", "--data", data)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var set receipt.KeySet
		if err := json.Unmarshal([]byte(out), &set); err != nil || len(set.Keys) != 2 {
			t.Fatalf("%s (%v)", out, err)
		}
		if set.Keys[0].PublicKey != first.Keys[0].PublicKey || set.Keys[0].NotAfter == nil || set.Keys[1].NotAfter != nil {
			t.Errorf("after rotation: %s", out)
		}
		code, listed, _ := runWithStdin(t, "", "keys", "list")
		if code != exitOK || listed != out {
			t.Errorf("list after rotate:\n%s\nwant:\n%s", listed, out)
		}
	})
	for _, args := range [][]string{{"keys"}, {"keys", "burn"}, {"keys", "list", "extra"}, {"keys", "list", "--nope"}} {
		t.Run("ErrUsage", func(t *testing.T) {
			if code, _, _ := runWithStdin(t, "", args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
			}
		})
	}
}
