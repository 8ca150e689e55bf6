// Package checkers knows what a checker is: a reference by content hash and
// limits, where checkers are kept (a content-addressed Source: the
// Registry over the services' store, a Dir, or Modules), and the
// Runner that replays them in the wasm sandbox, wasm modules as they are and
// Python checkers through the interpreter of checkers/python.
package checkers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// Kinds of checker. A wasm checker is a module of checker ABI v1; a python
// checker is Python source, run by the interpreter of checkers/python, which
// is itself such a module.
const (
	KindWasm   = "wasm"
	KindPython = "python"
)

// Ref names one checker in a criteria object by the SHA-256 of its bytes,
// with the limits it runs under. Zero limits take the sandbox's defaults.
// An empty Kind is wasm.
type Ref struct {
	SHA256    string `json:"sha256"`
	Kind      string `json:"kind,omitempty"`
	Fuel      uint64 `json:"fuel,omitempty"`
	MemoryMiB uint32 `json:"memory_mib,omitempty"`
	// ArtifactType is the type of artifact a python checker is given
	// (python.Types); empty is python.DefaultType. Only python checkers
	// have one.
	ArtifactType string `json:"artifact_type,omitempty"`
}

// Validate reports whether r is well formed: a lowercase hex SHA-256, a
// known kind, and limits within the sandbox's range.
func (r Ref) Validate() error {
	if len(r.SHA256) != 64 || strings.ToLower(r.SHA256) != r.SHA256 {
		return fmt.Errorf("checker sha256 %q is not 64 lowercase hex digits", r.SHA256)
	}
	if _, err := hex.DecodeString(r.SHA256); err != nil {
		return fmt.Errorf("checker sha256 %q is not hex", r.SHA256)
	}
	switch r.Kind {
	case "", KindWasm:
		if r.ArtifactType != "" {
			return fmt.Errorf("checker artifact_type %q: only python checkers have one", r.ArtifactType)
		}
	case KindPython:
		if r.ArtifactType != "" && !python.ValidType(r.ArtifactType) {
			return fmt.Errorf("checker artifact_type %q is not one of %s", r.ArtifactType, strings.Join(python.Types, ", "))
		}
	default:
		return fmt.Errorf("checker kind %q is not supported (want %q or %q)", r.Kind, KindWasm, KindPython)
	}
	if r.Fuel > wasm.MaxFuel {
		return fmt.Errorf("checker fuel %d is over the most a checker may have, %d", r.Fuel, wasm.MaxFuel)
	}
	if r.MemoryMiB > wasm.MaxMemoryMiB {
		return fmt.Errorf("checker memory_mib %d is over the most a checker may have, %d", r.MemoryMiB, wasm.MaxMemoryMiB)
	}
	return nil
}

// Limits returns the sandbox limits r asks for.
func (r Ref) Limits() wasm.Limits {
	lim := wasm.DefaultLimits()
	if r.Fuel > 0 {
		lim.Fuel = r.Fuel
	}
	if r.MemoryMiB > 0 {
		lim.MemoryMiB = r.MemoryMiB
	}
	return lim
}

// ErrNotFound is returned by a Source that has no checker with the hash.
var ErrNotFound = errors.New("checkers: no checker with that sha256")

// Source finds checker bytes by their SHA-256 (lowercase hex).
type Source interface {
	// Checker returns the checker's bytes.
	//
	// # Errors
	//
	// ErrNotFound, wrapped, when there is none.
	Checker(sha256 string) ([]byte, error)
}

// Dir is a Source over a directory of checker files, each found by the
// SHA-256 of its contents whatever its name.
type Dir struct {
	path   string
	mu     sync.Mutex
	byHash map[string]string // sha256 -> file path
}

var _ Source = (*Dir)(nil)

// OpenDir indexes the .wasm and .py files of a directory (not its
// subdirectories).
func OpenDir(path string) (*Dir, error) {
	d := &Dir{path: path}
	if err := d.index(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Dir) index() error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("checkers: %w", err)
	}
	byHash := map[string]string{}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); e.IsDir() || (ext != ".wasm" && ext != ".py") {
			continue
		}
		p := filepath.Join(d.path, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("checkers: %w", err)
		}
		byHash[SHA256(data)] = p
	}
	d.mu.Lock()
	d.byHash = byHash
	d.mu.Unlock()
	return nil
}

// Checker implements Source. The bytes are read afresh and their hash
// checked, so a file changed since OpenDir is never run under an old name.
func (d *Dir) Checker(sum string) ([]byte, error) {
	d.mu.Lock()
	p, ok := d.byHash[sum]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotFound, sum, d.path)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("checkers: %w", err)
	}
	if SHA256(data) != sum {
		return nil, fmt.Errorf("%w: %s changed since it was indexed", ErrNotFound, p)
	}
	return data, nil
}

