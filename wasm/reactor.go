package wasm

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// InitFuel is the fuel a reactor's _initialize runs on (with the module's
// start function, if it has one), whatever the run's limits: start-up is
// the checker's, the same for every input, so its bound is too. Unmetered
// runs (Limits.Fuel 0) from a snapshot restore one taken under it; cold
// unmetered runs bound _initialize by the wall clock alone. It is twice
// DefaultFuel, almost four times what CPython's start takes (5.4*10^8).
const InitFuel = 2 * DefaultFuel

// InitMemoryMiB is the memory a reactor's _initialize may grow to,
// whatever the run's limits, for the same reason; a snapshot holds what it
// leaves. CPython's start leaves about 10 MiB, Go's runtime about 4.
const InitMemoryMiB = 256

// defaultCopyMax is the largest snapshot image a replay copies rather
// than maps copy-on-write (see newImage); chosen from BenchmarkReplay.
const defaultCopyMax = 8 << 20

// imagePool is how many spare buffers an image keeps for copies.
const imagePool = 4

// initOutputBytes caps what _initialize may write to each stream.
const initOutputBytes = DefaultOutputBytes

var emptySum = hexSum(nil)

// switches route a reactor's input and output: while _initialize runs,
// stdin and /in are empty and output goes to initOut and initErr; then
// on() switches to the run's input and output for assay_check.
type switches struct {
	stdin            switchReader
	in               switchFS
	stdout, stderr   switchWriter
	initOut, initErr *capWriter
}

func (s *switches) switchOn(r *run) {
	s.stdin.live, s.in.live = true, true
	s.stdout.to, s.stderr.to = r.stdout, r.stderr
}

type switchReader struct {
	on   io.Reader
	live bool
}

func (s *switchReader) Read(p []byte) (int, error) {
	if !s.live {
		return 0, io.EOF
	}
	return s.on.Read(p)
}

// switchFS is /in: off, an empty directory (whose opens are counted like
// any other, see meteredFS); on, the input.
type switchFS struct {
	on, off fs.FS
	live    bool
}

func (s *switchFS) Open(name string) (fs.File, error) {
	if !s.live {
		return s.off.Open(name)
	}
	return s.on.Open(name)
}

type switchWriter struct{ to io.Writer }

func (w *switchWriter) Write(p []byte) (int, error) { return w.to.Write(p) }

// initFailure is how a run ends when a reactor's _initialize did not
// return within its limits, or left more memory than the run's limit.
type initFailure struct {
	kind                 Kind
	exit                 int
	detail               string
	stdout, stderr       string
	stdoutSum, stderrSum string
	pages                uint32
}

func (f *initFailure) outcome(out Outcome, start time.Time) Outcome {
	out.ExitCode = f.exit
	out.MemoryPages = f.pages
	out.Stdout, out.Stderr = f.stdout, f.stderr
	out.StdoutSHA256, out.StderrSHA256 = f.stdoutSum, f.stderrSum
	return out.end(f.kind, f.detail, start)
}

