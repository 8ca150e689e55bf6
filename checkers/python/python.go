// Package python is the python checker kind: SOLVED-style Python assertion
// code run by CPython 3.11.2 compiled to WASI, inside the same sandbox, under
// the same fuel and memory limits, as any wasm checker.
//
// The interpreter (runtime/python.wasm) and its standard library
// (runtime/usr/local/lib/python311.zip, bytecode only) are built by
// build.sh (`make python-wasm`) and embedded, so that a Python checker runs
// with nothing installed. python.wasm is a reactor (reactor/reactor.c): its
// _initialize starts the interpreter, as `python3.11 -I -S -B` would, and
// imports harness.py and the modules checkers commonly use; the sandbox runs
// that once and starts every run from a snapshot of it. Its assay_check runs
// one checker, with:
//
//	/in         the artifact, evidence and criteria.json, as for any checker
//	/usr/local  the standard library (read-only, shared by every run)
//	/checker    harness.py, the checker as check.py and the artifact's type
//	            as type (read-only)
//
// Every Python checker shares the one snapshot: the checker and the type are
// read by assay_check, never by _initialize.
//
// harness.py gives the checker the artifact (see its doc comment): for a
// code artifact the artifact's source runs first and the checker after it
// in the same namespace; for the other types the checker finds it as the
// string artifact, and as data when it parses as JSON. A pass means the
// checker ran to its end: control came back to the harness after the
// checker's last statement. Anything else is fail: an uncaught exception
// (SystemExit with any code among them, raised by the artifact or the
// checker), with the exception's type, message and a bounded traceback in
// the outcome's detail, or the process exiting before the harness answered.
// RATIONALE.md says what a pass guarantees and what it does not.
//
// The interpreter is metered and compiled once per sandbox, like any
// module. Fuel counts the check alone, not the interpreter's start: see
// StartupFuel.
package python

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/assayhq/assay/wasm"
)

// Artifact types, as the market's listings name them. Code is the one a
// checker treats differently: it runs the artifact's source.
const (
	TypeCode      = "code"
	TypeSolution  = "solution"
	TypeDataset   = "dataset"
	TypeEmbedding = "embedding"
	TypeDocument  = "document"
	TypeDataFeed  = "data_feed"

	// DefaultType is the type a checker gets when none is given.
	DefaultType = TypeSolution
)

// Types lists every artifact type in the order the market documents them.
var Types = []string{TypeSolution, TypeDataset, TypeEmbedding, TypeCode, TypeDocument, TypeDataFeed}

// ValidType reports whether t names an artifact type.
func ValidType(t string) bool {
	for _, x := range Types {
		if t == x {
			return true
		}
	}
	return false
}

// StartupFuel bounds the fuel a Python checker spends before its first
// line runs. The interpreter's start and the imports of the modules
// checkers commonly use are done once, before the snapshot every run starts
// from, and cost a run nothing; what is left is the harness's work for the
// check: reading the checker and the artifact, parsing a JSON artifact,
// compiling the checker and building its builtins (about 730 thousand for
// an empty checker of a small JSON artifact; more for a large artifact or
// checker). A limit below it ends every Python checker fuel_exhausted.
const StartupFuel = 10_000_000

// MaxCheckerBytes bounds a checker's source.
const MaxCheckerBytes = 1 << 20

//go:embed runtime/python.wasm
var module []byte

//go:embed runtime/usr
var stdlib embed.FS

//go:embed harness.py
var harness []byte

// usrLocal is the tree mounted at /usr/local.
var usrLocal = mustSub(stdlib, "runtime/usr/local")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // impossible: dir is embedded
	}
	return sub
}

// Module returns the interpreter, python.wasm: the module every Python
// checker runs as. The caller must not modify it.
func Module() []byte { return module }

// ModuleSHA256 returns the interpreter's SHA-256 (lowercase hex). Outcomes
// of Python checkers are reproducible for a given interpreter: a different
// build spends different fuel.
func ModuleSHA256() string {
	sum := moduleSum()
	return hex.EncodeToString(sum[:])
}

// moduleSum is the interpreter's SHA-256, vouched for to the sandbox so that
// the 6.7 MB module is not hashed per run. It is computed on first use,
// not when the program starts: most runs of the assay command run no
// Python.
var moduleSum = sync.OnceValue(func() [32]byte { return sha256.Sum256(module) })

// RuntimeSHA256 returns the SHA-256 (lowercase hex) of everything of this
// package that shapes a Python checker's outcome: the interpreter, the
// harness that runs checkers, and the standard library mounted beside
// them, each file by its path. A cache of outcomes (checkers' memo) keys on
// it, so that a new harness or library is never answered with an outcome
// of the old one. It is computed on first use (it reads 15 MB).
var RuntimeSHA256 = sync.OnceValue(func() string { return runtimeSum(harness) })

