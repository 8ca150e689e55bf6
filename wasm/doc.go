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
package wasm
