package guest_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// instance is one reactor instance on plain wazero, started the way the
// sandbox starts one for its snapshot: _initialize with an empty /in and an
// empty stdin. Its /in and stdin can then be filled before each call.
type instance struct {
	mod    api.Module
	in     fstest.MapFS
	stdin  *bytes.Reader
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func newRuntime(tb testing.TB) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	tb.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	return rt
}

// compile compiles bin on rt.
func compile(tb testing.TB, rt wazero.Runtime, bin []byte) wazero.CompiledModule {
	tb.Helper()
	cm, err := rt.CompileModule(context.Background(), bin)
	if err != nil {
		tb.Fatal(err)
	}
	return cm
}

// startReactor instantiates cm and runs its _initialize.
func startReactor(tb testing.TB, rt wazero.Runtime, cm wazero.CompiledModule) *instance {
	tb.Helper()
	ctx := context.Background()
	in := &instance{in: fstest.MapFS{}, stdin: bytes.NewReader(nil)}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("checker").
		WithStartFunctions().
		WithStdin(in.stdin).
		WithStdout(&in.stdout).
		WithStderr(&in.stderr).
		WithFSConfig(wazero.NewFSConfig().WithFSMount(in.in, "/in"))
	mod, err := rt.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mod.Close(ctx) })
	in.mod = mod
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		tb.Fatalf("_initialize: %v\n%s", err, in.stderr.String())
	}
	if in.stdout.Len()+in.stderr.Len() > 0 {
		tb.Fatalf("_initialize wrote %q and %q", in.stdout.String(), in.stderr.String())
	}
	return in
}

// check gives the instance this call's input (evidence nil: none), calls
// assay_check and returns its status and what it wrote to stderr.
func (in *instance) check(tb testing.TB, artifact string, evidence []byte, onStdin bool) (int32, string) {
	tb.Helper()
	status, _, stderr := in.call(tb, artifact, evidence, onStdin)
	return status, stderr
}

// call is check, returning stdout too.
func (in *instance) call(tb testing.TB, artifact string, evidence []byte, onStdin bool) (int32, string, string) {
	tb.Helper()
	clear(in.in)
	in.stdin.Reset(nil)
	if onStdin {
		in.stdin.Reset([]byte(artifact))
	} else {
		in.in["artifact"] = &fstest.MapFile{Data: []byte(artifact)}
	}
	if evidence != nil {
		in.in["evidence"] = &fstest.MapFile{Data: evidence}
	}
	in.stdout.Reset()
	in.stderr.Reset()
	res, err := in.mod.ExportedFunction("assay_check").Call(context.Background())
	if err != nil {
		tb.Fatalf("assay_check: %v\n%s", err, in.stderr.String())
	}
	return int32(res[0]), in.stdout.String(), in.stderr.String()
}

// runCommand runs cm as a command on artifact and returns its exit status,
// stdout and stderr.
func runCommand(tb testing.TB, rt wazero.Runtime, cm wazero.CompiledModule, artifact string, evidence []byte) (int, string, string) {
	tb.Helper()
	fsys := fstest.MapFS{"artifact": {Data: []byte(artifact)}}
	if evidence != nil {
		fsys["evidence"] = &fstest.MapFile{Data: evidence}
	}
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("checker").
		WithStdin(strings.NewReader(artifact)).
		WithStdout(&stdout).
		WithStderr(&stderr).
		WithFSConfig(wazero.NewFSConfig().WithFSMount(fsys, "/in"))
	mod, err := rt.InstantiateModule(context.Background(), cm, cfg)
	if mod != nil {
		mod.Close(context.Background())
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return int(exit.ExitCode()), stdout.String(), stderr.String()
	}
	tb.Fatalf("run: %v", err)
	return 0, "", ""
}

// probeCases are the probe guest's calls and what each must give. The
// statuses are the package's: 0 pass, 1 fail, 2 panic.
var probeCases = []struct {
	name     string
	artifact string
	evidence []byte
	status   int32
	stderr   string
}{
	{"OK", "pass", nil, 0, ""},
	{"ErrFail", "fail 2 rows, want 3", nil, 1, "2 rows, want 3\n"},
	{"ErrEmptyMessage", "empty", nil, 1, "the check failed with an empty error message\n"},
	{"ErrPanic", "panic bad row", nil, 2, "panic: bad row\n"},
	{"EvidenceAbsent", "evidence", nil, 1, "no evidence\n"},
	{"EvidencePresent", "evidence", []byte("a counterexample"), 1, "evidence \"a counterexample\"\n"},
	{"EvidenceEmpty", "evidence", []byte{}, 1, "evidence \"\"\n"},
	{"ErrUnknown", "", nil, 1, "unknown verb \"\"\n"},
}

// TestReactor runs the probe, built as a reactor, on plain wazero: each case
// in an instance of its own, initialised with no input as the sandbox's
// snapshot is, then all cases one after another in one instance, which must
// give the same answers.
func TestReactor(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	cm := compile(t, rt, buildGuest(t, "testdata/probe", true))
	shared := startReactor(t, rt, cm)
	for _, tc := range probeCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, onStdin := range []bool{false, true} {
				in := startReactor(t, rt, cm)
				if status, stderr := in.check(t, tc.artifact, tc.evidence, onStdin); status != tc.status || stderr != tc.stderr {
					t.Errorf("fresh instance (stdin %v): status %d, stderr %q; want %d, %q", onStdin, status, stderr, tc.status, tc.stderr)
				}
			}
			if status, stderr := shared.check(t, tc.artifact, tc.evidence, false); status != tc.status || stderr != tc.stderr {
				t.Errorf("shared instance: status %d, stderr %q; want %d, %q", status, stderr, tc.status, tc.stderr)
			}
		})
	}
}

// TestReactor_Bounded: a long error message reaches stderr cut to 4 KiB.
func TestReactor_Bounded(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	in := startReactor(t, rt, compile(t, rt, buildGuest(t, "testdata/probe", true)))
	status, stderr := in.check(t, "long 100000", nil, false)
	if status != 1 || len(stderr) > 4<<10+1 || !strings.HasSuffix(stderr, " [cut]\n") || !strings.HasPrefix(stderr, "éé") {
		t.Errorf("status %d, %d bytes of stderr ending %q", status, len(stderr), stderr[max(0, len(stderr)-12):])
	}
}

// TestReactor_CallsShareAnInstance: state the check keeps (the probe counts
// its calls) lives as long as the instance, which is why the sandbox gives
// each replay a fresh one; the SDK itself keeps no input across calls
// (TestReactor's shared instance).
func TestReactor_CallsShareAnInstance(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	in := startReactor(t, rt, compile(t, rt, buildGuest(t, "testdata/probe", true)))
	for _, want := range []string{"call 1\n", "call 2\n"} {
		if _, stderr := in.check(t, "count", nil, false); stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
	}
}

// TestReactor_Exit: os.Exit in a check ends the instance with that status,
// as it ends a command.
func TestReactor_Exit(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	in := startReactor(t, rt, compile(t, rt, buildGuest(t, "testdata/probe", true)))
	in.in["artifact"] = &fstest.MapFile{Data: []byte("exit 7")}
	_, err := in.mod.ExportedFunction("assay_check").Call(context.Background())
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("assay_check: %v, want exit 7", err)
	}
}