// SHA256 returns the lowercase hex SHA-256 of b: a checker's name.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Runner replays checkers from a Source in a sandbox: one at a time (Run,
// Do), or many on its Pool (RunBatch, RunJobs). With a Memo it answers a
// run it has seen before without running it again. It is safe for
// concurrent use.
type Runner struct {
	sb   *wasm.Sandbox
	src  Source
	memo *Memo
	pool *Pool
	runs atomic.Int64
	// observe, when set, is told of every run in the sandbox (not of memo
	// hits): the checker's kind, the engine and the outcome.
	observe func(kind, engine string, o wasm.Outcome)
}

// RunnerOption configures NewRunner.
type RunnerOption func(*Runner)

// WithMemo makes the Runner memoise outcomes in m (see Memo). Without it
// every run runs.
func WithMemo(m *Memo) RunnerOption { return func(r *Runner) { r.memo = m } }

// WithPool makes the Runner's batches share p; by default a Runner has a
// Pool of its own, sized to GOMAXPROCS.
func WithPool(p *Pool) RunnerOption { return func(r *Runner) { r.pool = p } }

// WithObserver makes the Runner call fn after every run in the sandbox,
// with the checker's kind (KindWasm or KindPython), the sandbox's engine
// and the outcome; memo hits are not runs. fn must be quick and safe for
// concurrent calls: a metrics counter, say.
func WithObserver(fn func(kind, engine string, o wasm.Outcome)) RunnerOption {
	return func(r *Runner) { r.observe = fn }
}

// NewRunner returns a Runner over sb and src.
func NewRunner(sb *wasm.Sandbox, src Source, opts ...RunnerOption) *Runner {
	r := &Runner{sb: sb, src: src}
	for _, o := range opts {
		o(r)
	}
	if r.pool == nil {
		r.pool = NewPool(0)
	}
	return r
}

// Memo returns the Runner's memo, nil when it has none.
func (r *Runner) Memo() *Memo { return r.memo }

// Pool returns the pool the Runner's batches run on.
func (r *Runner) Pool() *Pool { return r.pool }

// Runs returns how many runs the Runner has started in the sandbox: memo
// hits are not runs.
func (r *Runner) Runs() int64 { return r.runs.Load() }

// Run runs the checker ref names against in, or answers the memoised
// outcome of the same run.
//
// # Errors
//
// An error means the checker could not be run at all: the reference is
// malformed or the Source does not have it. Everything a checker itself
// does, including being invalid wasm, is an Outcome.
func (r *Runner) Run(ctx context.Context, ref Ref, in wasm.Input) (wasm.Outcome, error) {
	res := r.Do(ctx, Job{Ref: ref, Input: in})
	return res.Outcome, res.Err
}

// Job is one replay: one checker, one input. It is the unit a batch is
// made of, and what a queue of replays would hold.
type Job struct {
	Ref   Ref
	Input wasm.Input
	// NoMemo runs the checker even when its outcome is memoised, and does
	// not memoise the result: for measurement.
	NoMemo bool
	// Limits, when set, replaces the limits Ref asks for, wholly: a fuel
	// of 0 runs unmetered, and Timeout is the backstop. Such a job is
	// never memoised: for `assay check` and measurement.
	Limits *wasm.Limits

	module []byte // the checker's bytes, when the batch has read them
}

// Result is what a Job gave.
type Result struct {
	Outcome wasm.Outcome
	// Memo is true when the outcome was answered from the memo, without
	// running.
	Memo bool
	// Err is set when the checker could not be run at all (see Run), or
	// when the batch's context ended before the job started.
	Err error
}

// Do runs one Job: the memo first, unless the job says NoMemo; then the
// checker in the sandbox, whose outcome the memo keeps. A memo hit does
// not read the checker from the Source.
func (r *Runner) Do(ctx context.Context, job Job) Result {
	ref := job.Ref
	if err := ref.Validate(); err != nil {
		return Result{Err: err}
	}
	var (
		key     MemoKey
		useMemo bool
	)
	if r.memo != nil && !job.NoMemo && job.Limits == nil {
		key, useMemo = Key(ref, job.Input, r.sb.Engine())
		if useMemo {
			if o, ok := r.memo.Get(key); ok && o.CheckerSHA256 == ref.SHA256 {
				return Result{Outcome: o, Memo: true}
			}
		}
	}
	b := job.module
	if b == nil {
		var err error
		if b, err = r.src.Checker(ref.SHA256); err != nil {
			return Result{Err: err}
		}
	}
	r.runs.Add(1)
	lim := ref.Limits()
	if job.Limits != nil {
		lim = *job.Limits
	}
	var o wasm.Outcome
	if ref.Kind == KindPython {
		o = python.Run(ctx, r.sb, b, ref.ArtifactType, job.Input, lim)
	} else {
		// The Source found b by its SHA-256: no need to hash it again.
		var sum [32]byte
		hex.Decode(sum[:], []byte(ref.SHA256))
		o = r.sb.RunSum(ctx, sum, b, job.Input, lim)
	}
	if r.observe != nil {
		kind := ref.Kind
		if kind == "" {
			kind = KindWasm
		}
		r.observe(kind, r.sb.Engine(), o)
	}
	if useMemo {
		r.memo.Put(key, o)
	}
	return Result{Outcome: o}
}

