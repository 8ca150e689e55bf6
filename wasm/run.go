package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// Input is what a checker sees: the artifact on stdin and at /in/artifact,
// and, where the case has them, /in/evidence and /in/criteria.json.
type Input struct {
	Artifact []byte
	Evidence []byte // nil: no /in/evidence
	Criteria []byte // nil: no /in/criteria.json

	// Args and Mounts serve built-in front-ends whose module is an
	// interpreter (checkers/python). An ordinary checker leaves them empty
	// and sees exactly checker ABI v1.
	//
	// Args, when not empty, replaces argv ["checker"].
	Args []string
	// Mounts are read-only directories added beside /in.
	Mounts []Mount
}

// Mount is a read-only directory a front-end adds to a run: an
// interpreter's standard library, a checker's source. FS is shared by every
// run that mounts it, so it must be safe for concurrent use; nothing is
// copied per run, and the guest can only read it. Bytes read are charged to
// the run's fuel, as reads of /in are.
type Mount struct {
	// Dir is the absolute guest path of the directory, such as /usr/local.
	// It may not be /, /in or under /in.
	Dir string
	FS  fs.FS
}

// check reports whether m can be mounted.
func (m Mount) check() error {
	switch {
	case m.FS == nil:
		return fmt.Errorf("mount %q has no file system", m.Dir)
	case !strings.HasPrefix(m.Dir, "/") || path.Clean(m.Dir) != m.Dir || m.Dir == "/":
		return fmt.Errorf("mount %q is not a clean absolute directory other than /", m.Dir)
	case m.Dir == "/in" || strings.HasPrefix(m.Dir, "/in/"):
		return fmt.Errorf("mount %q would shadow /in", m.Dir)
	}
	return nil
}

// Run runs module against in under lim and returns how it ended. It never
// returns an error: a module that cannot run is an outcome of kind
// invalid_checker, and every other end is an outcome too.
//
// # Notes
//
//   - The module is compiled (and metered) once per Sandbox and cached by its
//     SHA-256; each Run gets a fresh instance that shares nothing with others.
//   - A reactor (see RunCold for the form) runs from a snapshot: its
//     _initialize runs once per module, Args and mount directories, and each
//     Run restores the memory and globals it left into a fresh instance,
//     then calls assay_check. The outcome is the one RunCold gives.
//   - A run whose context ends (its Timeout, the caller's cancellation,
//     Close) stops within one FuelSlice of the guest's work, or at once
//     when unmetered, and is a timeout outcome, which decides nothing. Run
//     returns only once the guest has stopped.
func (s *Sandbox) Run(ctx context.Context, module []byte, in Input, lim Limits) Outcome {
	return s.RunSum(ctx, sha256.Sum256(module), module, in, lim)
}

// RunSum is Run for a caller that already knows the module's SHA-256, sum,
// so that a large module is not hashed again on every run. The caller
// vouches that sum is sha256.Sum256(module): the module is cached under
// it, and a wrong sum runs whatever module was cached under it first.
func (s *Sandbox) RunSum(ctx context.Context, sum [32]byte, module []byte, in Input, lim Limits) Outcome {
	return s.runOn(ctx, s.engineFor(lim), sum, module, in, lim, false)
}

