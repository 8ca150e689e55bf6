package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// Config configures a Sandbox.
type Config struct {
	// CacheDir keeps compiled code and metered modules across processes, so
	// that a checker is instrumented and compiled once per machine. Empty
	// means an in-memory cache only.
	CacheDir string
	// Interpreter runs guests on wazero's interpreter instead of its
	// compiler, for differential tests; the compiler is much faster.
	// Outcomes are the same either way, byte for byte, for guests whose
	// wasm calls nest less than 2,000 deep (tests check it). There they
	// differ: the interpreter traps ("stack overflow") at a call that
	// finds 2,000 frames on its stack, a limit wazero fixes in a variable
	// of its own, not configurable (each frame also costs Go stack there);
	// the compiler goes on to the meter's limit, meter.MaxDepth (65,536
	// nested calls), and traps there "call stack exhausted", with
	// different fuel used. Guests whose own stack lives in linear memory
	// (Go's) never come near either; deep recursion in C or in CPython
	// (each Python call nests several C calls) can pass 2,000.
	Interpreter bool
	// SnapshotEntries and SnapshotBytes bound the cache of reactor
	// snapshots (least recently used first out): how many, and how many
	// bytes of memory images. 0 means DefaultSnapshotEntries and
	// DefaultSnapshotBytes.
	SnapshotEntries int
	SnapshotBytes   int64
	// MemoryBudgetMiB bounds the memory runs may hold at once: a run is
	// admitted only while the memory limits of the runs admitted, its own
	// included, fit in what the snapshot cache leaves of it; it waits
	// otherwise, and a run that could never fit is refused. 0 means half
	// of the machine's memory. See the package documentation for the
	// process's whole bound.
	MemoryBudgetMiB int
	// Guests bounds how many guests run at once, whoever runs them, and
	// how many compilations: a run past it waits for a slot (on its
	// caller's context, not its backstop). 0 means GOMAXPROCS when the
	// Sandbox is made. A server that makes GOMAXPROCS one more than
	// Guests (assay serve does) always has a core's worth of scheduling
	// left for its requests and the garbage collector, whatever the
	// guests do.
	Guests int
}

// freeInterval is the least time between two returns of memory to the
// operating system after large runs.
const freeInterval = 10 * time.Second

// Defaults for the snapshot cache.
const (
	DefaultSnapshotEntries       = 256
	DefaultSnapshotBytes   int64 = 2 << 30
)

// Sandbox runs checker modules, each in a fresh, isolated instance. It is
// safe for concurrent use.
//
// A Sandbox keeps two wazero runtimes over one compilation cache: metered
// runs (fuel > 0) on one compiled without context-done checks, since fuel
// bounds them and their fuel slices (meter.SliceFunc) check the context;
// unmetered runs on one with WithCloseOnContextDone, since only the wall
// clock bounds them there.
type Sandbox struct {
	cfg   Config
	cache wazero.CompilationCache

	metered   *engine
	unmetered *engine
	snaps     *snapCache
	mem       *memBudget    // what runs may hold: the budget less the snapshot cache's bound
	compiles  chan struct{} // a slot per compilation running
	guests    chan struct{} // a slot per guest running (Config.Guests)
	free      freeOS
	// copyMax is the largest snapshot image replays copy rather than map
	// copy-on-write, and noAdapt keeps larger ones mapped whatever their
	// replays touch (see newImage); benchmarks change them to compare.
	copyMax int
	noAdapt bool

	// closing is cancelled, with cause errClosed, when Close begins: it
	// stops every running guest (see stoppable). inflight counts guests
	// still running: Close waits for them before freeing code. closed,
	// under mu, keeps new runs from starting once Close has begun.
	closing  context.Context
	shut     context.CancelCauseFunc
	inflight sync.WaitGroup
	mu       sync.RWMutex
	closed   bool
}

// engine is one wazero runtime with WASI instantiated and its modules.
type engine struct {
	rt       wazero.Runtime
	metered  bool
	sb       *Sandbox // whose compilation slots and in-flight count it shares
	wasiFns  map[string]api.FunctionDefinition
	cacheDir string

	mu      sync.Mutex
	modules map[[32]byte]*compiled
}

