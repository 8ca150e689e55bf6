package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
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
//   - When the wall-clock backstop fires on a metered run, Run returns a
//     timeout outcome at once, and the guest runs on in the background until
//     its fuel is spent: compiled code cannot be stopped cheaply, and fuel
//     bounds it. Close waits for such guests.
func (s *Sandbox) Run(ctx context.Context, module []byte, in Input, lim Limits) Outcome {
	e := s.unmetered
	if lim.Fuel > 0 {
		e = s.metered
	}
	return s.runOn(ctx, e, module, in, lim)
}

// runOn runs module on engine e; Run picks the engine from the limits.
func (s *Sandbox) runOn(ctx context.Context, e *engine, module []byte, in Input, lim Limits) Outcome {
	start := time.Now()
	lim = lim.withDefaults()
	sum := sha256.Sum256(module)
	out := Outcome{
		ExitCode:      -1,
		FuelLimit:     lim.Fuel,
		CheckerSHA256: hex.EncodeToString(sum[:]),
		InputSHA256:   hexSum(in.Artifact),
		StdoutSHA256:  hexSum(nil),
		StderrSHA256:  hexSum(nil),
	}
	if lim.Fuel > MaxFuel {
		return out.end(KindInvalidChecker, fmt.Sprintf("fuel limit %d is over the most a run may have, %d", lim.Fuel, MaxFuel), start)
	}
	for _, m := range in.Mounts {
		if err := m.check(); err != nil {
			return out.end(KindInvalidChecker, "invalid input: "+err.Error(), start)
		}
	}
	c := e.compile(context.WithoutCancel(ctx), sum, module)
	if c.err != nil {
		return out.end(KindInvalidChecker, "invalid checker: "+c.err.Error(), start)
	}
	if c.minPages > lim.memoryPages() {
		return out.end(KindMemoryExceeded, fmt.Sprintf("module needs %s of memory at start, over the limit of %d MiB",
			pagesString(c.minPages), lim.MemoryMiB), start)
	}

	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	r := newRun(c, in, lim)
	done := make(chan struct{})
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return out.end(KindTimeout, "the sandbox was closed before the run started; it decides nothing", start)
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	go func() {
		defer s.inflight.Done()
		defer close(done)
		r.exec(ctx, e.rt)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		out.Kind = KindTimeout
		detail := fmt.Sprintf("the wall-clock backstop of %s fired; a timeout is not reproducible and decides nothing", lim.Timeout)
		if ctx.Err() == context.Canceled {
			detail = "the run was cancelled by its caller"
		}
		return out.end(KindTimeout, detail, start)
	}
	return r.outcome(out, ctx, start)
}

// run is the state of one guest execution.
type run struct {
	c      *compiled
	lim    Limits
	in     Input
	meter  fuelMeter
	memory limitedMemory
	stdout *capWriter
	stderr *capWriter
	clock  fakeClock

	err      error // from instantiation or the guest call
	fuelLeft int64 // the counter after the run, metered runs only
	tooDeep  bool  // the meter's call-depth limit ended the run
}

func newRun(c *compiled, in Input, lim Limits) *run {
	r := &run{c: c, lim: lim, in: in}
	r.memory.limit = uint64(lim.memoryPages()) * pageSize
	r.stdout = newCapWriter(lim.StdoutBytes, &r.meter)
	r.stderr = newCapWriter(lim.StderrBytes, &r.meter)
	return r
}

// exec instantiates the module and runs it to its end. The guest sees argv
// ["checker"] (or the input's Args), no environment, the input on stdin and
// at /in (read-only), the input's Mounts (read-only), a fake clock that
// starts at a fixed instant (fakeClock), sleeps that return at once, and
// wazero's deterministic random source.
func (r *run) exec(ctx context.Context, rt wazero.Runtime) {
	args := []string{"checker"}
	if len(r.in.Args) > 0 {
		args = r.in.Args
	}
	fsc := wazero.NewFSConfig().WithFSMount(newInputFS(r.in, &r.meter), "/in")
	for _, m := range r.in.Mounts {
		fsc = fsc.WithFSMount(&meteredFS{fs: m.FS, meter: &r.meter}, m.Dir)
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(args...).
		WithStartFunctions().
		WithStdin(&meteredReader{r: bytesReader(r.in.Artifact), meter: &r.meter}).
		WithStdout(r.stdout).
		WithStderr(r.stderr).
		WithFSConfig(fsc).
		WithWalltime(r.clock.walltime, resolution).
		WithNanotime(r.clock.nanotime, resolution).
		WithNanosleep(r.clock.sleep).
		WithRandSource(&meteredReader{r: fakeRand(), meter: &r.meter})
	ctx = experimental.WithMemoryAllocator(ctx, &r.memory)
	mod, err := rt.InstantiateModule(ctx, r.c.mod, cfg)
	if err != nil {
		r.err = err
		return
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if r.lim.Fuel > 0 {
		g, ok := mod.ExportedGlobal(meter.GlobalExport).(api.MutableGlobal)
		if !ok {
			r.err = errors.New("metered module lacks its fuel counter")
			return
		}
		g.Set(r.lim.Fuel)
		r.meter.global = g
		depth := mod.ExportedGlobal(meter.DepthExport)
		defer func() {
			r.fuelLeft = int64(g.Get())
			r.tooDeep = depth != nil && int32(depth.Get()) == meter.DepthExceeded
		}()
		if r.c.hasStart {
			if _, r.err = mod.ExportedFunction(meter.StartExport).Call(ctx); r.err != nil {
				return
			}
		}
	}
	_, r.err = mod.ExportedFunction("_start").Call(ctx)
}

// outcome classifies how the run ended.
func (r *run) outcome(out Outcome, ctx context.Context, start time.Time) Outcome {
	out.Stdout, out.Stderr = string(r.stdout.kept), string(r.stderr.kept)
	out.StdoutSHA256, out.StderrSHA256 = r.stdout.hex(), r.stderr.hex()
	out.MemoryPages = r.memory.pages()
	exhausted := false
	if r.lim.Fuel > 0 {
		if r.fuelLeft < 0 {
			exhausted = true
			out.FuelUsed = r.lim.Fuel
		} else {
			out.FuelUsed = r.lim.Fuel - uint64(r.fuelLeft)
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
	case r.err == nil:
		out.ExitCode = 0
		return out.end(KindPass, "exited 0", start)
	case errors.As(r.err, &exitErr) && stopped(exitErr, ctx) && r.lim.Fuel == 0:
		// Only an unmetered guest is stopped by the deadline itself
		// (WithCloseOnContextDone); a metered one always runs to an end
		// of its own, which decides whatever the clock says by now.
		detail := fmt.Sprintf("the wall-clock backstop of %s fired; a timeout is not reproducible and decides nothing", r.lim.Timeout)
		if exitErr.ExitCode() == sys.ExitCodeContextCanceled {
			detail = "the run was cancelled by its caller"
		}
		return out.end(KindTimeout, detail, start)
	case errors.As(r.err, &exitErr):
		out.ExitCode = int(exitErr.ExitCode())
		if out.ExitCode == 0 {
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