// runtimeSum is RuntimeSHA256 for the harness h.
func runtimeSum(h0 []byte) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	sum := moduleSum()
	field(sum[:])
	field(h0)
	err := fs.WalkDir(stdlib, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := stdlib.ReadFile(path)
		if err != nil {
			return err
		}
		field([]byte(path))
		field(b)
		return nil
	})
	if err != nil {
		panic(err) // impossible: the tree is embedded
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// harness.py's statuses (PASS and the others there): a pass, an uncaught
// exception (reported on stderr), and a checker that does not compile (in
// typeCompile's runs). Nothing else returns 0.
const (
	exitPass        = 0
	exitException   = 1
	exitNotCompiled = 3
)

// passDetail is the sandbox's detail for a reactor whose assay_check
// returned 0: the one way a Python check passes (the sandbox fails a
// proc_exit before assay_check returns, proc_exit(0) included).
var passDetail = fmt.Sprintf("assay_check returned %d", exitPass)

// typeCompile is the type with which the harness compiles the checker and
// runs nothing (harness.py's COMPILE): CheckSource's runs. It is not an
// artifact type: Input refuses it.
const typeCompile = "compile"

// CompileFuel bounds the fuel CheckSource spends compiling a checker (a
// few seconds at most). MaxCheckerBytes of ordinary assertions take about
// 2.8 billion; a checker that takes more than this would spend as much of
// every run before its first line, and is refused.
const CompileFuel = 4_000_000_000

// CheckSource reports whether src can be a Python checker: UTF-8 text of at
// most MaxCheckerBytes, with no NUL byte, that CPython compiles. It
// compiles src with the interpreter's own compile(), as every run does
// before the checker's first line, in sb (from the snapshot runs start
// from) under CompileFuel, and runs none of it. A checker that does not
// compile is refused with the line, the column and CPython's message.
//
// # Errors
//
// The error says what is wrong with src, or, when ctx ended or the sandbox
// could not compile it, why src could not be judged.
func CheckSource(ctx context.Context, sb *wasm.Sandbox, src []byte) error {
	return checkSource(ctx, sb, src, wasm.DefaultTimeout)
}

// checkSource is CheckSource with the wall-clock backstop of the compile:
// the default for an upload, longer for a test, whose outcome fuel alone
// must decide on however loaded a machine.
func checkSource(ctx context.Context, sb *wasm.Sandbox, src []byte, backstop time.Duration) error {
	if err := checkText(src); err != nil {
		return err
	}
	lim := wasm.DefaultLimits()
	lim.Fuel = CompileFuel
	lim.Timeout = backstop
	out := sb.RunSum(ctx, moduleSum(), module, input(src, typeCompile, wasm.Input{}), lim)
	switch {
	case out.Kind == wasm.KindPass && out.Detail == passDetail:
		return nil
	case out.Kind == wasm.KindFail && out.ExitCode == exitNotCompiled:
		msg, _, _ := strings.Cut(strings.TrimSpace(out.Stderr), "\n")
		return fmt.Errorf("python checker does not compile: %s", msg)
	case out.Kind == wasm.KindFuelExhausted || out.Kind == wasm.KindMemoryExceeded:
		return fmt.Errorf("python checker does not compile within the limits of an upload: %s", out.Detail)
	}
	return fmt.Errorf("python checker could not be compiled: %s: %s", out.Kind, out.Detail)
}

// checkText reports whether src can be a Python checker's text: UTF-8 of
// at most MaxCheckerBytes, with no NUL byte.
func checkText(src []byte) error {
	switch {
	case len(src) == 0:
		return errors.New("python checker is empty")
	case len(src) > MaxCheckerBytes:
		return fmt.Errorf("python checker is %d bytes, over the limit of %d", len(src), MaxCheckerBytes)
	case !utf8.Valid(src):
		return errors.New("python checker is not UTF-8 text")
	case bytes.IndexByte(src, 0) >= 0:
		return errors.New("python checker contains a NUL byte")
	}
	return nil
}

// Input returns the sandbox input that runs the checker src against in for
// an artifact of type typ ("" is DefaultType). in's own Args and Mounts are
// replaced: Args by none (python.wasm takes no arguments), Mounts by
// /usr/local and /checker. Every Python checker's input has the same Args
// and mount directories, so that all share one snapshot.
func Input(src []byte, typ string, in wasm.Input) (wasm.Input, error) {
	if typ == "" {
		typ = DefaultType
	}
	if !ValidType(typ) {
		return wasm.Input{}, fmt.Errorf("artifact type %q is not one of %s", typ, strings.Join(Types, ", "))
	}
	if err := checkText(src); err != nil {
		return wasm.Input{}, err
	}
	return input(src, typ, in), nil
}

// input is Input for a checker already checked, of type typ.
func input(src []byte, typ string, in wasm.Input) wasm.Input {
	in.Args = nil
	in.Mounts = []wasm.Mount{
		{Dir: "/usr/local", FS: usrLocal},
		{Dir: "/checker", FS: wasm.MemDir{"harness.py": harness, "check.py": src, "type": []byte(typ)}},
	}
	return in
}

// Run runs the Python checker src against in, for an artifact of type typ,
// in sb under lim. Like wasm.Sandbox.Run it always returns an Outcome: a
// checker that cannot run (not UTF-8, an unknown type) is invalid_checker.
// It is pass only when the harness answered that the checker ran to its
// end.
//
// The outcome's CheckerSHA256 is the checker source's; the interpreter's is
// ModuleSHA256. A fail from an uncaught exception has the exception's type
// and message, then the bounded traceback, as its detail.
//
// # Notes
//
//   - The run starts from the sandbox's snapshot of python.wasm after
//     _initialize (see wasm.Sandbox.RunSum): the first Python run of a
//     sandbox takes the interpreter's start, the following ones do not.
//     FuelUsed counts the check alone.
func Run(ctx context.Context, sb *wasm.Sandbox, src []byte, typ string, in wasm.Input, lim wasm.Limits) wasm.Outcome {
	return run(ctx, sb, src, typ, in, lim, false)
}

// RunCold is Run without the snapshot: the interpreter starts in the run's
// own instance (see wasm.Sandbox.RunCold). Its outcome is Run's, but for
// the wall time; it serves to measure what the snapshot saves, and to test
// that it changes nothing else.
func RunCold(ctx context.Context, sb *wasm.Sandbox, src []byte, typ string, in wasm.Input, lim wasm.Limits) wasm.Outcome {
	return run(ctx, sb, src, typ, in, lim, true)
}

func run(ctx context.Context, sb *wasm.Sandbox, src []byte, typ string, in wasm.Input, lim wasm.Limits, cold bool) wasm.Outcome {
	pin, err := Input(src, typ, in)
	if err != nil {
		return wasm.Outcome{
			Kind:          wasm.KindInvalidChecker,
			ExitCode:      -1,
			FuelLimit:     lim.Fuel,
			CheckerSHA256: hexSum(src),
			InputSHA256:   hexSum(in.Artifact),
			StdoutSHA256:  hexSum(nil),
			StderrSHA256:  hexSum(nil),
			Detail:        "invalid checker: " + err.Error(),
		}
	}
	var out wasm.Outcome
	if cold {
		out = sb.RunColdSum(ctx, moduleSum(), module, pin, lim)
	} else {
		out = sb.RunSum(ctx, moduleSum(), module, pin, lim)
	}
	out.CheckerSHA256 = hexSum(src)
	// A pass is the harness's answer alone: the sandbox fails a reactor
	// that calls proc_exit before assay_check returns (os._exit(0) in an
	// artifact, say), whatever its status.
	if returned := fmt.Sprintf("assay_check returned %d", out.ExitCode); strings.HasSuffix(out.Detail, returned) {
		// What the harness returns is the status the checker would have
		// exited with as a Python program: sys.exit(3) is "exited 3".
		out.Detail = strings.TrimSuffix(out.Detail, returned) + fmt.Sprintf("exited %d", out.ExitCode)
	}
	switch {
	case out.Kind == wasm.KindFail && out.ExitCode == exitException:
		if d := exceptionDetail(out.Stderr); d != "" {
			out.Detail = d
		}
	case out.Kind == wasm.KindTrap && strings.HasSuffix(out.Detail, "out of bounds memory access"):
		// The interpreter's C stack sits below its data, so running out of
		// it reads below address 0.
		out.Detail += " (in python.wasm, the interpreter's C stack running out: deep recursion in C, such as repr of deeply nested data after sys.setrecursionlimit)"
	case out.Kind == wasm.KindFuelExhausted && lim.Fuel < StartupFuel:
		out.Detail += fmt.Sprintf(" (a python checker's harness alone takes up to %d before the checker's first line)", StartupFuel)
	}
	return out
}

// exceptionDetail turns the harness's report on stderr into a detail: the
// exception line, then the traceback. It returns "" when stderr does not
// hold a report (it was cut off by the output cap, say).
func exceptionDetail(stderr string) string {
	const mark = "Traceback (most recent call last):\n"
	i := strings.LastIndex(stderr, mark)
	if i < 0 {
		return ""
	}
	tb := strings.TrimRight(stderr[i:], "\n")
	// The exception's message may span lines: it starts at the first line
	// of the report that is not indented.
	lines := strings.Split(tb, "\n")
	for j := 1; j < len(lines); j++ {
		if lines[j] != "" && lines[j][0] != ' ' {
			return strings.Join(lines[j:], "\n") + "\n" + strings.Join(lines[:j], "\n")
		}
	}
	return ""
}
