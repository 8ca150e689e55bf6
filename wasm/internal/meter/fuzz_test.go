package meter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument checks that Instrument never panics, and that whenever
// wazero accepts the input, Instrument either returns an error or returns
// bytes wazero accepts too. For an input wazero rejects, Instrument may
// return an error or bytes that wazero also rejects: both are fine.
func FuzzInstrument(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	for _, s := range seeds {
		if strings.HasSuffix(s, "gohello.wasm") {
			continue // too big to mutate usefully
		}
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("\x00asm"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0a\x04\x01\x02\x00\x0b"))
	f.Add([]byte("not wasm at all"))

	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Instrument(b)
		if err != nil {
			var de *DecodeError
			var le *LimitError
			if !errors.As(err, &de) && !errors.As(err, &le) {
				t.Fatalf("error %T is not a *DecodeError or a *LimitError: %v", err, err)
			}
			return
		}
		if _, err := r.CompileModule(ctx, b); err != nil {
			return // invalid input: any output is fine
		}
		c, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("wazero accepts the input but not the output: %v", err)
		}
		c.Close(ctx)
	})
}