// RunCold is Run without snapshots: a reactor is instantiated fresh, its
// _initialize runs in that instance, then its assay_check. For a command it
// is Run. Run gives the same outcome, wall time apart, faster; RunCold is
// the reference that snapshot replays are tested against.
//
// # The reactor form
//
// A reactor exports assay_check, taking nothing and returning an i32
// status (0 is pass, exit code 0; anything else is fail, exit code the
// status), and may export _initialize, taking and returning nothing. It
// must not export _start. Its input is what a command's is (stdin, /in),
// with two differences of timing:
//
//   - _initialize (and a start function, if the module has one) runs with
//     an empty stdin and an empty /in, but with the input's Args and
//     Mounts; assay_check then sees the input. Whatever _initialize writes
//     to stdout and stderr is dropped unless it fails.
//   - _initialize runs under fixed limits, whatever the run's: InitFuel
//     fuel and InitMemoryMiB of memory. If it does not return within them
//     the run ends as it would for a command (trap, fuel_exhausted,
//     memory_exceeded, output_exceeded over DefaultOutputBytes, fail for a
//     non-zero proc_exit; invalid_checker for proc_exit(0), after which
//     assay_check cannot run), with a detail that starts "_initialize:"
//     and what _initialize wrote, the same for every input. If memory is
//     larger after _initialize than the run's limit, the run is
//     memory_exceeded. Fuel used counts assay_check alone.
//
// A mount's content must not change while its Dir is in use: snapshots are
// keyed by the directories, not what is in them.
func (s *Sandbox) RunCold(ctx context.Context, module []byte, in Input, lim Limits) Outcome {
	return s.RunColdSum(ctx, sha256.Sum256(module), module, in, lim)
}

// RunColdSum is RunCold for a caller that knows sum = sha256(module); see
// RunSum.
func (s *Sandbox) RunColdSum(ctx context.Context, sum [32]byte, module []byte, in Input, lim Limits) Outcome {
	return s.runOn(ctx, s.engineFor(lim), sum, module, in, lim, true)
}

// engineFor picks the engine for a run's limits.
func (s *Sandbox) engineFor(lim Limits) *engine {
	if lim.Fuel > 0 {
		return s.metered
	}
	return s.unmetered
}

// runOn runs module on engine e; Run picks the engine from the limits. cold
// turns snapshots off.
func (s *Sandbox) runOn(ctx context.Context, e *engine, sum [32]byte, module []byte, in Input, lim Limits, cold bool) Outcome {
	start := time.Now()
	lim = lim.withDefaults()
	out := Outcome{
		ExitCode:      -1,
		FuelLimit:     lim.Fuel,
		CheckerSHA256: hex.EncodeToString(sum[:]),
		InputSHA256:   hexSum(in.Artifact),
		StdoutSHA256:  emptySum,
		StderrSHA256:  emptySum,
	}
	if lim.Fuel > MaxFuel {
		return out.end(KindInvalidChecker, fmt.Sprintf("fuel limit %d is over the most a run may have, %d", lim.Fuel, MaxFuel), start)
	}
	for _, m := range in.Mounts {
		if err := m.check(); err != nil {
			return out.end(KindInvalidChecker, "invalid input: "+err.Error(), start)
		}
	}
	c, err := e.compile(ctx, sum, module)
	if err != nil {
		return out.end(KindTimeout, "the run ended waiting to compile its checker; it decides nothing", start)
	}
	if c.err != nil {
		return out.end(KindInvalidChecker, "invalid checker: "+c.err.Error(), start)
	}
	if c.minPages > lim.memoryPages() {
		return out.end(KindMemoryExceeded, fmt.Sprintf("module needs %s of memory at start, over the limit of %d MiB",
			pagesString(c.minPages), lim.MemoryMiB), start)
	}

	// A reactor's snapshot is taken once per key, like compilation, and
	// before the backstop starts: InitFuel bounds it, and Close stops it.
	var snap *snapEntry
	if c.reactor && !cold && c.noSnapshot == "" {
		if !s.enter() {
			return out.end(KindTimeout, "the sandbox was closed before the run started; it decides nothing", start)
		}
		snap = s.snaps.get(snapKey(sum, in), func(ent *snapEntry) { s.takeSnapshot(ent, sum, module, in) })
		s.inflight.Done()
	}

	parent := ctx
	ctx, stop := s.stoppable(ctx)
	defer stop()
	if !s.enter() {
		return out.end(KindTimeout, "the sandbox was closed before the run started; it decides nothing", start)
	}
	defer s.inflight.Done()
	// A run holds its memory limit, or a reactor that runs _initialize
	// the larger InitMemoryMiB, and its tables' bound, until it ends.
	mib := lim.MemoryMiB
	if c.reactor && (snap == nil || snap.state == nil) {
		mib = max(mib, InitMemoryMiB)
	}
	release, err := s.mem.admit(ctx, runBytes(mib))
	switch {
	case errors.Is(err, errOverBudget):
		return out.end(KindInvalidChecker, fmt.Sprintf("memory limit of %d MiB is over what this server lets runs hold at once, %d MiB",
			mib, s.mem.total>>20), start)
	case err != nil:
		return out.end(KindTimeout, "waiting for memory: "+stopDetail(ctx, parent, lim), start)
	}
	defer release()
	select {
	case s.guests <- struct{}{}:
		defer func() { <-s.guests }()
	case <-ctx.Done():
		return out.end(KindTimeout, "waiting for a core: "+stopDetail(ctx, parent, lim), start)
	}
	// The backstop starts once the run may run: waiting for memory or a
	// core, on the caller's context and Close, does not use it up.
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	if ctx.Err() != nil {
		return out.end(KindTimeout, stopDetail(ctx, parent, lim), start)
	}
	r := newRun(c, in, lim)
	defer func() {
		if r.memory.size() >= freeAfterBytes {
			s.free.request()
		}
	}()
	r.parent = parent
	// The guest runs on this goroutine, to its end: a done context stops
	// a metered guest at its next fuel slice and an unmetered one at its
	// next loop header or call, so Run never leaves a guest running.
	ctx = context.WithValue(ctx, runKey{}, r)
	switch {
	case !c.reactor:
		r.exec(ctx, e.rt)
	case snap == nil:
		r.execCold(ctx, e.rt)
	default:
		r.execSnapshot(ctx, e, snap)
	}
	return r.outcome(out, ctx, parent, start)
}

