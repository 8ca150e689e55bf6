package checkers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/wasm"
)

// memoRunner returns a Runner with a memo over a directory holding the
// named fixtures, and their hashes by name.
func memoRunner(tb testing.TB, cfg wasm.Config, memo *checkers.Memo, names ...string) (*checkers.Runner, map[string]string) {
	tb.Helper()
	dir := tb.TempDir()
	sums := map[string]string{}
	for _, n := range names {
		sums[n] = checkers.SHA256(copyFixture(tb, dir, n, n))
	}
	d, err := checkers.OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmtest.CacheDir("")
	}
	sb, err := wasm.NewSandbox(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(context.Background()) })
	var opts []checkers.RunnerOption
	if memo != nil {
		opts = append(opts, checkers.WithMemo(memo))
	}
	return checkers.NewRunner(sb, d, opts...), sums
}

var wallNS = regexp.MustCompile(`"wall_ns":\d+`)

func jsonNoWall(tb testing.TB, o wasm.Outcome) string {
	tb.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		tb.Fatal(err)
	}
	return wallNS.ReplaceAllString(string(b), `"wall_ns":0`)
}

func TestMemo_hit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	memo := checkers.NewMemo(checkers.MemoConfig{})
	r, sums := memoRunner(t, wasm.Config{}, memo, "primes.wasm", "fail.wasm")
	for _, name := range []string{"primes.wasm", "fail.wasm"} {
		t.Run(name, func(t *testing.T) {
			ref := checkers.Ref{SHA256: sums[name]}
			in := wasm.Input{Artifact: []byte("100 25")}
			before := r.Runs()
			first, err := r.Run(ctx, ref, in)
			if err != nil {
				t.Fatal(err)
			}
			second := r.Do(ctx, checkers.Job{Ref: ref, Input: in})
			if second.Err != nil || !second.Memo {
				t.Fatalf("second run: memo %v err %v, want a memo hit", second.Memo, second.Err)
			}
			if got := r.Runs() - before; got != 1 {
				t.Errorf("%d runs in the sandbox, want 1: a hit must not run", got)
			}
			// A hit is the original outcome, wall_ns included.
			if a, b := mustJSON(t, first), mustJSON(t, second.Outcome); a != b {
				t.Errorf("hit differs from the run it memoised:\n%s\n%s", a, b)
			}
			// And equals a fresh run apart from wall_ns.
			fresh := r.Do(ctx, checkers.Job{Ref: ref, Input: in, NoMemo: true})
			if fresh.Memo || r.Runs()-before != 2 {
				t.Fatalf("NoMemo did not run: memo %v runs %d", fresh.Memo, r.Runs()-before)
			}
			if a, b := jsonNoWall(t, second.Outcome), jsonNoWall(t, fresh.Outcome); a != b {
				t.Errorf("hit and fresh run differ apart from wall_ns:\n%s\n%s", a, b)
			}
		})
	}
	if s := memo.Stats(); s.Entries != 2 || s.Hits != 2 || s.Misses != 2 {
		t.Errorf("stats %+v, want 2 entries, 2 hits, 2 misses", s)
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

// TestMemo_miss: every part of the key that can change an outcome misses.
func TestMemo_miss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	memo := checkers.NewMemo(checkers.MemoConfig{})
	r, sums := memoRunner(t, wasm.Config{}, memo, "primes.wasm", "pass.wasm")
	base := checkers.Ref{SHA256: sums["primes.wasm"]}
	in := wasm.Input{Artifact: []byte("100 25")}
	if _, err := r.Run(ctx, base, in); err != nil {
		t.Fatal(err)
	}
	with := func(f func(*checkers.Ref, *wasm.Input)) (checkers.Ref, wasm.Input) {
		ref, in := base, in
		f(&ref, &in)
		return ref, in
	}
	for _, tc := range []struct {
		name string
		f    func(*checkers.Ref, *wasm.Input)
	}{
		{"checker", func(r *checkers.Ref, _ *wasm.Input) { r.SHA256 = sums["pass.wasm"] }},
		{"fuel", func(r *checkers.Ref, _ *wasm.Input) { r.Fuel = 5_000_000 }},
		{"memory", func(r *checkers.Ref, _ *wasm.Input) { r.MemoryMiB = 32 }},
		{"artifact", func(_ *checkers.Ref, in *wasm.Input) { in.Artifact = []byte("100 26") }},
		{"evidenceEmpty", func(_ *checkers.Ref, in *wasm.Input) { in.Evidence = []byte{} }},
		{"evidence", func(_ *checkers.Ref, in *wasm.Input) { in.Evidence = []byte("x") }},
		{"criteriaEmpty", func(_ *checkers.Ref, in *wasm.Input) { in.Criteria = []byte{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, in := with(tc.f)
			res := r.Do(ctx, checkers.Job{Ref: ref, Input: in})
			if res.Err != nil || res.Memo {
				t.Fatalf("memo %v err %v, want a run", res.Memo, res.Err)
			}
			// Now it is memoised under its own key.
			if res := r.Do(ctx, checkers.Job{Ref: ref, Input: in}); !res.Memo {
				t.Errorf("second run was not a hit")
			}
		})
	}
	// The default limits spelt out are the same run as the defaults.
	explicit := base
	explicit.Fuel, explicit.MemoryMiB = wasm.DefaultFuel, wasm.DefaultMemoryMiB
	if res := r.Do(ctx, checkers.Job{Ref: explicit, Input: in}); !res.Memo {
		t.Errorf("explicit default limits missed")
	}
	explicit.Kind = checkers.KindWasm
	if res := r.Do(ctx, checkers.Job{Ref: explicit, Input: in}); !res.Memo {
		t.Errorf(`kind "wasm" missed where "" hit`)
	}

	t.Run("engine", func(t *testing.T) {
		// A runner on the interpreter shares the memo but not its entries.
		ri, _ := memoRunner(t, wasm.Config{Interpreter: true}, memo, "primes.wasm")
		if res := ri.Do(ctx, checkers.Job{Ref: base, Input: in}); res.Err != nil || res.Memo || ri.Runs() != 1 {
			t.Fatalf("interpreter: memo %v err %v runs %d, want a run", res.Memo, res.Err, ri.Runs())
		}
	})
}

func TestKey(t *testing.T) {
	t.Parallel()
	ref := checkers.Ref{SHA256: strings.Repeat("ab", 32)}
	in := wasm.Input{Artifact: []byte("a")}
	k1, ok := checkers.Key(ref, in, "compiler")
	if !ok {
		t.Fatal("not memoisable")
	}
	for _, tc := range []struct {
		name string
		ref  checkers.Ref
		in   wasm.Input
		eng  string
	}{
		{"engine", ref, in, "interpreter"},
		{"python", checkers.Ref{SHA256: ref.SHA256, Kind: checkers.KindPython}, in, "compiler"},
		{"evidenceNil/Empty", ref, wasm.Input{Artifact: []byte("a"), Evidence: []byte{}}, "compiler"},
		{"criteria", ref, wasm.Input{Artifact: []byte("a"), Criteria: []byte("{}")}, "compiler"},
		// Length prefixes keep fields apart: the artifact cannot spill into
		// the evidence.
		{"boundary", ref, wasm.Input{Artifact: []byte(""), Evidence: []byte("a")}, "compiler"},
	} {
		k2, _ := checkers.Key(tc.ref, tc.in, tc.eng)
		if k2 == k1 {
			t.Errorf("%s: same key as the base", tc.name)
		}
	}
	// The python artifact type's default is the same key as the default.
	py := checkers.Ref{SHA256: ref.SHA256, Kind: checkers.KindPython}
	a, _ := checkers.Key(py, in, "compiler")
	py.ArtifactType = "solution"
	b, _ := checkers.Key(py, in, "compiler")
	py.ArtifactType = "code"
	c, _ := checkers.Key(py, in, "compiler")
	if a != b || a == c {
		t.Errorf("python types: default %s solution %s code %s", a, b, c)
	}
	if _, ok := checkers.Key(ref, wasm.Input{Args: []string{"x"}}, "compiler"); ok {
		t.Errorf("a wasm input with Args is memoisable")
	}
	// Golden: the encoding is part of every stored memo. A change here
	// must bump the version tag (stored outcomes then miss, as they should).
	if want := goldenKey; k1.String() != want {
		t.Errorf("key %s, want %s (wasm.OutcomeVersion %q)", k1, want, wasm.OutcomeVersion)
	}
}

// goldenKey is Key(Ref{SHA256: "abab…"}, Input{Artifact: "a"}, "compiler")
// under wasm.OutcomeVersion "meter v4; reactor v1; init fuel 2000000000,
// memory 256 MiB" and the default limits (fuel 10^9, 64 MiB, 64 KiB per
// stream), computed independently (a Python script hashing the encoding
// that Key documents).
const goldenKey = "7fb459151538ef84b12e7820df8b3ecc152d8e44485cd2fd5402017835711263"

func TestMemo_notTimeout(t *testing.T) {
	t.Parallel()
	memo := checkers.NewMemo(checkers.MemoConfig{})
	r, sums := memoRunner(t, wasm.Config{}, memo, "loop.wasm", "badimport.wasm")
	// 1e9 fuel is about 0.2 s of loop: the context ends it first.
	ref := checkers.Ref{SHA256: sums["loop.wasm"], Fuel: 1_000_000_000}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		res := r.Do(ctx, checkers.Job{Ref: ref, Input: wasm.Input{}})
		cancel()
		if res.Err != nil || res.Outcome.Kind != wasm.KindTimeout || res.Memo {
			t.Fatalf("run %d: %v %s memo %v, want a timeout", i, res.Err, res.Outcome.Kind, res.Memo)
		}
	}
	bad := checkers.Ref{SHA256: sums["badimport.wasm"]}
	for range 2 {
		if o, _ := r.Run(context.Background(), bad, wasm.Input{}); o.Kind != wasm.KindInvalidChecker {
			t.Fatalf("badimport: %s", o.Kind)
		}
	}
	if r.Runs() != 4 || memo.Stats().Entries != 0 {
		t.Errorf("runs %d entries %d: timeouts and invalid checkers must not be memoised", r.Runs(), memo.Stats().Entries)
	}
}

