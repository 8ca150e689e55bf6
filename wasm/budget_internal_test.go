package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// TestSandbox_Validate_waitsWithContext: with every compilation slot
// taken, Validate waits only as long as its context lasts, caches nothing,
// and compiles once a slot is free.
func TestSandbox_Validate_waitsWithContext(t *testing.T) {
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
