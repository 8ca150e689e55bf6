// Package conformance finds the official test vectors in ../shared/conformance
// for tests. A clone without ../shared beside it skips those tests, naming
// what it skipped; CI always has the folder.
package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of ../shared/conformance/sub, seen from the
// module root. When the folder is absent it skips tb with a message naming
// the vectors it skipped.
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Skipf("conformance vectors %s skipped: %v", sub, err)
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "conformance", sub)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("conformance vectors %s skipped: %s is absent (it comes with ../shared)", sub, dir)
	}
	return dir
}

// moduleRoot walks up from the working directory to the folder with go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