// startReactor instantiates a reactor with its input and output switched
// off and runs its start function and _initialize under InitFuel and
// InitMemoryMiB. It returns the instance, or nil with r.initFail set.
func (r *run) startReactor(ctx context.Context, rt wazero.Runtime) api.Module {
	r.io = &switches{
		initOut: newCapWriter(initOutputBytes, &r.meter),
		initErr: newCapWriter(initOutputBytes, &r.meter),
	}
	r.io.in.off = &meteredFS{fs: MemDir{}, meter: &r.meter, open: &r.open}
	limit := r.memory.limit
	r.memory.limit = uint64(InitMemoryMiB) * pagesPerMiB * pageSize
	ctx = experimental.WithMemoryAllocator(ctx, &r.memory)
	metered := r.lim.Fuel > 0
	mod, err := rt.InstantiateModule(ctx, r.c.mod, r.config())
	if err != nil {
		r.initFail = r.classifyInit(ctx, err, false, false)
		return nil
	}
	var g api.MutableGlobal
	if metered {
		var ok bool
		if g, ok = r.fuel(mod); !ok {
			mod.Close(context.WithoutCancel(ctx))
			r.initFail = &initFailure{kind: KindInvalidChecker, exit: -1, detail: r.err.Error(), stdoutSum: emptySum, stderrSum: emptySum}
			return nil
		}
		r.meter.start(ctx, g, InitFuel)
	}
	// What instantiation does for a command (data segments, then the
	// start function), then _initialize.
	for _, step := range []struct {
		name string
		has  bool
	}{{meter.DataExport, r.c.hasData}, {meter.StartFuncExport, r.c.hasStartFn}, {meter.InitExport, r.c.hasInit}} {
		if step.has && err == nil {
			_, err = mod.ExportedFunction(step.name).Call(ctx)
		}
	}
	var exhausted, tooDeep bool
	if metered {
		exhausted = r.meter.used() > InitFuel
		depth := mod.ExportedGlobal(meter.DepthExport)
		tooDeep = depth != nil && int32(depth.Get()) == meter.DepthExceeded
	}
	if f := r.classifyInit(ctx, err, exhausted, tooDeep); f != nil {
		mod.Close(context.WithoutCancel(ctx))
		r.initFail = f
		return nil
	}
	r.initPages = r.memory.pages()
	r.memory.limit, r.memory.refused = limit, false
	return mod
}

// classifyInit says how _initialize ended: nil if it returned, within its
// limits.
func (r *run) classifyInit(ctx context.Context, err error, exhausted, tooDeep bool) *initFailure {
	metered := r.lim.Fuel > 0
	f := &initFailure{exit: -1}
	var exitErr *sys.ExitError
	switch {
	case errors.Is(err, errOutputExceeded):
		which := "stdout"
		if r.io.initErr.exceeded {
			which = "stderr"
		}
		f.kind, f.detail = KindOutputExceeded, fmt.Sprintf("_initialize: wrote more than the %s cap of %d bytes", which, initOutputBytes)
	case metered && (exhausted || errors.Is(err, errFuelExhausted)):
		f.kind, f.detail = KindFuelExhausted, fmt.Sprintf("_initialize: ran out of fuel (%d, the fixed budget of every reactor's start-up)", InitFuel)
	case err == nil:
		return nil
	case errors.Is(err, errStopped) || errors.As(err, &exitErr) && stopped(exitErr, ctx):
		f.kind, f.detail = KindTimeout, "_initialize: "+stopDetail(ctx, r.parent, r.lim)
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 0:
		f.kind, f.detail = KindInvalidChecker, "_initialize: exited 0; a reactor's _initialize must return, for assay_check to run"
	case errors.As(err, &exitErr):
		f.exit = int(exitErr.ExitCode())
		f.kind, f.detail = KindFail, fmt.Sprintf("_initialize: exited %d", f.exit)
		if r.memory.reachedLimit() {
			f.kind = KindMemoryExceeded
			f.detail = fmt.Sprintf("_initialize: reached the memory limit of %d MiB, then exited %d", InitMemoryMiB, f.exit)
		}
	default:
		msg := trapMessage(err)
		if tooDeep {
			msg = fmt.Sprintf("call stack exhausted (calls nested deeper than %d)", meter.MaxDepth)
		}
		f.kind, f.detail = KindTrap, "_initialize: "+msg
		if r.memory.reachedLimit() {
			f.kind = KindMemoryExceeded
			f.detail = fmt.Sprintf("_initialize: reached the memory limit of %d MiB, then %s", InitMemoryMiB, msg)
		}
	}
	f.pages = r.memory.pages()
	f.stdout, f.stderr = string(r.io.initOut.kept), string(r.io.initErr.kept)
	f.stdoutSum, f.stderrSum = r.io.initOut.hex(), r.io.initErr.hex()
	return f
}