func TestMemo_bounds(t *testing.T) {
	t.Parallel()
	out := func(i int, detail string) wasm.Outcome {
		return wasm.Outcome{Kind: wasm.KindPass, Pass: true, Detail: detail, InputSHA256: fmt.Sprint(i)}
	}
	key := func(i int) checkers.MemoKey { return checkers.MemoKey{byte(i), byte(i >> 8)} }
	t.Run("entries", func(t *testing.T) {
		m := checkers.NewMemo(checkers.MemoConfig{MaxEntries: 3})
		for i := range 5 {
			m.Put(key(i), out(i, "ok"))
		}
		if s := m.Stats(); s.Entries != 3 {
			t.Errorf("%d entries, want 3", s.Entries)
		}
		if _, ok := m.Get(key(0)); ok {
			t.Errorf("the oldest was kept")
		}
		if o, ok := m.Get(key(4)); !ok || o.InputSHA256 != "4" {
			t.Errorf("the newest was lost")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		big := strings.Repeat("x", 10_000)
		m := checkers.NewMemo(checkers.MemoConfig{MaxBytes: 25_000})
		m.Put(key(0), out(0, big))
		m.Put(key(1), out(1, big))
		m.Get(key(0)) // 0 is now the most recently used
		m.Put(key(2), out(2, big))
		s := m.Stats()
		if s.Entries != 2 || s.Bytes > 25_000 {
			t.Errorf("stats %+v, want 2 entries within 25000 bytes", s)
		}
		if _, ok := m.Get(key(1)); ok {
			t.Errorf("the least recently used was kept")
		}
		m.Put(key(3), out(3, strings.Repeat("y", 30_000)))
		if _, ok := m.Get(key(3)); ok {
			t.Errorf("an outcome over MaxBytes by itself was kept")
		}
		// Putting a key again does not count it twice.
		before := m.Stats().Bytes
		m.Put(key(2), out(2, big))
		if after := m.Stats().Bytes; after != before {
			t.Errorf("bytes %d after putting a key again, want %d", after, before)
		}
	})
	t.Run("kinds", func(t *testing.T) {
		m := checkers.NewMemo(checkers.MemoConfig{})
		for i, k := range []wasm.Kind{wasm.KindTimeout, wasm.KindInvalidChecker, ""} {
			m.Put(key(i), wasm.Outcome{Kind: k})
		}
		if n := m.Stats().Entries; n != 0 {
			t.Errorf("%d entries of kinds that decide nothing", n)
		}
	})
}

// mapStore is a MemoStore in a map, counting calls; fail makes it fail.
type mapStore struct {
	mu         sync.Mutex
	m          map[checkers.MemoKey][]byte
	gets, puts int
	fail       bool
}

func (s *mapStore) Get(k checkers.MemoKey) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.fail {
		return nil, false, fmt.Errorf("store down")
	}
	b, ok := s.m[k]
	return b, ok, nil
}

