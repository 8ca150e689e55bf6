package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
)

func fixtureBytes(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "checkers", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func newTestSandbox(tb testing.TB, cfg Config) *Sandbox {
	tb.Helper()
	s, err := NewSandbox(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func jsonOf(tb testing.TB, out Outcome) string {
	tb.Helper()
	out.WallNS = 0
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestSnapshot_fixtureSeesLeftovers is the control for the isolation
// tests: in one instance, reactor_state's second check sees what the first
// left and fails, so its passing on every replay means something.
func TestSnapshot_fixtureSeesLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestSandbox(t, Config{})
	c, err := s.unmetered.compile(ctx, [32]byte{7}, fixtureBytes(t, "reactor_state.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if c.err != nil || !c.reactor || c.noSnapshot != "" {
		t.Fatalf("compile: %v reactor %v noSnapshot %q", c.err, c.reactor, c.noSnapshot)
	}
	r := newRun(c, Input{}, Limits{}.withDefaults())
	mod := r.startReactor(ctx, s.unmetered.rt)
	if mod == nil {
		t.Fatalf("_initialize: %+v", r.initFail)
	}
	defer mod.Close(ctx)
	check := func() uint64 {
		res, err := mod.ExportedFunction("assay_check").Call(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if got := check(); got != 0 {
		t.Fatalf("first check returned %d", got)
	}
	if got := check(); got == 0 {
		t.Fatalf("second check in the same instance passed: the fixture does not see leftover state")
	}
}

// TestSnapshot_takenOnce: concurrent first runs of a reactor take one
// snapshot, and later runs reuse it.
func TestSnapshot_takenOnce(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	module := fixtureBytes(t, "reactor_state.wasm")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out := s.Run(context.Background(), module, Input{}, DefaultLimits()); out.Kind != KindPass {
				t.Errorf("kind %s: %s", out.Kind, out.Detail)
			}
		}()
	}
	wg.Wait()
	s.Run(context.Background(), module, Input{}, Limits{})
	if n := s.snaps.taken.Load(); n != 1 {
		t.Errorf("%d snapshots taken, want 1 (metered and unmetered runs share it)", n)
	}
	// Another argv is another snapshot.
	s.Run(context.Background(), module, Input{Args: []string{"x"}}, DefaultLimits())
	if n := s.snaps.taken.Load(); n != 2 {
		t.Errorf("%d snapshots taken, want 2", n)
	}
}

// TestSnapshot_cacheBound: the cache keeps at most SnapshotEntries
// snapshots, dropping the least recently used, and runs stay correct.
func TestSnapshot_cacheBound(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{SnapshotEntries: 2})
	module := fixtureBytes(t, "reactor_state.wasm")
	for _, arg := range []string{"a", "b", "c", "a", "b", "c"} {
		if out := s.Run(context.Background(), module, Input{Args: []string{arg}}, DefaultLimits()); out.Kind != KindPass {
			t.Fatalf("kind %s: %s", out.Kind, out.Detail)
		}
		if n := s.snaps.len(); n > 2 {
			t.Fatalf("%d snapshots cached, over the bound of 2", n)
		}
	}
	if n := s.snaps.taken.Load(); n != 6 {
		t.Errorf("%d snapshots taken, want 6 (each evicted before its reuse)", n)
	}
	// By bytes: a bound under one image keeps only the newest.
	s = newTestSandbox(t, Config{SnapshotBytes: 1})
	for _, arg := range []string{"a", "b"} {
		s.Run(context.Background(), module, Input{Args: []string{arg}}, DefaultLimits())
	}
	if n := s.snaps.len(); n != 1 {
		t.Errorf("%d snapshots cached under a 1-byte bound, want 1", n)
	}
}

// TestSnapshot_copyMatchesMap: replays that copy the image give what
// copy-on-write replays give, and what cold runs give.
func TestSnapshot_copyMatchesMap(t *testing.T) {
	t.Parallel()
	mapped := newTestSandbox(t, Config{})
	mapped.copyMax, mapped.noAdapt = 0, true
	copied := newTestSandbox(t, Config{})
	copied.copyMax = 1 << 40
	for _, name := range []string{"reactor_state.wasm", "reactor_clock.wasm", "reactor_io.wasm", "reactor_initgrow.wasm"} {
		module := fixtureBytes(t, name)
		in := Input{Artifact: []byte("abc")}
		want := jsonOf(t, mapped.RunCold(context.Background(), module, in, DefaultLimits()))
		for range 3 {
			if got := jsonOf(t, mapped.Run(context.Background(), module, in, DefaultLimits())); got != want {
				t.Errorf("%s mapped:\n%s\nwant %s", name, got, want)
			}
			if got := jsonOf(t, copied.Run(context.Background(), module, in, DefaultLimits())); got != want {
				t.Errorf("%s copied:\n%s\nwant %s", name, got, want)
			}
		}
	}
}

// TestSnapshot_coldFallback: a reactor whose state a snapshot cannot hold
// (it drops a data segment) runs cold, correctly, and takes no snapshot.
func TestSnapshot_coldFallback(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	module := fixtureBytes(t, "reactor_nosnap.wasm")
	for range 3 {
		if out := s.Run(context.Background(), module, Input{}, DefaultLimits()); out.Kind != KindPass {
			t.Fatalf("kind %s: %s", out.Kind, out.Detail)
		}
	}
	if n := s.snaps.taken.Load(); n != 0 {
		t.Errorf("%d snapshots taken of a module that cannot have one", n)
	}
	c, err := s.metered.compile(context.Background(), [32]byte{9}, module)
	if err != nil {
		t.Fatal(err)
	}
	if c.noSnapshot != "it uses data.drop" {
		t.Errorf("noSnapshot %q", c.noSnapshot)
	}
}

// TestSnapshot_leftOpen: a file _initialize leaves open would be missing
// from a replay, so such a reactor runs cold, and passes.
func TestSnapshot_leftOpen(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	module := fixtureBytes(t, "reactor_keepopen.wasm")
	in := Input{Mounts: []Mount{{Dir: "/lib", FS: fstest.MapFS{"x.txt": {Data: []byte("x")}}}}}
	for range 2 {
		if out := s.Run(context.Background(), module, in, DefaultLimits()); out.Kind != KindPass {
			t.Fatalf("kind %s: %s", out.Kind, out.Detail)
		}
	}
	if n := s.snaps.taken.Load(); n != 1 {
		t.Errorf("%d snapshot attempts, want 1 (it failed, and that was cached)", n)
	}
	if ent := s.snaps.get(snapKey(sha256.Sum256(module), in), nil); ent.state != nil || ent.fail != nil {
		t.Errorf("a snapshot was kept: %+v", ent)
	}
}

// TestSnapshot_adapt: an image larger than copyMax is mapped, and stays
// mapped when replays touch little of it (reactor_big: 3 pages of 320),
// but is copied after the first replay touches much of it (reactor_state:
// most of its 3 pages). Outcomes are the cold ones either way.
func TestSnapshot_adapt(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	s.copyMax = 0
	for name, copying := range map[string]bool{"reactor_big.wasm": false, "reactor_state.wasm": true} {
		module := fixtureBytes(t, name)
		want := jsonOf(t, s.RunCold(context.Background(), module, Input{}, DefaultLimits()))
		for range 3 {
			if got := jsonOf(t, s.Run(context.Background(), module, Input{}, DefaultLimits())); got != want {
				t.Errorf("%s:\n%s\nwant %s", name, got, want)
			}
		}
		ent := s.snaps.get(snapKey(sha256.Sum256(module), Input{}), nil)
		img := ent.state.image
		if img.fd < 0 {
			t.Skipf("%s: no memfd here", name)
		}
		if !img.probed.Load() || img.copying.Load() != copying {
			t.Errorf("%s: probed %v copying %v, want copying %v", name, img.probed.Load(), img.copying.Load(), copying)
		}
	}
}
