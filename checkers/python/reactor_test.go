package python_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// outcomeJSON is out as JSON without its wall time, the one field that may
// differ between two runs of the same checker and input.
func outcomeJSON(tb testing.TB, out wasm.Outcome) string {
	tb.Helper()
	out.WallNS = 0
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestRun_SnapshotMatchesCold: a run from the snapshot gives the outcome a
// cold start gives (JSON, but for the wall time), for the feature checker
// on every type, passes, every kind of failure, and the limits.
func TestRun_SnapshotMatchesCold(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	features := string(testdata(t, "features.py"))
	type tcase struct {
		name, typ, checker, artifact string
		fuel                         uint64 // 0: limits()
	}
	cases := []tcase{
		{"FeaturesSolution", python.TypeSolution, features, `{"answer": [2, 4, 6]}`, 0},
		{"FeaturesDataset", python.TypeDataset, features, "a,b\n1,2\n3,4\n", 0},
		{"FeaturesEmbedding", python.TypeEmbedding, features, "[0.5, 1, 2, 3]", 0},
		{"FeaturesCode", python.TypeCode, features, "def add(a, b):\n    return a + b  # 1 2 3\n", 0},
		{"FeaturesDocument", python.TypeDocument, features, "Chapter 1. In 2024 there were 42 cats.", 0},
		{"FeaturesDataFeed", python.TypeDataFeed, features, "{\"t\": 1, \"v\": 10}\n{\"t\": 2, \"v\": 12}\n", 0},
		{"Random", "", "import random, time, os\nprint(random.random(), time.time(), os.urandom(4).hex(), hash('assay'), {'b', 'a', 'c'})\n", "x", 0},
		{"Exit3", "", "import sys\nsys.exit(3)\n", "x", 0},
		{"Assert", python.TypeSolution, "total = sum(data)\nassert total == 10, f'total is {total}'\n", "[1, 2, 3]", 0},
		{"Syntax", "", "def f(:\n", "x", 0},
		{"Recursion", "", "def f(n):\n    return f(n + 1)\nf(0)\n", "x", 0},
		{"Loop", "", "while True:\n    pass\n", "x", 0},
		{"Memory", "", "n = 1 << 16\nxs = []\nwhile True:\n    xs.append('x' * n)\n", "x", 0},
		{"Output", "", "while True:\n    print('x' * 1000)\n", "x", 0},
		{"StartupFuel", "", "pass\n", `{"a": 1}`, 100_000},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	ctx := context.Background()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			lim := limits()
			if tt.fuel > 0 {
				lim.Fuel = tt.fuel
			}
			in := wasm.Input{Artifact: []byte(tt.artifact)}
			warm := python.Run(ctx, sb, []byte(tt.checker), tt.typ, in, lim)
			cold := python.RunCold(ctx, sb, []byte(tt.checker), tt.typ, in, lim)
			if w, c := outcomeJSON(t, warm), outcomeJSON(t, cold); w != c {
				t.Errorf("from the snapshot:\n%s\ncold:\n%s", w, c)
			}
			t.Logf("%s, %d fuel: %s", warm.Kind, warm.FuelUsed, warm.Detail)
		})
	}
}

// leaker changes every kind of state a checker can reach: a module's
// attribute, sys.modules, builtins, the harness's globals, sys.path, the
// environment, the random generator, the re cache, the garbage collector,
// and it fills memory.
const leaker = `import builtins, gc, json, os, random, re, sys
json.leaked = 1
sys.modules["leaked"] = json
builtins.leaked = 1
sys._getframe(1).f_globals["MAX_FRAMES"] = 0
sys._getframe(1).f_globals["TYPES"].discard("solution")
sys.path.insert(0, "/leaked")
os.environ["LEAKED"] = "1"
random.seed(7)
re.compile("leaked")
gc.unfreeze()
gc.disable()
sys.setrecursionlimit(50)
leaked = ["x" * 1000 for _ in range(1000)]
`

// detector fails when it sees any of leaker's changes, and prints what
// every fresh run prints the same: random numbers and a hash.
const detector = `import builtins, gc, json, os, random, re, sys
assert not hasattr(json, "leaked")
assert "leaked" not in sys.modules
assert not hasattr(builtins, "leaked")
assert "/leaked" not in sys.path
assert "LEAKED" not in os.environ
assert gc.isenabled() and gc.get_freeze_count() > 0
assert sys.getrecursionlimit() > 50
assert "leaked" not in globals()
print(random.random(), hash("assay"), len(re._cache))
def f(n):
    return f(n + 1) if n < 20 else 1 / 0
f(0)
`

// TestRun_Isolated runs a checker that leaves state everywhere it can
// between runs of one that looks for it, concurrently: each run starts from
// the snapshot as it was, and the detector's outcome, a ZeroDivisionError
// after 21 frames cut to MAX_FRAMES, never changes.
func TestRun_Isolated(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, wasm.Config{})
	ctx := context.Background()
	in := wasm.Input{Artifact: []byte(`{"a": 1}`)}
	want := python.Run(ctx, sb, []byte(detector), python.TypeSolution, in, limits())
	if want.Kind != wasm.KindFail || !strings.HasPrefix(want.Detail, "ZeroDivisionError") || !strings.Contains(want.Detail, "outer frames left out") {
		t.Fatalf("detector: %s: %s\nstderr: %s", want.Kind, want.Detail, want.Stderr)
	}
	if got := python.RunCold(ctx, sb, []byte(detector), python.TypeSolution, in, limits()); outcomeJSON(t, got) != outcomeJSON(t, want) {
		t.Fatalf("cold detector differs:\n%s\n%s", outcomeJSON(t, got), outcomeJSON(t, want))
	}
	workers, rounds := 4, 3
	if testing.Short() {
		workers, rounds = 2, 2
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if out := python.Run(ctx, sb, []byte(leaker), python.TypeSolution, in, limits()); out.Kind != wasm.KindPass {
					errs <- fmt.Errorf("leaker: %s: %s %s", out.Kind, out.Detail, out.Stderr)
				}
				if got := python.Run(ctx, sb, []byte(detector), python.TypeSolution, in, limits()); outcomeJSON(t, got) != outcomeJSON(t, want) {
					errs <- fmt.Errorf("detector after leaker:\n%s\nwant\n%s", outcomeJSON(t, got), outcomeJSON(t, want))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
