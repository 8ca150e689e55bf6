// Package wasm is Assay's checker sandbox: it runs a WebAssembly checker
// (checker ABI v1, a WASI preview 1 command) against an input under limits
// and reports how the run ended as an Outcome.
//
// A Sandbox holds wazero runtimes over one compilation cache. Every module
// is first rewritten by the fuel meter (internal/meter), compiled once, and
// cached by its SHA-256 in memory and, with Config.CacheDir, on disk; every
// run then gets a fresh instance that shares nothing with any other. The
// guest sees its input on stdin and in a read-only, in-memory /in directory,
// argv ["checker"], no environment, a fake clock and seeded randomness, so
// the same module and input give the same Outcome, fuel included, on every
// machine and on both of wazero's engines.
//
// A checker may also take the reactor form (assay_check and _initialize;
// see Sandbox.RunCold). Run then starts it from a snapshot: _initialize
// runs once per module, argv and mount directories, and each run restores
// the memory, mutable globals, clock and random position it left into a
// fresh instance of the module (rewritten once by meter.PrepareReactor so
// that instantiation writes nothing), giving the outcome a cold start
// would.
//
// Limits bound a run: fuel (deterministic), memory pages (a per-run
// allocator that refuses to grow past the limit), bytes of output, and a
// wall-clock backstop that only protects the host. Every end of a run is an
// Outcome of one Kind; nothing a guest does panics or hangs the host.
//
// # Fuel slices and stopping
//
// A metered guest gets its fuel in slices of FuelSlice. When a slice is
// spent, the guest's test at a function entry or loop header calls the
// host (meter.SliceFunc, instantiated in every metered runtime), which
// finds its run through the call's context, stops the guest if the run's
// context is done (its Timeout, the caller's cancellation, Close), and
// otherwise gives the next slice or ends the run fuel_exhausted. Host I/O
// charges refill the same way. Fuel used is what was given less what is
// left, so slices change no outcome; they bound how long a guest runs past
// its deadline (one slice: 2.5-6 ms of the cheapest loop on the compiler,
// about 0.5 s on the interpreter, at 52 ns a fuel there) and how long a
// garbage collection waits for a spinning guest (the call is a Go safe
// point; the interpreter is Go code, preempted anyway). A
// run stopped so is a timeout, which decides nothing, and Run returns only
// once its guest has stopped: no guest runs on in the background.
//
// # Memory
//
// What a guest can make the host allocate is bounded:
//
//   - A run's linear memory is at most its limit (at most MaxMemoryMiB)
//     and its tables at most meter.MaxTables tables of meter.MaxTableSize
//     elements (8 MiB). A run holds both against the Sandbox's memory
//     budget (Config.MemoryBudgetMiB; by default half the machine's
//     memory) from before its instance is made until it ends, a reactor
//     running _initialize InitMemoryMiB at least; it waits while they do
//     not fit, and is refused (invalid_checker) when they never could.
//     The snapshot cache takes at most a quarter of the budget, counting
//     each image and its spare copies. On Linux linear memory past
//     reserveMin is a mapping of the limit outside the Go heap
//     (reserve), unmapped when the run ends; the pages a grow adds are
//     backed in one system call (populate), so that the guest takes no
//     page faults in compiled code, where a garbage collection would
//     wait for it.
//   - Every module passes meter.CheckLimits (code size, functions, locals
//     per function and in all, nesting depth and its sum, br_table targets
//     per instruction and in all, tables, segments) before either engine
//     compiles it, and at most Config.Guests compilations (GOMAXPROCS by
//     default) run at once, and as many guests.
//     BenchmarkCompilePeak measured a compilation's peak resident memory
//     on the compiler at 0.3 GiB for CPython (6.6 MB, the largest) and
//     0.23 GiB for the costliest synthetic module at the limits (65,535
//     functions of 512 bytes sharing meter.MaxLocalsTotal locals, 2.2 s).
//   - After a run whose memory reached 256 MiB, memory is returned to the
//     operating system (debug.FreeOSMemory, at most every 10 s); a
//     mapped linear memory goes back at once.
//
// So the sandbox's peak memory is at most the budget plus Config.Guests times
// about 0.3 GiB, with two exceptions: per-instance bookkeeping proportional to
// the module (bounded by the upload limits, not by the budget) and the
// compiled code of every checker the Sandbox has compiled, which it keeps
// for its life. On docs/performance.md's 24 GiB, 2-core machine A the default bound
// is 12 + 0.6 GiB.
package wasm
