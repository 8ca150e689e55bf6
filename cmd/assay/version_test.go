package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion_commandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, stdout, stderr := runAssay(t, args...)
		if code != exitOK || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if lines[0] != "assay "+version || version == "" {
			t.Fatalf("%v: first line %q, want %q", args, lines[0], "assay "+version)
		}
		if want := "go " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; len(lines) < 2 || lines[1] != want {
			t.Fatalf("%v: printed %q, want a second line %q", args, stdout, want)
		}
	}
	if code, _, stderr := runAssay(t, "version", "extra"); code != exitUsage || !strings.Contains(stderr, "usage: assay version") {
		t.Fatalf("version extra: exit %d, %q", code, stderr)
	}
}

// TestVersion_json: assay version --json prints one object with the same
// facts as the text form.
func TestVersion_json(t *testing.T) {
	code, stdout, stderr := runAssay(t, "version", "--json")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var v versionInfo
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if v.Version != version || v.Go != runtime.Version() || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Fatalf("printed %+v", v)
	}
	if code, _, stderr := runAssay(t, "version", "--yaml"); code != exitUsage || !strings.Contains(stderr, "usage: assay version [--json]") {
		t.Fatalf("version --yaml: exit %d, %q", code, stderr)
	}
}

func TestVersion_fromBuild(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: v}}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		set  string
		read func() (*debug.BuildInfo, bool)
		want string
	}{
		{"v1.4.0-3-gabc", info("v1.2.0"), "v1.4.0-3-gabc"}, // -ldflags wins
		{"dev", info("v1.2.0"), "v1.2.0"},                  // go install …@v1.2.0
		{"dev", info("(devel)"), "dev"},                    // go run in a tree without VCS stamping
		{"dev", none, "dev"},
	} {
		if got := buildVersion(tc.set, tc.read); got != tc.want {
			t.Errorf("buildVersion(%q) = %q, want %q", tc.set, got, tc.want)
		}
	}
}

// TestVersion_ldflags builds the binary as make build does and finds the
// version it was given.
func TestVersion_ldflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds assay")
	}
	bin := filepath.Join(t.TempDir(), "assay")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || !strings.HasPrefix(string(out), "assay v9.8.7-test\ngo "+runtime.Version()) {
			t.Fatalf("assay %s: %v %q", arg, err, out)
		}
	}
}
