package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Go client generator the test runs, pinned, and the runtime module its
// clients import. Neither is a dependency of assay: the client is built in
// a module of its own.
const (
	oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime = "github.com/oapi-codegen/runtime v1.9.0"
)

// TestOpenAPI_GoClient generates a Go client from the served /openapi.json
// with oapi-codegen, the most used Go generator, compiles it in a module
// of its own, and runs two whole court cases through it (through the
// validating proxy, which checks every exchange against the same
// document): a contract created with an Idempotency-Key and replayed,
// funded, funded again (409), delivered short and disputed (refund),
// read, its receipt verified and its key found among the court's; a
// second delivered in full and accepted (release); the activity feed,
// the ledger and an unknown contract (404), each decoded into the
// generated types.
func TestOpenAPI_GoClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: the generated client cannot be built")
	}
	if out, err := exec.Command("go", "env", "GOPROXY").Output(); err == nil && strings.TrimSpace(string(out)) == "off" {
		t.Skip("GOPROXY=off: oapi-codegen and its runtime cannot be fetched")
	}
	s := start(t, t.TempDir())
	driver, err := os.ReadFile("testdata/codegen/main.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"openapi.json": s.get(t, "/openapi.json").body,
		"main.go":      driver,
		"go.mod":       fmt.Appendf(nil, "module assaycodegen\n\ngo 1.26\n\nrequire %s\n", oapiRuntime),
		"codegen.yaml": []byte("package: assay\ngenerate:\n  client: true\n  models: true\noutput: assay/client.gen.go\n"),
	}
	dir := codegenDir(t, files)
	bin := filepath.Join(t.TempDir(), "codegen")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := func(what string, name string, args ...string) string {
		t.Helper()
		began := time.Now()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		t.Logf("%s: %s", what, time.Since(began).Round(time.Millisecond))
		return string(out)
	}
	run("oapi-codegen loads the document and generates a client", "go", "run", oapiCodegen, "-config", "codegen.yaml", "openapi.json")
	run("go mod tidy", "go", "mod", "tidy")
	run("the client compiles", "go", "build", "-o", bin, ".")
	got := run("two court cases through the client", bin, s.base, fmt.Sprint(time.Now().UnixNano()))
	want := `health ok AssayEd25519JcsSubject2026
create created
create again: the same contract true replayed true
fund funded
fund again 409 invalid_state
deliver delivered
dispute refund tier0
contract resolved refund 1 receipts
verify true
keys: the receipt's key is published true
accept release buyer-accept
activity [accept deliver fund]
ledger balanced true
unknown contract 404 contract_not_found
`
	if got != want {
		t.Errorf("the generated client's court cases printed\n%s\nwant\n%s", got, want)
	}
}

// codegenDir returns the directory, locked until tb ends, that the client
// is generated and built in, holding files. Go's build cache keys a
// package by its directory, so that a client generated in a new directory
// each run would be compiled afresh each run (four megabytes of Go, some
// ten seconds): the directory is named by the hash of its files instead,
// in the user's cache, so that a document already built once is found in
// the build cache. Directories not used for a week are removed.
func codegenDir(tb testing.TB, files map[string][]byte) string {
	tb.Helper()
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "assay-e2e")
	if err := os.MkdirAll(root, 0o700); err != nil {
		tb.Fatal(err)
	}
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s %d\n", name, len(files[name]))
		h.Write(files[name])
	}
	dir := filepath.Join(root, fmt.Sprintf("codegen-%x", h.Sum(nil)[:8]))
	// Another run's test may use the same directory at once.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { lock.Close() }) // and the lock with it
	if err := os.MkdirAll(filepath.Join(dir, "assay"), 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	old, _ := filepath.Glob(filepath.Join(root, "codegen-*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && now.Sub(fi.ModTime()) > 7*24*time.Hour {
			_ = os.RemoveAll(d)
			_ = os.Remove(d + ".lock")
		}
	}
	return dir
}
