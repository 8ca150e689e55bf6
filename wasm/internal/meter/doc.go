// Package meter rewrites a WebAssembly module so that it counts the work it
// does against a deterministic fuel budget.
//
// wazero has no fuel of its own, so Instrument inserts the accounting into
// the bytecode before compilation. The instrumented module exports a mutable
// i64 global, GlobalExport, that holds the fuel left in the current slice,
// and imports a function, SliceFunc from SliceModule, of type [] -> [],
// that hands out the next slice. The host gives a run its fuel in slices
// and counts what it gave:
//
//   - Instantiate without start functions, set GlobalExport to the first
//     slice (> 0, at most the run's limit), call StartExport if it is
//     exported (it is the module's former start function), then call the
//     entry point (e.g. _start).
//   - Function entries and loop headers test the counter. When a test finds
//     it below zero, the instrumented code writes it to the global and calls
//     fuel_slice. The host adds slices (never more than the limit in all)
//     until the global is >= 0 and returns; when it cannot (the limit is
//     given out), or the run must end for another reason (a deadline, a
//     cancellation, a shutdown), it does not return: it panics, which ends
//     the guest call with that error. The call itself costs no fuel, and
//     being ordinary Go it is where the goroutine reaches a safe point.
//   - fuel used = given - global, however the run ended; used > limit is
//     exhaustion. Between two tests the code is acyclic, so a run can
//     overdraw its fuel by at most that much and still reach its end: that
//     counts as exhaustion too. Slice boundaries depend only on fuel, and
//     the slice path leaves the global as it would be without it (see
//     below), so outcome and fuel used do not depend on the slice size.
//   - Every call counts its depth in a second exported global, DepthExport
//     (mutable i32): incremented before the call, decremented after. A call
//     that would nest deeper than MaxDepth stores DepthExceeded into it and
//     traps, at the same depth on every engine and machine.
//
// # Where the counter lives
//
// Each function keeps the counter in a local of its own for speed (see
// DESIGN.md, "Sandbox limits and outcomes"). The local is loaded from the
// global at function entry, and written back before every call and
// call_indirect (the callee, or a host function that charges for I/O by
// rewriting the global, sees the current value), reloaded after each call
// returns, and written back before return, before the function's final end,
// before a branch to the function's outermost label, and before an original
// unreachable. A trap other than unreachable (division by zero, an
// out-of-bounds access) leaves the global at its value at the last sync
// point, which is still a deterministic function of program and input. The
// call of fuel_slice is no sync point: after it, the global holds its value
// from before plus the fuel handed out.
//
// The test's branch not taken costs what a test cost before slices (an i64
// compare and a branch over the path). At the top of a loop without
// parameters the path, once the slice is handed out, gives the header's
// charge back and branches to the loop's start, which charges it anew, so
// it never merges into the code after the test and wazero's compiler lays
// that out as if the path were not there. Elsewhere (function entries,
// bulk operations, loops with parameters) the call sits in the else-arm
// of an if, so that the compiler allocates registers for the fall-through
// first. wazero's compiler also spills a loop-carried local that is live
// across a call on every iteration, on the hot path too, so the path first
// copies the locals the enclosing loops write into globals of the meter's
// own, and back after the call: none is live across it. A check saves at
// most 64 locals, and a function's checks in all at most one local per
// byte of its body (beyond that they save none, which is only slower), so
// that the output stays within a few times the input.
//
// # Cost model
//
// Every instruction costs 1, except the structural block, loop, end, else
// and nop, which are free. if, br, br_if, br_table, return, call and
// call_indirect cost 1 like any other instruction.
//
// On top of that, bulk operations pay for their size at run time, before the
// instruction runs: memory.fill, memory.copy, memory.init, table.fill,
// table.copy and table.init cost BulkCost per byte or element (their top i32
// operand). memory.grow costs PageCost per page actually granted and
// table.grow BulkCost per element actually granted (nothing when they return
// -1), charged right after the instruction; both also cost GrowCost
// statically, granted or not, as they leave compiled code as a host call
// does.
//
// Static costs are charged per metered segment: a straight run of code that
// control can enter only at its start. A segment starts at function entry,
// at each loop header (inside the loop, so every iteration pays), at the
// start of an if's then-arm and else-arm, after the end of an if, and after
// the end of a block that some branch targets. A br_if's fallthrough stays
// in its segment. After br, br_table, return and unreachable the code is
// dead until the next end or else; it gets a segment of its own that is
// never entered. A segment's whole static cost is charged once at its start,
// so a trap or a br_if that leaves a segment early has already paid for the
// rest of it: the same overcharge on every run, which keeps the charges few.
//
// A direct call to an imported function costs HostCallCost more, so that a
// loop over host calls spends fuel about as fast as an arithmetic loop
// (see the constant for the measurement). poll_oneoff pays
// PollSubscriptionCost per subscription and fd_read, fd_write, fd_pread and
// fd_pwrite pay IovecCost per iovec, read from the call's argument at the
// call site (the arguments above it go through scratch locals) and charged,
// with a test, before the call: a call asking for more than the fuel left
// ends the run before the host does any of the work. The bytes a host
// function moves are the host's to charge. The pass gives every imported
// function a wrapper, a defined function of its type that calls it; a
// reference to an imported function (in an element segment, a ref.func, the
// start function) names the wrapper, so a call through a table pays what a
// direct call pays. Exports of imported functions are left alone.
//
// Every loop iteration executes at least one branch, which costs 1 and is
// charged in that iteration, and every call costs 1, so neither a loop nor
// recursion can run unpaid.
//
// # Limits
//
// Instrument and PrepareReactor first call CheckLimits, which refuses,
// before anything compiles the module, one beyond the bounds that the Max
// constants state (br_table targets, block nesting, locals, body and code
// size, functions, tables and their initial size, data and element
// segments, types, parameters, imports, exports, globals): the sizes that
// make wazero's validation and compilation take much time or memory. Each
// constant's doc gives the largest value measured on the modules the
// project runs. Instrument also lowers every defined table's maximum to
// MaxTableSize (setting it when there is none), so that wazero refuses
// table.grow past it (-1).
//
// # Output
//
// The pass keeps every section, in order, with custom sections copied as
// they are (DWARF offsets in them go stale) except the name section. It
// appends a type ([] -> []) and the import of fuel_slice after the
// module's own (so fuel_slice's index is the number of imported
// functions), appends the two counters and the globals the slice path
// saves locals in, two or three exports, the imported functions' wrappers
// after the module's functions and a declarative element segment naming
// them, removes the start section, rewrites the tables' maximum, and
// appends locals to each function body after its own. The import moves
// every defined function up by one index; the pass renumbers every place
// that names one: call, ref.func (in code, global initialisers and element
// expressions), exports, the start function (now StartExport), element
// segments' function indices, and the function, local and label names of
// the name section, which therefore stays correct. No other index moves.
// An input that imports from SliceModule itself is refused. The output for
// a given input depends only on the input and Version.
package meter