// compiled is one checker compiled for one engine. once guards compilation
// so that concurrent first runs of a checker compile it once.
type compiled struct {
	once     sync.Once
	ready    atomic.Bool // once has run
	mod      wazero.CompiledModule
	minPages uint32
	hasStart bool // a start section, exported by the meter as meter.StartExport
	err      error

	// Reactors only (see reactor.go): mod is then compiled from the
	// module's restorable form (meter.PrepareReactor).
	reactor    bool
	hasInit    bool     // exports _initialize
	hasData    bool     // exports meter.DataExport
	hasStartFn bool     // exports meter.StartFuncExport
	globals    []string // export names of the mutable globals
	noSnapshot string   // why a snapshot cannot hold its state, if it cannot
}

// NewSandbox returns a Sandbox ready to run checkers.
func NewSandbox(ctx context.Context, cfg Config) (*Sandbox, error) {
	var (
		cache wazero.CompilationCache
		err   error
	)
	if cfg.CacheDir != "" {
		if cache, err = wazero.NewCompilationCacheWithDir(filepath.Join(cfg.CacheDir, "compiled")); err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	budget := budgetBytes(cfg.MemoryBudgetMiB)
	snapBytes := cfg.SnapshotBytes
	if snapBytes <= 0 {
		snapBytes = DefaultSnapshotBytes
	}
	// The snapshot cache takes at most a quarter of the budget; runs get
	// the rest.
	snapBytes = min(snapBytes, budget/4)
	slots := cfg.Guests
	if slots <= 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	s := &Sandbox{
		cfg:      cfg,
		cache:    cache,
		snaps:    newSnapCache(cfg.SnapshotEntries, snapBytes),
		mem:      newMemBudget(budget - snapBytes),
		compiles: make(chan struct{}, slots),
		guests:   make(chan struct{}, slots),
		copyMax:  defaultCopyMax,
		free:     freeOS{interval: freeInterval},
	}
	s.closing, s.shut = context.WithCancelCause(context.WithoutCancel(ctx))
	if s.metered, err = s.newEngine(ctx, true, false); err != nil {
		return nil, err
	}
	if s.unmetered, err = s.newEngine(ctx, false, true); err != nil {
		s.metered.rt.Close(ctx)
		return nil, err
	}
	return s, nil
}

// newEngine returns an engine. closeOnDone turns on wazero's
// WithCloseOnContextDone, which makes compiled code check for cancellation
// at every loop header and function entry: the only way to stop unmetered
// code, and a tax on every loop, so metered engines go without.
func (s *Sandbox) newEngine(ctx context.Context, metered, closeOnDone bool) (*engine, error) {
	var rc wazero.RuntimeConfig
	if s.cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	} else {
		rc = wazero.NewRuntimeConfigCompiler()
	}
	rc = rc.WithCompilationCache(s.cache).
		// All of wasm32's address space: a module that declares more than
		// a run may have is memory_exceeded when it runs, not invalid;
		// each run's allocator (limitedMemory) enforces its own limit.
		WithMemoryLimitPages(wasm32Pages).
		WithCloseOnContextDone(closeOnDone).
		WithCustomSections(false)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate wasi: %w", err)
	}
	wasi := rt.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions()
	if metered {
		if err := instantiateSlices(ctx, rt); err != nil {
			rt.Close(ctx)
			return nil, err
		}
	}
	e := &engine{rt: rt, metered: metered, sb: s, wasiFns: wasi, modules: map[[32]byte]*compiled{}}
	if s.cfg.CacheDir != "" && metered {
		e.cacheDir = filepath.Join(s.cfg.CacheDir, fmt.Sprintf("metered-v%d", meter.Version))
	}
	return e, nil
}

// Close stops every running guest (each ends within one fuel slice, as a
// timeout outcome that decides nothing, a reactor's _initialize too),
// waits for them to stop, bounded by ctx, then frees every compiled
// module. After Close the Sandbox must not be used.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.shut(errClosed)
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// A guest has not reached its next fuel slice yet, or a
		// compilation is under way; freeing the code now would pull it
		// from under them. Leave it to the process's exit.
		return fmt.Errorf("wasm: close: guests still running: %w", ctx.Err())
	}
	err := errors.Join(s.metered.rt.Close(ctx), s.unmetered.rt.Close(ctx))
	return errors.Join(err, s.cache.Close(ctx))
}