// overLimitAfterInit ends the run as memory_exceeded when _initialize
// left more memory than the run may have.
func (r *run) overLimitAfterInit() bool {
	if r.initPages <= r.lim.memoryPages() {
		return false
	}
	r.initFail = &initFailure{
		kind:      KindMemoryExceeded,
		exit:      -1,
		detail:    fmt.Sprintf("memory after _initialize is %s, over the limit of %d MiB", pagesString(r.initPages), r.lim.MemoryMiB),
		stdoutSum: emptySum,
		stderrSum: emptySum,
		pages:     r.initPages,
	}
	return true
}

// execCold runs a reactor from a fresh instance: _initialize, then
// assay_check.
func (r *run) execCold(ctx context.Context, rt wazero.Runtime) {
	mod := r.startReactor(ctx, rt)
	if mod == nil {
		return
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if r.overLimitAfterInit() {
		return
	}
	r.io.switchOn(r)
	r.check(ctx, mod)
}

// check calls assay_check under the run's fuel.
func (r *run) check(ctx context.Context, mod api.Module) {
	if r.lim.Fuel > 0 {
		g, ok := r.fuel(mod)
		if !ok {
			return
		}
		r.meter.start(ctx, g, r.lim.Fuel)
		defer r.readFuel(mod)
	}
	res, err := mod.ExportedFunction(meter.CheckExport).Call(ctx)
	if r.err = err; err == nil {
		r.status = int32(uint32(res[0]))
	}
}

// snapState is a reactor's state after _initialize: everything a fresh
// instance of its restorable form needs to continue as the initialised one
// would.
type snapState struct {
	image   *memImage
	pages   uint32
	globals []uint64 // in the order of compiled.globals
	clock   int64    // fakeClock.elapsed
	randN   int64    // bytes read from the random source
}

// execSnapshot runs a reactor from its snapshot entry: a fresh instance
// with the snapshot's state, or how _initialize failed, or, when the
// module's state could not be captured, a cold run.
func (r *run) execSnapshot(ctx context.Context, e *engine, ent *snapEntry) {
	if ent.fail != nil {
		r.initFail = ent.fail
		return
	}
	st := ent.state
	if st == nil {
		r.execCold(ctx, e.rt)
		return
	}
	r.initPages = st.pages
	if r.overLimitAfterInit() {
		return
	}
	r.memory.image = st.image
	r.clock.elapsed = st.clock
	r.rand.skip(st.randN)
	ctx = experimental.WithMemoryAllocator(ctx, &r.memory)
	mod, err := e.rt.InstantiateModule(ctx, r.c.mod, r.config())
	if err != nil {
		r.err = err
		return
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if r.err = r.restore(mod, st); r.err != nil {
		return
	}
	r.check(ctx, mod)
}

// restore writes a snapshot's state into a fresh instance, whose memory is
// already the image (limitedMemory).
func (r *run) restore(mod api.Module, st *snapState) error {
	mem := mod.Memory()
	if cur := mem.Size() / pageSize; cur < st.pages {
		if _, ok := mem.Grow(st.pages - cur); !ok {
			return fmt.Errorf("wasm: cannot restore a snapshot of %s", pagesString(st.pages))
		}
	}
	for i, name := range r.c.globals {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("wasm: restorable module lacks global %s", name)
		}
		g.Set(st.globals[i])
	}
	return nil
}

// takeSnapshot runs _initialize in a fresh instance on the metered engine,
// under InitFuel, and keeps its state in ent; or how it failed; or, when
// the state cannot be carried to another instance, nothing, so that runs
// go cold.
func (s *Sandbox) takeSnapshot(ent *snapEntry, sum [32]byte, module []byte, in Input) {
	ctx := s.closing
	c, err := s.metered.compile(ctx, sum, module)
	if err != nil || c.err != nil || !c.reactor || c.noSnapshot != "" {
		return
	}
	release, err := s.mem.admit(ctx, runBytes(InitMemoryMiB))
	if err != nil {
		return // closing, or a budget too small for any start-up: runs go cold
	}
	defer release()
	lim := Limits{Fuel: InitFuel, MemoryMiB: InitMemoryMiB}.withDefaults()
	r := newRun(c, Input{Args: in.Args, Mounts: in.Mounts}, lim)
	r.parent = ctx
	ctx = context.WithValue(ctx, runKey{}, r)
	mod := r.startReactor(ctx, s.metered.rt)
	if mod == nil {
		ent.fail = r.initFail
		return
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if r.open.Load() != 0 {
		return // a file _initialize left open would be missing from a replay
	}
	st := &snapState{pages: r.initPages, clock: r.clock.elapsed, randN: r.rand.n}
	for _, name := range c.globals {
		g := mod.ExportedGlobal(name)
		if g == nil {
			return
		}
		st.globals = append(st.globals, g.Get())
	}
	mem := r.memory.buf[:uint64(st.pages)*pageSize]
	st.image = newImage(mem, s.copyMax, !s.noAdapt)
	ent.state = st
}

// snapKey is what a snapshot depends on besides the engine family: the
// module, argv and the mount directories, in order.
func snapKey(sum [32]byte, in Input) string {
	dirs := make([]string, len(in.Mounts))
	for i, m := range in.Mounts {
		dirs[i] = m.Dir
	}
	return fmt.Sprintf("%x %q %q", sum, in.Args, dirs)
}

// snapEntry is one cached snapshot, or why there is none.
type snapEntry struct {
	key  string
	once sync.Once

	state *snapState   // the snapshot
	fail  *initFailure // _initialize failed: every run ends so
	// Neither: the module cannot be snapshotted; runs go cold.

	elem *list.Element // in snapCache.lru, while cached
	size int64
	done bool
}

// snapCache is a bounded LRU cache of snapshots. Concurrent first runs of
// one key take one snapshot.
type snapCache struct {
	mu         sync.Mutex
	entries    map[string]*snapEntry
	lru        list.List // front: most recently used
	bytes      int64
	maxEntries int
	maxBytes   int64
	taken      atomic.Int64 // snapshots attempted, for tests
}

func newSnapCache(entries int, bytes int64) *snapCache {
	if entries <= 0 {
		entries = DefaultSnapshotEntries
	}
	if bytes <= 0 {
		bytes = DefaultSnapshotBytes
	}
	return &snapCache{entries: map[string]*snapEntry{}, maxEntries: entries, maxBytes: bytes}
}

// get returns the entry for key, made by take on first use.
func (c *snapCache) get(key string, take func(*snapEntry)) *snapEntry {
	c.mu.Lock()
	ent, ok := c.entries[key]
	if ok {
		c.lru.MoveToFront(ent.elem)
	} else {
		ent = &snapEntry{key: key}
		ent.elem = c.lru.PushFront(ent)
		c.entries[key] = ent
	}
	c.mu.Unlock()
	ent.once.Do(func() {
		c.taken.Add(1)
		take(ent)
		c.mu.Lock()
		defer c.mu.Unlock()
		ent.done = true
		if ent.state != nil && ent.state.image != nil {
			ent.size = ent.state.image.held()
		}
		if ent.elem != nil {
			c.bytes += ent.size
		}
		c.evict()
	})
	return ent
}

// evict drops least recently used, finished entries until the cache is
// within its bounds. Runs that hold an entry keep using it.
func (c *snapCache) evict() {
	for e := c.lru.Back(); e != nil && (c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes); {
		prev := e.Prev()
		ent := e.Value.(*snapEntry)
		if ent.done && c.lru.Len() > 1 {
			c.lru.Remove(e)
			ent.elem = nil
			delete(c.entries, ent.key)
			c.bytes -= ent.size
		}
		e = prev
	}
}

// len reports how many snapshots are cached, for tests.
func (c *snapCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