// stopDetail says why a run whose context is done ended: the sandbox
// closed, its caller cancelled it (parent is the caller's context), or
// the backstop fired.
func stopDetail(ctx, parent context.Context, lim Limits) string {
	switch {
	case context.Cause(ctx) == errClosed:
		return "the sandbox was closed during the run; it decides nothing"
	case parent.Err() != nil:
		return "the run was cancelled by its caller"
	}
	return fmt.Sprintf("the wall-clock backstop of %s fired; a timeout is not reproducible and decides nothing", lim.Timeout)
}

// enter counts a guest about to run, for Close to wait for; false when
// the sandbox is closed.
func (s *Sandbox) enter() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// run is the state of one guest execution.
type run struct {
	c      *compiled
	parent context.Context // the caller's context, to tell a cancellation from the backstop
	lim    Limits
	in     Input
	meter  fuelMeter
	memory limitedMemory
	stdout *capWriter
	stderr *capWriter
	clock  fakeClock
	rand   *fakeRand
	open   atomic.Int64 // files of /in and the mounts the guest has open

	err      error  // from instantiation or the guest call
	fuelUsed uint64 // after the run, metered runs only; over the limit is exhaustion
	tooDeep  bool   // the meter's call-depth limit ended the run

	// Reactors only.
	io        *switches    // the input and output _initialize sees, then assay_check
	initFail  *initFailure // _initialize did not return; the run ends so
	initPages uint32       // memory after _initialize, in pages
	status    int32        // what assay_check returned, when err is nil
}

func newRun(c *compiled, in Input, lim Limits) *run {
	r := &run{c: c, lim: lim, in: in, rand: newFakeRand()}
	r.memory.limit = uint64(lim.memoryPages()) * pageSize
	r.stdout = newCapWriter(lim.StdoutBytes, &r.meter)
	r.stderr = newCapWriter(lim.StderrBytes, &r.meter)
	return r
}