// errClosed is the cause of a run's context when Close stopped it.
var errClosed = errors.New("wasm: sandbox closed")

// stoppable returns ctx, also cancelled when Close begins, and the func
// that releases it.
func (s *Sandbox) stoppable(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.closing, func() { cancel(errClosed) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// compile returns the module compiled for this engine, instrumenting it
// first when the engine is metered. Results, errors included, are cached by
// the module's SHA-256: a checker is instrumented and compiled once. At
// most one compilation per core runs at once. When ctx ends first, while
// waiting for a slot or while compiling, compile returns ctx's error at
// once; a compilation under way goes on in the background (wazero cannot
// stop one), holding its slot, and its result is cached. Close waits for
// it.
func (e *engine) compile(ctx context.Context, sum [32]byte, module []byte) (*compiled, error) {
	e.mu.Lock()
	c, ok := e.modules[sum]
	if !ok {
		c = &compiled{}
		e.modules[sum] = c
	}
	e.mu.Unlock()
	if c.ready.Load() {
		return c, nil
	}
	select {
	case e.sb.compiles <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !e.sb.enter() {
		<-e.sb.compiles
		return nil, errClosed
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer e.sb.inflight.Done()
		defer func() { <-e.sb.compiles }()
		c.once.Do(func() {
			c.err = e.doCompile(context.WithoutCancel(ctx), c, sum, module)
			c.ready.Store(true)
		})
	}()
	select {
	case <-done:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *engine) doCompile(ctx context.Context, c *compiled, sum [32]byte, module []byte) error {
	// The upload limits come before anything compiles or decodes the
	// module, on either engine (Instrument and PrepareReactor check them
	// too, first).
	if err := meter.CheckLimits(module); err != nil {
		return err
	}
	bin, form := module, ""
	if meter.IsReactor(module) {
		rc, err := meter.PrepareReactor(module)
		if err != nil {
			return err
		}
		c.globals, c.noSnapshot = rc.Globals, rc.NoSnapshot
		bin, form = rc.Module, reactorForm
	}
	if e.metered {
		var err error
		if bin, err = e.instrument(sum, form, bin); err != nil {
			return err
		}
	}
	mod, err := e.rt.CompileModule(ctx, bin)
	if err != nil {
		return fmt.Errorf("not a valid module: %w", err)
	}
	if err := e.checkABI(mod); err != nil {
		mod.Close(ctx)
		return err
	}
	_, c.reactor = mod.ExportedFunctions()[meter.CheckExport]
	c.mod = mod
	c.minPages = mod.ExportedMemories()["memory"].Min()
	_, c.hasStart = mod.ExportedFunctions()[meter.StartExport]
	fns := mod.ExportedFunctions()
	_, c.hasInit = fns[meter.InitExport]
	_, c.hasData = fns[meter.DataExport]
	_, c.hasStartFn = fns[meter.StartFuncExport]
	return nil
}

// reactorForm names a reactor's restorable form in the cache directory,
// beside a command's metered module.
var reactorForm = fmt.Sprintf(".reactor-r%d", meter.ReactorVersion)

// instrument returns the metered form of module, from the cache directory
// when an earlier process made it. form names which form of the checker
// whose SHA-256 is sum module is: "" for the checker itself.
func (e *engine) instrument(sum [32]byte, form string, module []byte) ([]byte, error) {
	var path string
	if e.cacheDir != "" {
		path = filepath.Join(e.cacheDir, hex.EncodeToString(sum[:])+form+".wasm")
		if bin, err := os.ReadFile(path); err == nil {
			if got := sha256.Sum256(bin); len(bin) > 0 && e.cachedSumOK(path, got) {
				return bin, nil
			}
		}
	}
	bin, err := meter.Instrument(module)
	if err != nil {
		return nil, err
	}
	if path != "" {
		// Best effort: a cache that cannot be written costs time, not
		// correctness.
		_ = writeFileAtomic(path, bin)
		_ = writeFileAtomic(path+".sha256", []byte(hexSum(bin)))
	}
	return bin, nil
}

// cachedSumOK guards against a torn or tampered cache entry: the metered
// module must match the digest written beside it.
func (e *engine) cachedSumOK(path string, got [32]byte) bool {
	want, err := os.ReadFile(path + ".sha256")
	return err == nil && string(want) == hex.EncodeToString(got[:])
}

// checkABI enforces checker ABI v1 on a compiled module: either a command,
// a _start taking and returning nothing, or a reactor, an assay_check taking
// nothing and returning an i32 and maybe an _initialize taking and
// returning nothing; an exported memory; and imports only of WASI preview 1
// functions with their exact signatures.
func (e *engine) checkABI(mod wazero.CompiledModule) error {
	fns := mod.ExportedFunctions()
	start, isCommand := fns["_start"]
	check, isReactor := fns[meter.CheckExport]
	switch {
	case isCommand && isReactor:
		return errors.New("exports both _start and assay_check: a checker is a command or a reactor, not both")
	case isReactor:
		if len(check.ParamTypes()) != 0 || !slices.Equal(check.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
			return errors.New("export assay_check must take nothing and return an i32")
		}
		if init, ok := fns[meter.InitExport]; ok && (len(init.ParamTypes()) != 0 || len(init.ResultTypes()) != 0) {
			return errors.New("export _initialize must take and return nothing")
		}
	case !isCommand:
		return errors.New("missing export _start: a checker is a WASI command (_start) or a reactor (assay_check)")
	case len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0:
		return errors.New("export _start must take and return nothing")
	}
	if _, ok := mod.ExportedMemories()["memory"]; !ok {
		return errors.New("missing export memory")
	}
	if len(mod.ImportedMemories()) > 0 {
		return errors.New("imports a memory: a checker must define its own")
	}
	for _, imp := range mod.ImportedFunctions() {
		modName, name, _ := imp.Import()
		if e.metered && modName == sliceModule && name == sliceFunc &&
			len(imp.ParamTypes()) == 0 && len(imp.ResultTypes()) == 0 {
			continue // the meter's own import (it refuses a module's)
		}
		if modName != wasi_snapshot_preview1.ModuleName {
			return fmt.Errorf("unknown import %s.%s: only %s is provided", modName, name, wasi_snapshot_preview1.ModuleName)
		}
		host, ok := e.wasiFns[name]
		if !ok {
			return fmt.Errorf("unknown import %s.%s", modName, name)
		}
		if !slices.Equal(host.ParamTypes(), imp.ParamTypes()) || !slices.Equal(host.ResultTypes(), imp.ResultTypes()) {
			return fmt.Errorf("import %s.%s has the wrong signature", modName, name)
		}
	}
	return nil
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Validate reports whether module is a checker the sandbox can run: valid
// wasm that the fuel meter can instrument and that meets checker ABI v1, in
// its command form or its reactor form. It compiles the module, so a later
// Run of it starts at once; it does not run a reactor's _initialize.
//
// # Errors
//
// An error saying what is wrong; Run would end such a module as
// invalid_checker with the same reason.
//
// Validate waits for a compilation slot (one per core) and for the
// compilation as long as ctx lasts, and then returns ctx's error (the
// compilation goes on, and its result is cached).
func (s *Sandbox) Validate(ctx context.Context, module []byte) error {
	c, err := s.metered.compile(ctx, sha256.Sum256(module), module)
	if err != nil {
		return err
	}
	return c.err
}

// Stats is what a Sandbox holds and runs at one moment, for an
// operator's metrics.
type Stats struct {
	// SnapshotEntries and SnapshotBytes are the reactor snapshots cached
	// and the bytes of their memory images.
	SnapshotEntries int
	SnapshotBytes   int64
	// Guests and Compiles are the guests and compilations running, of at
	// most Slots each (Config.Guests).
	Guests, Compiles, Slots int
}

// Stats returns what s holds and runs now.
func (s *Sandbox) Stats() Stats {
	s.snaps.mu.Lock()
	st := Stats{SnapshotEntries: len(s.snaps.entries), SnapshotBytes: s.snaps.bytes}
	s.snaps.mu.Unlock()
	st.Guests, st.Compiles, st.Slots = len(s.guests), len(s.compiles), cap(s.guests)
	return st
}
