package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/wasm"
)

func fixturePath(name string) string {
	return filepath.Join("..", "..", "fixtures", "checkers", name)
}

// writeFile writes content to a file in a test's temp dir.
func writeFile(tb testing.TB, name, content string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func runAssay(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errb bytes.Buffer
	code = doMain(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheck_exitCodes(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.json", `{"min_rows":1,"rows":[{"id":"a"}]}`)
	for _, tc := range []struct {
		name    string
		checker string
		extra   []string
		code    int
		kind    string
	}{
		{"OK", "pass.wasm", nil, exitOK, "pass"},
		{"fail", "fail.wasm", nil, exitNo, "fail"},
		{"trap", "divzero.wasm", nil, exitNo, "trap"},
		{"fuel", "loop.wasm", []string{"--fuel", "1000"}, exitNo, "fuel_exhausted"},
		{"memory", "grow.wasm", []string{"--memory-mib", "2"}, exitNo, "memory_exceeded"},
		{"output", "flood.wasm", nil, exitNo, "output_exceeded"},
		{"invalid", "badimport.wasm", nil, exitInvalidChecker, "invalid_checker"},
		{"timeout", "loop.wasm", []string{"--fuel", "0", "--timeout", "20ms"}, exitTimeout, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--cache", cache, "--json", "--checker", fixturePath(tc.checker), "--artifact", art}, tc.extra...)
			code, stdout, stderr := runAssay(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, stderr)
			}
			var out map[string]any
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if out["kind"] != tc.kind {
				t.Errorf("kind %v, want %s", out["kind"], tc.kind)
			}
			for _, field := range []string{"kind", "pass", "exit_code", "fuel_used", "fuel_limit", "memory_pages", "wall_ns",
				"stdout", "stderr", "stdout_sha256", "stderr_sha256", "checker_sha256", "input_sha256", "detail"} {
				if _, ok := out[field]; !ok {
					t.Errorf("field %s missing", field)
				}
			}
		})
	}
}

// TestCheck_deterministicJSON: the same checker and artifact print the same
// bytes on every run, apart from wall_ns.
func TestCheck_deterministicJSON(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.txt", "5000 669")
	wall := regexp.MustCompile(`"wall_ns":\d+`)
	var first string
	for i := range 3 {
		code, stdout, stderr := runAssay(t, "check", "--cache", cache, "--json", "--checker", fixturePath("primes.wasm"), "--artifact", art)
		if code != exitOK {
			t.Fatalf("exit %d: %s %s", code, stdout, stderr)
		}
		got := wall.ReplaceAllString(stdout, `"wall_ns":0`)
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, got)
		}
	}
}

func TestCheck_human(t *testing.T) {
	art := writeFile(t, "artifact.txt", "10 3")
	code, stdout, _ := runAssay(t, "check", "--cache", "", "--checker", fixturePath("primes.wasm"), "--artifact", art)
	if code != exitNo {
		t.Fatalf("exit %d, want 1 (there are 4 primes up to 10)", code)
	}
	for _, want := range []string{"fail: exited 1", "fuel:", "--- stdout", "primes up to 10: 4", "--- stderr", "want 3 primes, counted 4"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCheck_usage(t *testing.T) {
	art := writeFile(t, "artifact.txt", "x")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"ErrNoChecker", []string{"--artifact", art}, "--checker and --artifact are required"},
		{"ErrMissingChecker", []string{"--checker", "/no/such.wasm", "--artifact", art}, "cannot read checker /no/such.wasm"},
		{"ErrMissingArtifact", []string{"--checker", fixturePath("pass.wasm"), "--artifact", "/no/such.json"}, "cannot read artifact /no/such.json"},
		{"ErrMissingEvidence", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "--evidence", "/no/ev"}, "cannot read evidence /no/ev"},
		{"ErrMemory", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "--memory-mib", "0"}, "--memory-mib"},
		{"ErrMemoryOverMax", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "--memory-mib", fmt.Sprint(wasm.MaxMemoryMiB + 1)}, "--memory-mib"},
		{"ErrFuel", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "--fuel", fmt.Sprint(wasm.MaxFuel + 1)}, "--fuel must be at most"},
		{"ErrFlag", []string{"--bogus"}, "flag provided but not defined"},
		{"ErrArg", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runAssay(t, append([]string{"check", "--cache", ""}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d stderr %q, want 2 and %q", code, stderr, tc.msg)
			}
		})
	}
}

