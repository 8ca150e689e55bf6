// Package conformance finds the official test vectors for tests: RFC 8785,
// W3C eddsa-jcs-2022, the JSON-Schema-Test-Suite's subset and RFC 9421,
// copied with their licences into this package's testdata, so that every
// clone runs them.
package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of the vectors in testdata/sub. It fails tb
// when they are missing: they are part of the repository.
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatalf("conformance vectors %s: the module's root: %v", sub, err)
	}
	dir := filepath.Join(root, "internal", "conformance", "testdata", sub)
	if _, err := os.Stat(dir); err != nil {
		tb.Fatalf("conformance vectors %s: %v", sub, err)
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
