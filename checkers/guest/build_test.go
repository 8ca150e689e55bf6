package guest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// buildDir holds the guests the tests build, shared by the tests of one
// binary and removed by TestMain, which also closes the shared sandbox.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "guest-test-")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	code := m.Run()
	closeSandbox()
	os.RemoveAll(dir)
	os.Exit(code)
}

// builds caches one build per package and mode.
var builds sync.Map // "pkg mode" -> *build

type build struct {
	once sync.Once
	bin  []byte
	err  error
	out  []byte
}

// buildGuest builds the Go guest in pkg (a directory relative to this
// package) for wasip1 and returns the module: a reactor (-buildmode=c-shared)
// when reactor is set, else a command. The tests that need it skip when no go
// command is on PATH.
func buildGuest(tb testing.TB, pkg string, reactor bool) []byte {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go command to build the guest with")
	}
	mode := "command"
	if reactor {
		mode = "reactor"
	}
	v, _ := builds.LoadOrStore(pkg+" "+mode, &build{})
	b := v.(*build)
	b.once.Do(func() {
		out := filepath.Join(buildDir, filepath.Base(pkg)+"-"+mode+".wasm")
		args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}
		if reactor {
			args = append(args, "-buildmode=c-shared")
		}
		cmd := exec.Command(gobin, append(args, "./"+pkg)...)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b.out, b.err = cmd.CombinedOutput(); b.err == nil {
			b.bin, b.err = os.ReadFile(out)
		}
	})
	if b.err != nil {
		tb.Fatalf("go build %s (%s): %v\n%s", pkg, mode, b.err, b.out)
	}
	return b.bin
}
