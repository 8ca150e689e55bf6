package python

import (
	"bytes"
	"testing"
)

// TestRuntimeSHA256_Harness: the memo's key covers harness.py, byte for
// byte, so that a new harness is never answered with an old one's outcomes.
func TestRuntimeSHA256_Harness(t *testing.T) {
	t.Parallel()
	if got := runtimeSum(harness); got != RuntimeSHA256() {
		t.Fatalf("runtimeSum(harness) %s, RuntimeSHA256 %s", got, RuntimeSHA256())
	}
	changed := bytes.Replace(harness, []byte("PASS = 0"), []byte("PASS = 1"), 1)
	if bytes.Equal(changed, harness) {
		t.Fatal("harness.py has no PASS = 0")
	}
	if runtimeSum(changed) == RuntimeSHA256() {
		t.Error("a changed harness keeps the runtime's SHA-256")
	}
}
