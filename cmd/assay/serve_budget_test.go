package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestServe_memoryBudget(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for in, want := range map[string]int{"": 0, "512": 512, "65536": 65536} {
			if got, err := parseMemoryBudget(in); err != nil || got != want {
				t.Errorf("parseMemoryBudget(%q) = %d, %v; want %d", in, got, err, want)
			}
		}
	})
	for _, in := range []string{"0", "511", "-1", "1.5", "1G", "99999999999"} {
		t.Run("Err"+in, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := doMain([]string{"serve", "--memory-budget", in}, nil, &out, &errOut); got != exitUsage || !strings.Contains(errOut.String(), "--memory-budget") {
				t.Errorf("exit %d, want %d with a message naming the flag: %s", got, exitUsage, errOut.String())
			}
		})
	}
	t.Run("ErrEnv", func(t *testing.T) {
		t.Setenv("ASSAY_MEMORY_BUDGET", "lots")
		var out, errOut bytes.Buffer
		if got := doMain([]string{"serve"}, nil, &out, &errOut); got != exitUsage || !strings.Contains(errOut.String(), "--memory-budget") {
			t.Errorf("exit %d, want %d: %s", got, exitUsage, errOut.String())
		}
	})
}
