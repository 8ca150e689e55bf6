package wasm

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// The host function a metered guest calls when its fuel slice is spent.
const (
	sliceModule = meter.SliceModule
	sliceFunc   = meter.SliceFunc
)

// runKey is the context key under which a guest call carries its *run, so
// that the host functions it calls find their run's state.
type runKey struct{}

// errNoRun ends a guest that calls fuel_slice outside a metered run.
var errNoRun = errors.New("wasm: fuel_slice called outside a metered run")

// instantiateSlices instantiates, in a metered runtime, the host module
// the meter's rewrite imports: fuel_slice, called by the guest with its
// counter below zero, written to the counter's global. Being ordinary Go,
// the call is also where the goroutine meets the scheduler and a pending
// garbage collection, about every FuelSlice of the guest's work.
func instantiateSlices(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(sliceModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fuelSlice), nil, nil).
		Export(sliceFunc).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("wasm: instantiate %s: %w", sliceModule, err)
	}
	return nil
}

// fuelSlice refills the calling guest's fuel, stops it when its run is
// done, or ends it as fuel_exhausted: see fuelMeter.refill.
func fuelSlice(ctx context.Context, _ api.Module, _ []uint64) {
	r, ok := ctx.Value(runKey{}).(*run)
	if !ok || r.meter.global == nil {
		panic(errNoRun)
	}
	r.meter.refill(int64(r.meter.global.Get()))
	// Hand the core to a goroutine that waits for one, an HTTP handler
	// say, rather than hold it until the scheduler preempts this one some
	// slices later: a spinning guest then delays others by about a slice.
	runtime.Gosched()
}
