package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// TestSandbox_Validate_waitsWithContext: with every compilation slot
// taken, Validate waits only as long as its context lasts, caches nothing,
// and compiles once a slot is free.
func TestSandbox_Validate_waitsWithContext(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	module, err := os.ReadFile(filepath.Join("testdata", "exit256.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for range cap(s.compiles) {
		s.compiles <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Validate(ctx, module); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Validate with no free slot: %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Validate returned %s after its deadline", took)
	}
	for range cap(s.compiles) {
		<-s.compiles
	}
	if err := s.Validate(context.Background(), module); err != nil {
		t.Errorf("Validate with a free slot: %v", err)
	}
}

// TestFuelMeter_refill: slices are handed out while the counter is below
// zero, never past the limit; used is given less what is left, and the
// run ends fuel_exhausted only once the whole limit was given.
func TestFuelMeter_refill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		limit     uint64
		draw      int64 // the counter the guest reports, below zero
		given     uint64
		exhausted bool
	}{
		{"OK", 5 * FuelSlice, -1, 2 * FuelSlice, false},
		{"OKSeveralSlices", 5 * FuelSlice, -int64(2*FuelSlice + 1), 4 * FuelSlice, false},
		{"OKPartialSlice", FuelSlice + 10, -5, FuelSlice + 10, false},
		{"ErrExhausted", FuelSlice + 10, -11, FuelSlice + 10, true},
		{"ErrBulkPastLimit", 3 * FuelSlice, -int64(5 * FuelSlice), 3 * FuelSlice, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g testGlobal
			m := &fuelMeter{}
			m.start(context.Background(), &g, tc.limit)
			g.v = uint64(tc.draw)
			func() {
				defer func() {
					r := recover()
					if got := r == errFuelExhausted; got != tc.exhausted {
						t.Errorf("exhausted %v (panic %v), want %v", got, r, tc.exhausted)
					}
				}()
				m.refill(int64(g.v))
			}()
			if m.given != tc.given {
				t.Errorf("given %d, want %d", m.given, tc.given)
			}
			if want := FuelSlice - uint64(tc.draw); m.used() != want {
				t.Errorf("used %d, want %d", m.used(), want)
			}
		})
	}
	t.Run("ErrStopped", func(t *testing.T) {
		var g testGlobal
		ctx, cancel := context.WithCancel(context.Background())
		m := &fuelMeter{}
		m.start(ctx, &g, 5*FuelSlice)
		cancel()
		defer func() {
			if r := recover(); r != errStopped {
				t.Errorf("panic %v, want errStopped", r)
			}
		}()
		m.refill(-1)
	})
}

// testGlobal is an api.MutableGlobal in memory: Get and Set only.
type testGlobal struct {
	api.MutableGlobal
	v uint64
}

func (g *testGlobal) Get() uint64  { return g.v }
func (g *testGlobal) Set(v uint64) { g.v = v }

// TestSandbox_freeOSAfterLargeRun: a run whose memory reached
// freeAfterBytes has the memory returned to the operating system soon
// after; a small one does not.
func TestSandbox_freeOSAfterLargeRun(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, Config{})
	module := fixtureBytes(t, "grow.wasm")
	small := s.Run(context.Background(), module, Input{}, Limits{Fuel: DefaultFuel, MemoryMiB: 4})
	if small.Kind != KindMemoryExceeded {
		t.Fatalf("small run: %s %q", small.Kind, small.Detail)
	}
	// A wrong free would come soon after the run, asynchronously: give it
	// the time to show (nothing right happens in it).
	time.Sleep(100 * time.Millisecond)
	if freed(s) {
		t.Fatalf("memory was returned after a 4 MiB run")
	}
	large := s.Run(context.Background(), module, Input{}, Limits{Fuel: DefaultFuel, MemoryMiB: freeAfterBytes>>20 + 16})
	if large.Kind != KindMemoryExceeded || uint64(large.MemoryPages)*pageSize < freeAfterBytes {
		t.Fatalf("large run: %s %d pages %q", large.Kind, large.MemoryPages, large.Detail)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !freed(s) {
		if time.Now().After(deadline) {
			t.Fatalf("memory not returned 10 s after a run of %d pages", large.MemoryPages)
		}
		time.Sleep(10 * time.Millisecond) // polls freed
	}
}

// freed reports whether s has returned memory to the operating system.
func freed(s *Sandbox) bool {
	s.free.mu.Lock()
	defer s.free.mu.Unlock()
	return !s.free.last.IsZero()
}

// TestSandbox_Validate_returnsWhileCompiling: a Validate whose context ends
// during a long compilation returns then; the compilation finishes in the
// background, once, and serves the next Validate.
func TestSandbox_Validate_returnsWhileCompiling(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a body of the largest size: seconds of the compiler's time, minutes under the race detector")
	}
	s := newTestSandbox(t, Config{})
	module := limitsModule(t, meter.MaxBodySize) // seconds to compile
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Validate(ctx, module); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Validate: %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Validate returned %s after a 100 ms deadline", took)
	}
	if err := s.Validate(context.Background(), module); err != nil {
		t.Fatalf("Validate after the compilation: %v", err)
	}
}
