package python_test

import (
	"context"
	"fmt"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

func ExampleRun() {
	ctx := context.Background()
	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: cacheDir})
	if err != nil {
		panic(err)
	}
	defer sb.Close(ctx)

	checker := []byte(`
rows = data["rows"]
assert len(rows) >= 2, f"only {len(rows)} rows"
`)
	for _, artifact := range []string{`{"rows": [1, 2, 3]}`, `{"rows": [1]}`} {
		out := python.Run(ctx, sb, checker, python.TypeDataset, wasm.Input{Artifact: []byte(artifact)}, wasm.DefaultLimits())
		fmt.Printf("%s\n%s\n\n", out.Kind, out.Detail)
	}
	// Output:
	// pass
	// exited 0
	//
	// fail
	// AssertionError: only 1 rows
	// Traceback (most recent call last):
	//   File "check.py", line 3, in <module>
	//     assert len(rows) >= 2, f"only {len(rows)} rows"
	//            ^^^^^^^^^^^^^^
}
