package wasm

import (
	"fmt"
	"time"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// Defaults for Limits.
//
// DefaultFuel is calibrated on the cheapest loop there is, (loop (br 0)),
// one fuel an iteration: it spends 10^9 fuel in 0.25 s on the 2-core
// machine of docs/performance.md (0.25 ns a fuel, BenchmarkSpin;
// 0.6 s with other builds running; even at the 1.25-1.7 ns a fuel measured
// under load before fuel slices, under 2 s), so a runaway checker ends
// fuel_exhausted many times within DefaultTimeout, the backstop: under
// ordinary load fuel decides, not the clock. Real checkers use far less: a Go
// checker's run about 2*10^6, a Python check about 10^7.
const (
	DefaultFuel        uint64 = 1_000_000_000
	DefaultMemoryMiB   uint32 = 64
	DefaultOutputBytes        = 64 << 10
	DefaultTimeout            = 10 * time.Second

	// MaxMemoryMiB is the most memory any run may be given: 1 GiB, a
	// quarter of wasm32's address space, far above what checkers use
	// (Go's runtime and CPython's start each leave under 16 MiB) and
	// small enough that a server's memory budget admits several at once.
	MaxMemoryMiB uint32 = 1024

	// MaxFuel is the largest fuel budget a run may have: four times the
	// default, 0.9 s of the cheapest loop here (2.3 s with other builds
	// running, 7 s at the slowest rate ever measured), within the backstop. Fuel is what decides a
	// runaway checker, so it must not be left to whoever writes the
	// criteria.
	MaxFuel uint64 = 4 * DefaultFuel

	pageSize    = 64 << 10
	wasm32Pages = 1 << 16 // 4 GiB
	pagesPerMiB = (1 << 20) / pageSize
)

// Limits bound one run.
type Limits struct {
	// Fuel is the deterministic instruction budget. 0 runs the module
	// unmetered, for measurement only: then only Timeout bounds the run and
	// the outcome's fuel fields are 0.
	Fuel uint64
	// MemoryMiB caps linear memory. 0 means DefaultMemoryMiB.
	MemoryMiB uint32
	// StdoutBytes and StderrBytes cap what is kept of each stream; writing
	// past a cap ends the run as output_exceeded. 0 means DefaultOutputBytes.
	StdoutBytes int
	StderrBytes int
	// Timeout is the wall-clock backstop. It protects the host only: an
	// outcome of kind timeout never decides a case. 0 means DefaultTimeout.
	Timeout time.Duration
}

// DefaultLimits returns the limits a checker gets when nobody says otherwise.
func DefaultLimits() Limits {
	return Limits{Fuel: DefaultFuel}.withDefaults()
}

// withDefaults fills every zero field but Fuel with its default.
func (l Limits) withDefaults() Limits {
	if l.MemoryMiB == 0 {
		l.MemoryMiB = DefaultMemoryMiB
	}
	if l.MemoryMiB > MaxMemoryMiB {
		l.MemoryMiB = MaxMemoryMiB
	}
	if l.StdoutBytes <= 0 {
		l.StdoutBytes = DefaultOutputBytes
	}
	if l.StderrBytes <= 0 {
		l.StderrBytes = DefaultOutputBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// memoryPages returns the memory limit in 64 KiB pages.
func (l Limits) memoryPages() uint32 { return l.MemoryMiB * pagesPerMiB }

// InstrumentationVersion identifies the fuel meter's rewriting of modules.
// It changes whenever the fuel a given module and input use could change,
// so a cache of outcomes keyed by it (checkers' memo) never serves an
// outcome measured under another cost model.
const InstrumentationVersion = meter.Version

// OutcomeVersion names everything in the sandbox, beyond a run's module,
// input and limits, that can change its outcome: the fuel meter, the
// reactor rewrite and the fixed limits of a reactor's _initialize. A cache
// of outcomes (checkers' memo) keys on it.
var OutcomeVersion = fmt.Sprintf("meter v%d; reactor v%d; init fuel %d, memory %d MiB",
	meter.Version, meter.ReactorVersion, InitFuel, InitMemoryMiB)
