package wasm

import "time"

// Kind names how a checker run ended. Every run ends in exactly one kind.
type Kind string

// The outcome kinds of checker ABI v1. See DESIGN.md, "Sandbox limits and
// outcomes".
const (
	// KindPass: the checker exited 0.
	KindPass Kind = "pass"
	// KindFail: the checker exited with a non-zero status.
	KindFail Kind = "fail"
	// KindTrap: unreachable, division by zero, stack exhausted, bad memory
	// access and the like.
	KindTrap Kind = "trap"
	// KindFuelExhausted: the checker ran out of fuel.
	KindFuelExhausted Kind = "fuel_exhausted"
	// KindMemoryExceeded: the checker asked for more memory than its limit.
	KindMemoryExceeded Kind = "memory_exceeded"
	// KindOutputExceeded: the checker wrote more than the output cap.
	KindOutputExceeded Kind = "output_exceeded"
	// KindInvalidChecker: the module is not a valid ABI v1 checker; it is
	// rejected, and decides nothing.
	KindInvalidChecker Kind = "invalid_checker"
	// KindTimeout: the wall-clock backstop fired. It is not reproducible, so
	// it never decides a case by itself.
	KindTimeout Kind = "timeout"
)

// Decides reports whether an outcome of this kind may decide a case: every
// kind but invalid_checker and timeout.
func (k Kind) Decides() bool {
	return k != KindInvalidChecker && k != KindTimeout && k != ""
}

// Outcome is what one checker run produced. Apart from WallNS, the same
// module, input and limits give the same Outcome on every machine.
type Outcome struct {
	Kind Kind `json:"kind"`
	// Pass is Kind == KindPass, repeated for readers that want a bool.
	Pass bool `json:"pass"`
	// ExitCode is the guest's exit status; -1 when it did not exit (a trap,
	// a limit, a rejected module).
	ExitCode int `json:"exit_code"`
	// FuelUsed is the fuel the run consumed; FuelLimit when it ran out. It is
	// 0 for unmetered runs (FuelLimit 0).
	FuelUsed  uint64 `json:"fuel_used"`
	FuelLimit uint64 `json:"fuel_limit"`
	// MemoryPages is the peak size of linear memory in 64 KiB pages.
	MemoryPages uint32 `json:"memory_pages"`
	// WallNS is the wall time of the run in nanoseconds; the one field that
	// differs between runs.
	WallNS int64 `json:"wall_ns"`
	// Stdout and Stderr are the first bytes of each stream, up to the caps;
	// the hashes are of the whole streams.
	Stdout       string `json:"stdout"`
	Stderr       string `json:"stderr"`
	StdoutSHA256 string `json:"stdout_sha256"`
	StderrSHA256 string `json:"stderr_sha256"`
	// CheckerSHA256 is the hash of the module as given (before metering);
	// InputSHA256 the hash of the artifact bytes.
	CheckerSHA256 string `json:"checker_sha256"`
	InputSHA256   string `json:"input_sha256"`
	// Detail says in words why the run ended as it did.
	Detail string `json:"detail"`
}

// Wall returns WallNS as a duration.
func (o Outcome) Wall() time.Duration { return time.Duration(o.WallNS) }