// TestCheck_python runs Python checkers: by extension or --kind, with the
// artifact type from --type.
func TestCheck_python(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.json", `{"rows": [1, 2, 3]}`)
	code := writeFile(t, "solution.py", "def total(xs):\n    return sum(xs)\n")
	passPy := writeFile(t, "check.py", "assert sum(data['rows']) == 6, f\"sum is {sum(data['rows'])}\"\n")
	failPy := writeFile(t, "fail.py", "assert len(data['rows']) == 4, f\"{len(data['rows'])} rows\"\n")
	noExt := writeFile(t, "checker", "assert data is not None\n")
	codePy := writeFile(t, "code_check.py", "assert total([1, 2, 3]) == 6\n")
	// POST /checkers refuses the same file as invalid_checker.
	broken := filepath.Join("..", "..", "examples", "checkers", "broken.py")
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		kind  string
		inOut string
	}{
		{"OK", []string{"--checker", passPy, "--artifact", art}, exitOK, "pass", ""},
		{"OKKind", []string{"--checker", noExt, "--kind", "python", "--artifact", art}, exitOK, "pass", ""},
		{"OKCode", []string{"--checker", codePy, "--type", "code", "--artifact", code}, exitOK, "pass", ""},
		{"Fail", []string{"--checker", failPy, "--artifact", art}, exitNo, "fail", "AssertionError: 3 rows"},
		{"Fuel", []string{"--checker", passPy, "--artifact", art, "--fuel", "100000"}, exitNo, "fuel_exhausted", ""},
		{"Invalid", []string{"--checker", broken, "--artifact", art}, exitInvalidChecker, "invalid_checker", "does not compile: SyntaxError at line 2"},
		{"ErrType", []string{"--checker", passPy, "--artifact", art, "--type", "blob"}, exitUsage, "", ""},
		{"ErrTypeWasm", []string{"--checker", fixturePath("pass.wasm"), "--artifact", art, "--type", "code"}, exitUsage, "", ""},
		{"ErrKind", []string{"--checker", passPy, "--artifact", art, "--kind", "lua"}, exitUsage, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runAssay(t, append([]string{"check", "--cache", cache, "--json"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tc.code, stdout, stderr)
			}
			if tc.kind == "" {
				return
			}
			var out map[string]any
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if out["kind"] != tc.kind {
				t.Errorf("kind %v, want %s: %v", out["kind"], tc.kind, out["detail"])
			}
			if d, _ := out["detail"].(string); !strings.Contains(d, tc.inOut) {
				t.Errorf("detail %q lacks %q", d, tc.inOut)
			}
		})
	}
}

// TestCheck_defaultFuelEndsLoop: the tightest endless loop, at the
// default limits, ends fuel_exhausted (never a timeout) with the same fuel
// used every run, well within the backstop.
func TestCheck_defaultFuelEndsLoop(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.txt", "x")
	spin := filepath.Join("..", "..", "wasm", "testdata", "spin.wasm")
	for range 2 {
		start := time.Now()
		code, stdout, stderr := runAssay(t, "check", "--cache", cache, "--json", "--checker", spin, "--artifact", art)
		took := time.Since(start)
		var out struct {
			Kind     string `json:"kind"`
			FuelUsed uint64 `json:"fuel_used"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%v: %s %s", err, stdout, stderr)
		}
		if code != exitNo || out.Kind != "fuel_exhausted" || out.FuelUsed != wasm.DefaultFuel {
			t.Fatalf("exit %d kind %s fuel %d, want 1, fuel_exhausted at %d", code, out.Kind, out.FuelUsed, wasm.DefaultFuel)
		}
		t.Logf("fuel_exhausted after %s (noisy: a shared machine)", took)
	}
}
