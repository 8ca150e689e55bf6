package meter

import (
	"fmt"
	"math"
)

// Version identifies the pass's output. It is bumped whenever the bytes
// Instrument emits for some input change, because it keys caches of
// instrumented and compiled modules.
const Version = 4

// GlobalExport is the export name of the fuel counter: a mutable i64 global
// holding the fuel left.
const GlobalExport = "assay_fuel"

// StartExport is the export name under which the module's start function is
// exported when it had one. The start section itself is removed, so the host
// can set the fuel before the start function runs.
const StartExport = "assay_start"

// SliceModule and SliceFunc name the function Instrument imports, of type
// [] -> [], that the instrumented code calls when the counter in
// GlobalExport is found below zero at a test: the current slice of fuel
// is spent. The counter is in the global when it is called. It must
// return only with the global >= 0 (the next slice handed out); when the
// run must end instead (its fuel is spent, or its deadline passed, or it
// was cancelled), it must not return: the host panics, which ends the
// guest call with an error. The call itself costs no fuel.
const (
	SliceModule = "assay"
	SliceFunc   = "fuel_slice"
)

// DepthExport is the export name of the call-depth counter: a mutable i32
// global that every call increments before it and decrements after it.
const DepthExport = "assay_depth"

// MaxDepth is the deepest a call chain may go. A call that would go deeper
// stores DepthExceeded into the depth counter and traps. The limit is the
// module's, not the engine's: wazero's compiler allows as many frames as fit
// in 400 MB of stack, which differs between machine architectures, so
// without it a deep recursion would end at a different point, with a
// different fuel used, on another machine; and a recursion bomb would cost
// the host that much memory.
const MaxDepth = 1 << 16

// DepthExceeded is the value the instrumented code stores into the depth
// counter just before it traps for a call chain deeper than MaxDepth.
const DepthExceeded = -1

// Cost constants. Every instruction costs 1 except block, loop, end, else
// and nop, which are free; see the package documentation.
const (
	// PageCost is the fuel per 64 KiB page granted by memory.grow.
	PageCost = 1024
	// BulkCost is the fuel per byte or element processed by memory.fill,
	// memory.copy, memory.init, table.fill, table.copy and table.init, and
	// per element granted by table.grow.
	BulkCost = 1

	// HostCallCost is the fuel of a direct call to an imported function
	// (on top of the 1 every call costs; fuel_slice's calls cost nothing),
	// so that a loop over host calls spends fuel about as fast as an
	// arithmetic loop. Calibrated with BenchmarkHostCalls (compiler, a
	// loaded 2-core machine, best of 7 runs, noisy): an arithmetic loop
	// runs at 0.16 ns/fuel; random_get of one byte took 112 ns a call
	// (0.18 ns/fuel at this cost), poll_oneoff with one clock subscription
	// 89 ns (0.10 ns/fuel), fd_write of one empty iovec 91 ns (0.13
	// ns/fuel).
	HostCallCost = 600
	// GrowCost is the fuel of every memory.grow and table.grow on top of
	// what they pay per page or element granted, granted or not: either
	// leaves compiled code for the runtime's Go, as a host call does. A
	// loop of refused table.grow ran at 6.9 ns/fuel without it (spin: 0.25
	// to 0.6).
	GrowCost = HostCallCost
	// PollSubscriptionCost is the fuel per subscription of a poll_oneoff
	// call (its nsubscriptions argument), charged before the call.
	// Measured: 57 ns a subscription (0.19 ns/fuel; 16 subscriptions a
	// call took 938 ns, 0.17 ns/fuel).
	PollSubscriptionCost = 300
	// IovecCost is the fuel per iovec of an fd_read, fd_write, fd_pread
	// or fd_pwrite call (its iovs_len argument), charged before the call;
	// the bytes moved are charged by the host. Measured: 13.3 ns an empty
	// iovec (0.17 ns/fuel; 1,000 a call took 13.3 us, 0.16 ns/fuel).
	IovecCost = 80
)

// perElem says how an imported function is charged for the argument its
// work grows with, always its third: sig is its parameter types, cost the
// fuel per unit.
type perElem struct {
	sig  string
	cost int64
}

// perElemCosts are the imported functions charged per element, by module
// and name. A function imported under one of these names with another
// type pays HostCallCost only (it cannot link to the host's anyway).
var perElemCosts = map[string]*perElem{
	"wasi_snapshot_preview1.poll_oneoff": {"\x7f\x7f\x7f\x7f", PollSubscriptionCost},
	"wasi_snapshot_preview1.fd_read":     {"\x7f\x7f\x7f\x7f", IovecCost},
	"wasi_snapshot_preview1.fd_write":    {"\x7f\x7f\x7f\x7f", IovecCost},
	"wasi_snapshot_preview1.fd_pread":    {"\x7f\x7f\x7f\x7e\x7f", IovecCost},
	"wasi_snapshot_preview1.fd_pwrite":   {"\x7f\x7f\x7f\x7e\x7f", IovecCost},
}

// DecodeError reports input that Instrument cannot decode: malformed
// binary, or an instruction or section outside the WebAssembly 2.0 feature
// set that wazero enables by default.
type DecodeError struct {
	// Offset is the byte offset in the input module.
	Offset int
	// Reason says what is wrong there.
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("meter: offset %#x: %s", e.Offset, e.Reason)
}

func errAt(off int, format string, args ...any) *DecodeError {
	return &DecodeError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// readU32 reads an unsigned LEB128 u32 whose value is interpreted. It is
// strict: at most 5 bytes, no bits beyond 32.
func readU32(b []byte, p int) (uint32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if p+i >= len(b) {
			return 0, 0, errAt(p, "unexpected end of input in LEB128")
		}
		c := b[p+i]
		if i == 4 && c&0xf0 != 0 {
			return 0, 0, errAt(p, "LEB128 u32 out of range")
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errAt(p, "LEB128 u32 out of range")
}

// skipLEB returns the length of a LEB128 number of at most max bytes whose
// value is not interpreted, only copied.
func skipLEB(b []byte, p, max int) (int, error) {
	for i := 0; i < max; i++ {
		if p+i >= len(b) {
			return 0, errAt(p, "unexpected end of input in LEB128")
		}
		if b[p+i]&0x80 == 0 {
			return i + 1, nil
		}
	}
	return 0, errAt(p, "LEB128 too long")
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendName appends a WebAssembly name (length-prefixed bytes).
func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

// addU32 adds two u32 counts, failing on overflow.
func addU32(a, b uint32, off int) (uint32, error) {
	if uint64(a)+uint64(b) > math.MaxUint32 {
		return 0, errAt(off, "count overflows u32")
	}
	return a + b, nil
}