// config is the module configuration of a run. The guest sees argv
// ["checker"] (or the input's Args), no environment, the input on stdin and
// at /in (read-only), the input's Mounts (read-only), a fake clock that
// starts at a fixed instant (fakeClock), sleeps that return at once, and
// math/rand seeded 42 as its random source. With r.io set, stdin, /in,
// stdout and stderr go through it, so that they can be switched between
// _initialize and assay_check.
func (r *run) config() wazero.ModuleConfig {
	args := []string{"checker"}
	if len(r.in.Args) > 0 {
		args = r.in.Args
	}
	var (
		stdin  io.Reader = &meteredReader{r: bytesReader(r.in.Artifact), meter: &r.meter}
		in     fs.FS     = newInputFS(r.in, &r.meter, &r.open)
		stdout io.Writer = r.stdout
		stderr io.Writer = r.stderr
	)
	if r.io != nil {
		r.io.stdin.on, r.io.in.on = stdin, in
		r.io.stdout.to, r.io.stderr.to = r.io.initOut, r.io.initErr
		stdin, in, stdout, stderr = &r.io.stdin, &r.io.in, &r.io.stdout, &r.io.stderr
	}
	fsc := wazero.NewFSConfig().WithFSMount(in, "/in")
	for _, m := range r.in.Mounts {
		fsc = fsc.WithFSMount(&meteredFS{fs: m.FS, meter: &r.meter, open: &r.open}, m.Dir)
	}
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs(args...).
		WithStartFunctions().
		WithStdin(stdin).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(fsc).
		WithWalltime(r.clock.walltime, resolution).
		WithNanotime(r.clock.nanotime, resolution).
		WithNanosleep(r.clock.sleep).
		WithRandSource(&meteredReader{r: r.rand, meter: &r.meter})
}

