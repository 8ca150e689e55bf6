package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/assayhq/assay/api"
)

// TestLocked: while assay serve has a data directory open, assay
// principals and a second assay serve on it say that another process
// holds the store, and what to do, rather than "internal error".
func TestLocked(t *testing.T) {
	data := t.TempDir()
	startServe(t, serveConfig{Addr: "127.0.0.1:0", Data: data, MattersAuth: api.MattersSigned})
	const want = "another process has this badger store open"
	for _, args := range [][]string{
		{"principals", "list", "--data", data},
		append([]string{"principals", "add", "--data", data}, principalArgs("p1")...),
	} {
		code, _, stderr := runWithStdin(t, "", args...)
		if code != exitNo || !strings.Contains(stderr, want) || !strings.Contains(stderr, "stop the process that holds it") ||
			strings.Contains(stderr, "internal error") {
			t.Errorf("%v: exit %d: %s", args[:2], code, stderr)
		}
	}
	var out, errOut bytes.Buffer
	if code := doMain([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, nil, &out, &errOut); code == exitOK ||
		!strings.Contains(errOut.String(), want) {
		t.Errorf("a second serve: exit %d: %s", code, errOut.String())
	}
}
