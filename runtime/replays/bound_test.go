package replays_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/wasm"
)

// testdataRunner returns a Runner over this package's testdata checkers
// and the SHA-256 of the named one.
func testdataRunner(tb testing.TB, name string) (*checkers.Runner, string) {
	tb.Helper()
	src, err := checkers.OpenDir("testdata")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(context.Background()) })
	return checkers.NewRunner(sb, src), checkers.SHA256(b)
}

func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestService_Replay_bound: a batch of eight endless loops with the most
// fuel answers batch_timeout at its bound, and its guests are stopped:
// the process's CPU time stops growing. Before fuel slices the guests ran
// on to their fuel's end (minutes) and the answer came after them.
func TestService_Replay_bound(t *testing.T) {
	runner, sum := testdataRunner(t, "slowspin.wasm")
	svc := replays.NewService(runner)
	svc.Timeout = time.Second
	artifacts := make([]json.RawMessage, 8)
	for i := range artifacts {
		artifacts[i] = json.RawMessage(fmt.Sprintf("%d", i))
	}
	start := time.Now()
	_, err := svc.Replay(context.Background(), replays.Request{
		Checker:   checkers.Ref{SHA256: sum, Fuel: wasm.MaxFuel},
		Artifacts: artifacts,
		NoMemo:    true,
	})
	took := time.Since(start)
	if fault.CodeOf(err) != "batch_timeout" || fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("err %v (%s), want batch_timeout", err, fault.CodeOf(err))
	}
	// A few fuel slices past the bound, very generously: a guest that is
	// not stopped runs for MaxFuel, and the eight of them on two cores
	// for about ten seconds more on a quiet machine.
	if took > svc.Timeout+3*time.Second {
		t.Errorf("answered after %s, bound %s", took, svc.Timeout)
	}
	// It runs alone (not in parallel): what it measures next is the whole
	// process's CPU time.
	const window = 500 * time.Millisecond
	before := processCPU(t)
	time.Sleep(window) // the window the CPU is measured over, not a wait for something to happen
	if used := processCPU(t) - before; used > window/3 {
		t.Errorf("%s of CPU used in the %s after the answer: guests run on", used, window)
	}
}

// TestService_Replay_outputBudget: a batch of MaxBatch artifacts whose
// checker writes its full output caps answers within MaxOutputBytes of
// output: the first outcomes keep theirs, the rest keep their hashes and
// say they were trimmed.
func TestService_Replay_outputBudget(t *testing.T) {
	t.Parallel()
	runner, sum := testdataRunner(t, "fullcaps.wasm")
	svc := replays.NewService(runner)
	artifacts := make([]json.RawMessage, replays.MaxBatch)
	for i := range artifacts {
		artifacts[i] = json.RawMessage(fmt.Sprintf("%d", i))
	}
	res, err := svc.Replay(context.Background(), replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: artifacts})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	// Untrimmed, the answer would be 1,000 x 128 KiB of output: 128 MiB.
	if bound := replays.MaxOutputBytes + replays.MaxBatch*(2<<10); len(body) > bound {
		t.Errorf("answer of %d bytes, over %d", len(body), bound)
	}
	kept := res.Outcomes[0]
	if kept.Kind != wasm.KindPass || len(kept.Stdout) != wasm.DefaultOutputBytes || len(kept.Stderr) != wasm.DefaultOutputBytes {
		t.Fatalf("first outcome: %s, %d and %d bytes of output", kept.Kind, len(kept.Stdout), len(kept.Stderr))
	}
	if len(res.Trimmed) == 0 || res.Trimmed[len(res.Trimmed)-1] != replays.MaxBatch-1 {
		t.Fatalf("trimmed %v", res.Trimmed)
	}
	first := res.Trimmed[0]
	if want := replays.MaxOutputBytes / (2*wasm.DefaultOutputBytes + len(kept.Detail)); first != want || len(res.Trimmed) != replays.MaxBatch-want {
		t.Errorf("trimmed from %d (%d of them), want from %d", first, len(res.Trimmed), want)
	}
	for _, i := range res.Trimmed {
		o := res.Outcomes[i]
		if o.Stdout != "" || o.Stderr != "" || o.StdoutSHA256 != kept.StdoutSHA256 || o.StderrSHA256 != kept.StderrSHA256 || o.Kind != wasm.KindPass {
			t.Fatalf("trimmed outcome %d: %s, %d and %d bytes, hashes %s %s", i, o.Kind, len(o.Stdout), len(o.Stderr), o.StdoutSHA256, o.StderrSHA256)
		}
	}
	// Trimming again, as the API does for batches any node ran, keeps it.
	again := res
	again.Outcomes = append([]wasm.Outcome(nil), res.Outcomes...)
	again.Trim()
	if a, b := mustJSON(t, again), mustJSON(t, res); a != b {
		t.Errorf("a second Trim changed the answer")
	}
	for i := range first {
		if o := res.Outcomes[i]; len(o.Stdout) != wasm.DefaultOutputBytes {
			t.Fatalf("outcome %d before the budget lost its output", i)
		}
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