// exec instantiates a command and runs it to its end.
func (r *run) exec(ctx context.Context, rt wazero.Runtime) {
	ctx = experimental.WithMemoryAllocator(ctx, &r.memory)
	mod, err := rt.InstantiateModule(ctx, r.c.mod, r.config())
	if err != nil {
		r.err = err
		return
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if r.lim.Fuel > 0 {
		g, ok := r.fuel(mod)
		if !ok {
			return
		}
		r.meter.start(ctx, g, r.lim.Fuel)
		defer r.readFuel(mod)
		if r.c.hasStart {
			if _, r.err = mod.ExportedFunction(meter.StartExport).Call(ctx); r.err != nil {
				return
			}
		}
	}
	_, r.err = mod.ExportedFunction("_start").Call(ctx)
}

// fuel returns a metered module's fuel counter and makes host I/O charge
// it; it sets r.err when the module lacks one.
func (r *run) fuel(mod api.Module) (api.MutableGlobal, bool) {
	g, ok := mod.ExportedGlobal(meter.GlobalExport).(api.MutableGlobal)
	if !ok {
		r.err = errors.New("metered module lacks its fuel counter")
		return nil, false
	}
	r.meter.global = g
	return g, true
}

// readFuel records the counters of a metered module after its guest call.
func (r *run) readFuel(mod api.Module) {
	r.fuelUsed = r.meter.used()
	depth := mod.ExportedGlobal(meter.DepthExport)
	r.tooDeep = depth != nil && int32(depth.Get()) == meter.DepthExceeded
}

// outcome classifies how the run ended.
func (r *run) outcome(out Outcome, ctx, parent context.Context, start time.Time) Outcome {
	if r.initFail != nil {
		return r.initFail.outcome(out, start)
	}
	out.Stdout, out.Stderr = string(r.stdout.kept), string(r.stderr.kept)
	out.StdoutSHA256, out.StderrSHA256 = r.stdout.hex(), r.stderr.hex()
	out.MemoryPages = r.memory.pages()
	exhausted := false
	if r.lim.Fuel > 0 {
		if r.fuelUsed > r.lim.Fuel {
			exhausted = true
			out.FuelUsed = r.lim.Fuel
		} else {
			out.FuelUsed = r.fuelUsed
		}
	}

	// A negative counter at the end is exhaustion, however the guest
	// ended: the meter tests the counter only at function entries and loop
	// headers, so a run may overdraw it by a few instructions and finish.
	var exitErr *sys.ExitError
	switch {
	case errors.Is(r.err, errOutputExceeded):
		which, limit := "stdout", r.lim.StdoutBytes
		if r.stderr.exceeded {
			which, limit = "stderr", r.lim.StderrBytes
		}
		return out.end(KindOutputExceeded, fmt.Sprintf("wrote more than the %s cap of %d bytes", which, limit), start)
	case exhausted || errors.Is(r.err, errFuelExhausted):
		out.FuelUsed = r.lim.Fuel
		return out.end(KindFuelExhausted, fmt.Sprintf("ran out of fuel (limit %d)", r.lim.Fuel), start)
	case r.err == nil && r.c.reactor:
		out.ExitCode = int(r.status)
		detail := fmt.Sprintf("assay_check returned %d", r.status)
		switch {
		case r.status == 0:
			return out.end(KindPass, detail, start)
		case r.memory.reachedLimit():
			return out.end(KindMemoryExceeded, r.memoryDetail(detail), start)
		}
		return out.end(KindFail, detail, start)
	case r.err == nil:
		out.ExitCode = 0
		return out.end(KindPass, "exited 0", start)
	case errors.Is(r.err, errStopped) || errors.As(r.err, &exitErr) && stopped(exitErr, ctx):
		// The run's context ended it: at a fuel slice when metered, at
		// wazero's own checks when not (WithCloseOnContextDone).
		return out.end(KindTimeout, stopDetail(ctx, parent, r.lim), start)
	case errors.As(r.err, &exitErr) && r.c.reactor:
		// A reactor passes only by returning 0 from assay_check: an exit
		// before it returns, even proc_exit(0), is a fail (a front-end
		// such as Python runs code that may call it on the checker's
		// behalf).
		out.ExitCode = int(exitErr.ExitCode())
		detail := fmt.Sprintf("called proc_exit(%d) before assay_check returned", exitErr.ExitCode())
		if r.memory.reachedLimit() {
			return out.end(KindMemoryExceeded, r.memoryDetail(detail), start)
		}
		return out.end(KindFail, detail, start)
	case errors.As(r.err, &exitErr):
		// The status is the guest's whole u32: only exactly 0 passes.
		out.ExitCode = int(exitErr.ExitCode())
		if exitErr.ExitCode() == 0 {
			return out.end(KindPass, "exited 0", start)
		}
		if r.memory.reachedLimit() {
			return out.end(KindMemoryExceeded, r.memoryDetail(fmt.Sprintf("exited %d", out.ExitCode)), start)
		}
		return out.end(KindFail, fmt.Sprintf("exited %d", out.ExitCode), start)
	default:
		msg := trapMessage(r.err)
		if r.tooDeep {
			// The meter's limit, the same on every engine and machine,
			// not the engine's own stack size.
			msg = fmt.Sprintf("call stack exhausted (calls nested deeper than %d)", meter.MaxDepth)
		}
		if r.memory.reachedLimit() {
			return out.end(KindMemoryExceeded, r.memoryDetail(msg), start)
		}
		return out.end(KindTrap, msg, start)
	}
}

func (r *run) memoryDetail(then string) string {
	return fmt.Sprintf("reached the memory limit of %d MiB, then %s", r.lim.MemoryMiB, then)
}

// stopped reports whether wazero ended the guest because ctx ended.
func stopped(e *sys.ExitError, ctx context.Context) bool {
	code := e.ExitCode()
	return ctx.Err() != nil && (code == sys.ExitCodeDeadlineExceeded || code == sys.ExitCodeContextCanceled)
}

// end sets the kind and detail and stamps the wall time.
func (o Outcome) end(kind Kind, detail string, start time.Time) Outcome {
	o.Kind = kind
	o.Pass = kind == KindPass
	o.Detail = detail
	o.WallNS = time.Since(start).Nanoseconds()
	return o
}

// trapMessage keeps the first line of a wazero trap ("wasm error: integer
// divide by zero" becomes "integer divide by zero"), dropping the stack
// trace that follows; the kind already says it was a trap.
func trapMessage(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimPrefix(msg, "wasm error: ")
}

func pagesString(pages uint32) string {
	return fmt.Sprintf("%d pages (%d MiB)", pages, uint64(pages)*pageSize>>20)
}
