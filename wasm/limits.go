package wasm

import (
	"fmt"
	"time"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// Defaults for Limits. DefaultFuel is chosen so that a runaway loop ends in a
// few seconds on a 2-core machine of 2026 (see README, "Performance").
const (
	DefaultFuel        uint64 = 10_000_000_000
	DefaultMemoryMiB   uint32 = 64
	DefaultOutputBytes        = 64 << 10
	DefaultTimeout            = 10 * time.Second

	// MaxMemoryMiB is the most memory any run may be given: all of wasm32's
	// address space.
	MaxMemoryMiB uint32 = 4096

	// MaxFuel is the largest fuel budget a run may have: ten times the
	// default, about 17 s of a tight loop here. Fuel is what bounds a
	// metered guest (the backstop cannot stop compiled code), so it must
	// not be left to whoever writes the criteria.
	MaxFuel uint64 = 10 * DefaultFuel

	pageSize    = 64 << 10
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
