package guest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/wasm"
)

// The sandbox the tests share, so that each module is metered and compiled
// once per test binary (once per run, with the run's cache: wasmtest);
// TestMain closes it.
var (
	sandboxOnce sync.Once
	sandbox     *wasm.Sandbox
	sandboxErr  error
)

func sharedSandbox(tb testing.TB) *wasm.Sandbox {
	tb.Helper()
	sandboxOnce.Do(func() {
		sandbox, sandboxErr = wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	})
	if sandboxErr != nil {
		tb.Fatal(sandboxErr)
	}
	return sandbox
}

func closeSandbox() {
	if sandbox != nil {
		sandbox.Close(context.Background())
	}
}

// limits are the limits the tests run under: the default fuel, and none.
// The backstop is long, as the machine running the tests may be busy; the
// outcomes never depend on it.
var limits = []struct {
	name string
	lim  wasm.Limits
}{
	{"metered", wasm.Limits{Fuel: wasm.DefaultFuel, Timeout: 5 * time.Minute}},
	{"unmetered", wasm.Limits{Timeout: 5 * time.Minute}},
}

// outcomeBytes is an outcome's JSON without its wall time: what a replay
// from a snapshot and one from a cold start must share.
func outcomeBytes(tb testing.TB, out wasm.Outcome) string {
	tb.Helper()
	out.WallNS = 0
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// runBoth runs module on in cold, then twice from the snapshot, and fails
// the test unless all three give the same outcome bytes. It returns the cold
// outcome.
func runBoth(t *testing.T, module []byte, in wasm.Input, lim wasm.Limits) wasm.Outcome {
	t.Helper()
	sb := sharedSandbox(t)
	ctx := context.Background()
	cold := sb.RunCold(ctx, module, in, lim)
	for i := range 2 {
		if snap := sb.Run(ctx, module, in, lim); outcomeBytes(t, snap) != outcomeBytes(t, cold) {
			t.Errorf("replay %d from the snapshot differs from the cold run:\nsnapshot %s\ncold     %s", i, outcomeBytes(t, snap), outcomeBytes(t, cold))
		}
	}
	return cold
}

// wantKind is the kind a status of assay_check (or an exit status) gives.
func wantKind(status int) wasm.Kind {
	if status == 0 {
		return wasm.KindPass
	}
	return wasm.KindFail
}

// TestSandbox_Probe replays the probe through the sandbox, metered and
// not: pass, fail with its message, panic, evidence absent, present and
// empty. Every case gives the same outcome bytes from the snapshot as cold.
func TestSandbox_Probe(t *testing.T) {
	t.Parallel()
	module := buildGuest(t, "testdata/probe", true)
	for _, l := range limits {
		for _, tc := range probeCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				out := runBoth(t, module, wasm.Input{Artifact: []byte(tc.artifact), Evidence: tc.evidence}, l.lim)
				if out.Kind != wantKind(int(tc.status)) || out.ExitCode != int(tc.status) || out.Stderr != tc.stderr || out.Stdout != "" {
					t.Errorf("%s exit %d, stdout %q, stderr %q (%s); want exit %d, stderr %q", out.Kind, out.ExitCode, out.Stdout, out.Stderr, out.Detail, tc.status, tc.stderr)
				}
				if (l.lim.Fuel > 0) != (out.FuelUsed > 0) {
					t.Errorf("fuel used %d under a limit of %d", out.FuelUsed, l.lim.Fuel)
				}
			})
		}
	}
}

// TestSandbox_Isolated: state a check leaves in the Go heap (the probe counts
// its calls) is never seen by the next replay from the snapshot.
func TestSandbox_Isolated(t *testing.T) {
	t.Parallel()
	module := buildGuest(t, "testdata/probe", true)
	sb := sharedSandbox(t)
	for i := range 3 {
		out := sb.Run(context.Background(), module, wasm.Input{Artifact: []byte("count")}, limits[0].lim)
		if out.Stderr != "call 1\n" {
			t.Errorf("replay %d: stderr %q, want %q (%s: %s)", i, out.Stderr, "call 1\n", out.Kind, out.Detail)
		}
	}
}

// TestSandbox_Bounded: a long error message is cut to 4 KiB by the SDK, far
// under the sandbox's output cap.
func TestSandbox_Bounded(t *testing.T) {
	t.Parallel()
	out := runBoth(t, buildGuest(t, "testdata/probe", true), wasm.Input{Artifact: []byte("long 1000000")}, limits[0].lim)
	if out.Kind != wasm.KindFail || len(out.Stderr) > 4<<10+1 || !strings.HasSuffix(out.Stderr, " [cut]\n") {
		t.Errorf("%s: %d bytes of stderr: %s", out.Kind, len(out.Stderr), out.Detail)
	}
}

// TestSandbox_Exit: os.Exit in a check is a fail with that exit code.
func TestSandbox_Exit(t *testing.T) {
	t.Parallel()
	out := runBoth(t, buildGuest(t, "testdata/probe", true), wasm.Input{Artifact: []byte("exit 7")}, limits[0].lim)
	if out.Kind != wasm.KindFail || out.ExitCode != 7 {
		t.Errorf("%s exit %d: %s", out.Kind, out.ExitCode, out.Detail)
	}
}

// TestSandbox_ErrCommandBuild: the SDK's source built without
// -buildmode=c-shared exports _start and assay_check; the sandbox rejects
// it rather than run a main that passes everything.
func TestSandbox_ErrCommandBuild(t *testing.T) {
	t.Parallel()
	module := buildGuest(t, "testdata/probe", false)
	out := sharedSandbox(t).Run(context.Background(), module, wasm.Input{Artifact: []byte("fail no")}, limits[0].lim)
	if out.Kind != wasm.KindInvalidChecker || !strings.Contains(out.Detail, "_start and assay_check") {
		t.Errorf("%s: %s", out.Kind, out.Detail)
	}
}

// TestSandbox_Fixtures: goreactor (from its snapshot and cold) and gocommand
// give every case the same kind, exit code, stdout and stderr, metered and
// not.
func TestSandbox_Fixtures(t *testing.T) {
	t.Parallel()
	reactor, command := readFixture(t, reactorFixture), readFixture(t, commandFixture)
	sb := sharedSandbox(t)
	for _, l := range limits {
		for _, tc := range fixtureCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				in := wasm.Input{Artifact: []byte(tc.artifact), Evidence: tc.evidence}
				want := fmt.Sprintf("%s %d %q %q", wantKind(tc.status), tc.status, tc.stdout, tc.stderr)
				r := runBoth(t, reactor, in, l.lim)
				if got := fmt.Sprintf("%s %d %q %q", r.Kind, r.ExitCode, r.Stdout, r.Stderr); got != want {
					t.Errorf("reactor: %s (%s), want %s", got, r.Detail, want)
				}
				c := sb.Run(context.Background(), command, in, l.lim)
				if got := fmt.Sprintf("%s %d %q %q", c.Kind, c.ExitCode, c.Stdout, c.Stderr); got != want {
					t.Errorf("command: %s (%s), want %s", got, c.Detail, want)
				}
			})
		}
	}
}