// BatchOptions tune RunBatch and RunJobs.
type BatchOptions struct {
	// NoMemo bypasses the memo for every job (see Job.NoMemo).
	NoMemo bool
	// Parallel caps the jobs this batch runs at once, below the pool's
	// size; 0 is the pool's size.
	Parallel int
	// Progress, when set, is called after each job with the number done
	// and the batch's size, one call at a time.
	Progress func(done, total int)
}

// RunBatch runs the checker ref names against every input on the Runner's
// pool and returns the results in the order of inputs. The checker is read
// from the Source once.
//
// # Errors
//
// The reference is malformed or the Source does not have the checker
// (ErrNotFound, wrapped): nothing ran. Or ctx ended before every input
// started: the results of those that did not start carry ctx's error.
func (r *Runner) RunBatch(ctx context.Context, ref Ref, inputs []wasm.Input, opts BatchOptions) ([]Result, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	b, err := r.src.Checker(ref.SHA256)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, len(inputs))
	for i, in := range inputs {
		jobs[i] = Job{Ref: ref, Input: in, NoMemo: opts.NoMemo, module: b}
	}
	return r.runJobs(ctx, jobs, opts)
}

// RunJobs runs jobs, each with its own checker, on the Runner's pool and
// returns their results in order. Each distinct checker is read from the
// Source once; one that cannot be read fails its jobs' results only.
//
// # Errors
//
// Only ctx's error, when it ended before every job started: the results of
// those that did not start carry it too.
func (r *Runner) RunJobs(ctx context.Context, jobs []Job, opts BatchOptions) ([]Result, error) {
	modules := map[string][]byte{}
	jobs = slices.Clone(jobs)
	for i := range jobs {
		j := &jobs[i]
		j.NoMemo = j.NoMemo || opts.NoMemo
		if j.Ref.Validate() != nil {
			continue // Do reports it
		}
		b, ok := modules[j.Ref.SHA256]
		if !ok {
			b, _ = r.src.Checker(j.Ref.SHA256) // nil on error: Do reads again and reports it
			modules[j.Ref.SHA256] = b
		}
		j.module = b
	}
	return r.runJobs(ctx, jobs, opts)
}

func (r *Runner) runJobs(ctx context.Context, jobs []Job, opts BatchOptions) ([]Result, error) {
	results := make([]Result, len(jobs))
	started, err := r.pool.Do(ctx, len(jobs), opts.Parallel, func(ctx context.Context, i int) {
		results[i] = r.Do(ctx, jobs[i])
	}, opts.Progress)
	if err != nil {
		for i, s := range started {
			if !s {
				results[i] = Result{Err: err}
			}
		}
	}
	return results, err
}

// Validate reports whether b is a checker of the given kind that the
// Runner's sandbox can run (see the function Validate): what the services
// check an uploaded checker with.
func (r *Runner) Validate(ctx context.Context, kind string, b []byte) error {
	return Validate(ctx, r.sb, kind, b)
}

// Modules is a Source over checkers held in memory, each found by the
// SHA-256 of its bytes: for one checker read from a file, as `assay
// check` runs it.
func Modules(modules ...[]byte) Source {
	m := memSource{}
	for _, b := range modules {
		m[SHA256(b)] = b
	}
	return m
}

type memSource map[string][]byte

func (m memSource) Checker(sum string) ([]byte, error) {
	if b, ok := m[sum]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, sum)
}

// Validate reports whether b is a checker of the given kind that sb can
// run: for wasm, what wasm.Sandbox.Validate checks; for python, UTF-8 source
// within python.MaxCheckerBytes that CPython compiles (python.CheckSource). Either
// way the module that will run is compiled, so that a first run starts at
// once.
//
// # Errors
//
// An error saying what is wrong with b, or that kind is unknown.
func Validate(ctx context.Context, sb *wasm.Sandbox, kind string, b []byte) error {
	switch kind {
	case "", KindWasm:
		return sb.Validate(ctx, b)
	case KindPython:
		// Compiled by CPython in sb, which also loads the interpreter.
		return python.CheckSource(ctx, sb, b)
	}
	return fmt.Errorf("checker kind %q is not supported (want %q or %q)", kind, KindWasm, KindPython)
}
