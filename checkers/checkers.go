// Package checkers knows what a checker is: a reference by content hash and
// limits, where checkers are kept (a content-addressed Source), and the
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
	"strings"
	"sync"

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

// Runner replays checkers from a Source in a sandbox.
type Runner struct {
	sb  *wasm.Sandbox
	src Source
}

// NewRunner returns a Runner over sb and src.
func NewRunner(sb *wasm.Sandbox, src Source) *Runner {
	return &Runner{sb: sb, src: src}
}

// Run runs the checker ref names against in.
//
// # Errors
//
// An error means the checker could not be run at all: the reference is
// malformed or the Source does not have it. Everything a checker itself
// does, including being invalid wasm, is an Outcome.
func (r *Runner) Run(ctx context.Context, ref Ref, in wasm.Input) (wasm.Outcome, error) {
	if err := ref.Validate(); err != nil {
		return wasm.Outcome{}, err
	}
	b, err := r.src.Checker(ref.SHA256)
	if err != nil {
		return wasm.Outcome{}, err
	}
	if ref.Kind == KindPython {
		return python.Run(ctx, r.sb, b, ref.ArtifactType, in, ref.Limits()), nil
	}
	return r.sb.Run(ctx, b, in, ref.Limits()), nil
}

// Validate reports whether b is a checker of the given kind that sb can
// run: for wasm, what wasm.Sandbox.Validate checks; for python, UTF-8 source
// within python.MaxCheckerBytes (its syntax is judged when it runs). Either
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
		if err := python.CheckSource(b); err != nil {
			return err
		}
		return sb.Validate(ctx, python.Module())
	}
	return fmt.Errorf("checker kind %q is not supported (want %q or %q)", kind, KindWasm, KindPython)
}