func (s *mapStore) Put(k checkers.MemoKey, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.fail {
		return fmt.Errorf("store down")
	}
	s.m[k] = b
	return nil
}

func TestMemo_store(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &mapStore{m: map[checkers.MemoKey][]byte{}}
	r1, sums := memoRunner(t, wasm.Config{}, checkers.NewMemo(checkers.MemoConfig{Store: st}), "primes.wasm")
	ref := checkers.Ref{SHA256: sums["primes.wasm"]}
	in := wasm.Input{Artifact: []byte("100 25")}
	first, err := r1.Run(ctx, ref, in)
	if err != nil || st.puts != 1 {
		t.Fatalf("run: %v, %d puts", err, st.puts)
	}
	// A second memo (a restarted server) over the same store answers
	// without running, and the same JSON.
	m2 := checkers.NewMemo(checkers.MemoConfig{Store: st})
	r2, _ := memoRunner(t, wasm.Config{}, m2, "primes.wasm")
	res := r2.Do(ctx, checkers.Job{Ref: ref, Input: in})
	if res.Err != nil || !res.Memo || r2.Runs() != 0 {
		t.Fatalf("memo %v err %v runs %d, want a hit from the store", res.Memo, res.Err, r2.Runs())
	}
	if a, b := mustJSON(t, first), mustJSON(t, res.Outcome); a != b {
		t.Errorf("stored outcome differs:\n%s\n%s", a, b)
	}
	if s := m2.Stats(); s.StoreHits != 1 || s.Entries != 1 {
		t.Errorf("stats %+v", s)
	}
	// A store that fails is a miss, and the run goes on.
	st.fail = true
	r3, _ := memoRunner(t, wasm.Config{}, checkers.NewMemo(checkers.MemoConfig{Store: st}), "primes.wasm")
	if res := r3.Do(ctx, checkers.Job{Ref: ref, Input: in}); res.Err != nil || res.Memo || res.Outcome.Kind != wasm.KindPass {
		t.Fatalf("with a failing store: %v memo %v %s", res.Err, res.Memo, res.Outcome.Kind)
	}
	if s := r3.Memo().Stats(); s.StoreErrors != 2 || s.Entries != 1 {
		t.Errorf("stats %+v, want 2 store errors (get, put) and the outcome kept in memory", s)
	}
	// Bytes that are not an outcome are a miss.
	st.fail = false
	for k := range st.m {
		st.m[k] = []byte("not json")
	}
	r4, _ := memoRunner(t, wasm.Config{}, checkers.NewMemo(checkers.MemoConfig{Store: st}), "primes.wasm")
	if res := r4.Do(ctx, checkers.Job{Ref: ref, Input: in}); res.Memo {
		t.Errorf("garbage in the store was a hit")
	}
}
