// Package wasmtest gives tests one compile cache for the sandbox
// (wasm.Config.CacheDir, assay's --cache) across the packages of a run,
// so that CPython and each Go guest are metered and compiled once per run
// rather than once per package or per test. The cache is the directory
// the environment variable ASSAY_TEST_CACHE names: `make test`, `make
// race` and .ci/run make a fresh one for each run and remove it after.
// Without it, tests fall back to a cache of their own.
//
// A cache shared this way changes how long a test takes, never what it
// sees: entries are keyed by the module's bytes and the compiler's
// version, written whole (a temporary file renamed into place) and checked
// when read, as assay's own cache is across the processes of a machine.
// A test of the cache itself uses a directory of its own.
//
// It is for tests only: production code never imports it.
package wasmtest

import (
	"os"
	"testing"
)

// Env names the environment variable holding the run's cache directory.
const Env = "ASSAY_TEST_CACHE"

// CacheDir returns the run's cache directory, or fallback when there is
// none ("" is no cache on disk).
func CacheDir(fallback string) string {
	if dir := os.Getenv(Env); dir != "" {
		return dir
	}
	return fallback
}

// TempCacheDir returns the run's cache directory, or a new one of tb's
// own, removed when tb ends.
func TempCacheDir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv(Env); dir != "" {
		return dir
	}
	return tb.TempDir()
}
