package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

func init() {
	register("check", "run a checker against an artifact, as the court would", cmdCheck)
}

// Exit statuses of assay check beyond exitOK, exitNo and exitUsage.
const (
	exitInvalidChecker = 3
	exitTimeout        = 4
)

func cmdCheck(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay check --checker PATH --artifact PATH [--criteria PATH] [--kind wasm|python] [--type TYPE] [--evidence PATH] [--fuel N] [--memory-mib N] [--timeout DURATION] [--json]")
		fmt.Fprintln(stderr, "\nRuns a checker in the sandbox exactly as the court does and prints the outcome.")
		fmt.Fprintln(stderr, "With --criteria, the checker runs as the court runs it for those criteria: with the")
		fmt.Fprintln(stderr, "kind, type, fuel and memory of its entry, the artifact as the deliverable the court")
		fmt.Fprintln(stderr, "passes (compact JSON, or a string's own bytes) and the criteria as /in/criteria.json.")
		fmt.Fprintln(stderr, "A .py checker (or --kind python) is Python, run by the built-in CPython 3.11 for WASI.")
		fmt.Fprintln(stderr, "Exit status: 0 pass, 1 any other deciding outcome, 2 usage or unreadable file, 3 invalid checker, 4 timeout.")
		fmt.Fprintf(stderr, "The default fuel, %d, ends the tightest endless loop as fuel_exhausted in under 2 s,\n", wasm.DefaultFuel)
		fmt.Fprintf(stderr, "long before the %s backstop; --fuel may be at most %d.\n", wasm.DefaultTimeout, wasm.MaxFuel)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var (
		checker   = fs.String("checker", "", "the checker (`PATH` to a .wasm module or a .py file)")
		kind      = fs.String("kind", "", "checker kind, wasm or python (default: python for a .py file, else wasm)")
		artType   = fs.String("type", "", "artifact type for a python checker: "+strings.Join(python.Types, "|")+" (default "+python.DefaultType+")")
		artifact  = fs.String("artifact", "", "the artifact (`PATH`), given on stdin and as /in/artifact")
		evidence  = fs.String("evidence", "", "a challenger's counterexample (`PATH`), given as /in/evidence")
		fuel      = fs.Uint64("fuel", wasm.DefaultFuel, fmt.Sprintf("fuel budget, at most %d; 0 runs unmetered, for measurement only", wasm.MaxFuel))
		memoryMiB = fs.Uint("memory-mib", uint(wasm.DefaultMemoryMiB), "memory limit in MiB")
		timeout   = fs.Duration("timeout", wasm.DefaultTimeout, "wall-clock backstop; a timeout decides nothing")
		asJSON    = fs.Bool("json", false, "print the outcome as one JSON object")
		criteria  = fs.String("criteria", "", "acceptance criteria (`PATH`) whose entry for this checker sets its kind, type and limits")
		cacheDir  = fs.String("cache", defaultCacheDir(), "directory for compiled checkers (`DIR`); empty for none")
	)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch {
	case *checker == "" || *artifact == "":
		fmt.Fprintln(stderr, "assay check: --checker and --artifact are required")
		return exitUsage
	case *fuel > wasm.MaxFuel:
		fmt.Fprintf(stderr, "assay check: --fuel must be at most %d\n", wasm.MaxFuel)
		return exitUsage
	case *memoryMiB == 0 || *memoryMiB > uint(wasm.MaxMemoryMiB):
		fmt.Fprintf(stderr, "assay check: --memory-mib must be between 1 and %d\n", wasm.MaxMemoryMiB)
		return exitUsage
	case *timeout <= 0:
		fmt.Fprintln(stderr, "assay check: --timeout must be positive")
		return exitUsage
	}
	module, in, err := loadRun(checker, kind, *artType, *artifact, *evidence)
	if err != nil {
		fmt.Fprintf(stderr, "assay check: %v\n", err)
		return exitUsage
	}
	var ref *checkers.Ref
	if *criteria != "" {
		if ref, err = courtRun(fs, *criteria, module, &in); err != nil {
			fmt.Fprintf(stderr, "assay check: %v\n", err)
			return exitUsage
		}
	}

	ctx := context.Background()
	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: *cacheDir})
	if err != nil {
		fmt.Fprintf(stderr, "assay check: %v\n", err)
		return exitUsage
	}
	lim := wasm.Limits{
		Fuel:      *fuel,
		MemoryMiB: uint32(*memoryMiB),
		Timeout:   *timeout,
	}
	// The court's runner, over this one checker, with the flags' limits
	// as they are (--fuel 0 unmetered, --timeout the backstop), or the
	// criteria entry's.
	job := checkers.Job{Ref: checkers.Ref{SHA256: checkers.SHA256(module), Kind: *kind, ArtifactType: *artType}, Input: in, NoMemo: true, Limits: &lim}
	if ref != nil {
		lim = ref.Limits()
		lim.Timeout = *timeout
		job.Ref = *ref
	}
	out, ok := refused(ctx, sb, job.Ref.Kind, module, in, lim)
	if !ok {
		res := checkers.NewRunner(sb, checkers.Modules(module)).Do(ctx, job)
		if res.Err != nil {
			fmt.Fprintf(stderr, "assay check: %v\n", res.Err)
			return exitUsage
		}
		out = res.Outcome
	}
	// Run returned, so its guest has stopped; Close has nothing to wait for.
	closeCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = sb.Close(closeCtx)

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "assay check: %v\n", err)
			return exitUsage
		}
	} else {
		printOutcome(stdout, out)
	}
	switch out.Kind {
	case wasm.KindPass:
		return exitOK
	case wasm.KindInvalidChecker:
		return exitInvalidChecker
	case wasm.KindTimeout:
		return exitTimeout
	default:
		return exitNo
	}
}

// refused returns the invalid_checker outcome of a checker that the
// server's POST /checkers would refuse and the sandbox would still run:
// Python source that does not compile, which a run would only report as a
// fail. ok is false for any other checker (a wasm module the sandbox
// refuses is invalid_checker when it runs).
func refused(ctx context.Context, sb *wasm.Sandbox, kind string, module []byte, in wasm.Input, lim wasm.Limits) (out wasm.Outcome, ok bool) {
	if kind != checkers.KindPython {
		return wasm.Outcome{}, false
	}
	err := checkers.Validate(ctx, sb, kind, module)
	if err == nil {
		return wasm.Outcome{}, false
	}
	return wasm.Outcome{
		Kind:          wasm.KindInvalidChecker,
		ExitCode:      -1,
		FuelLimit:     lim.Fuel,
		CheckerSHA256: checkers.SHA256(module),
		InputSHA256:   checkers.SHA256(in.Artifact),
		StdoutSHA256:  checkers.SHA256(nil),
		StderrSHA256:  checkers.SHA256(nil),
		Detail:        "invalid checker: " + err.Error(),
	}, true
}

// courtRun reads the criteria at path and sets in up as the court would
// give it to module: the artifact parsed as a deliverable and given as the
// court gives it, and the criteria's canonical form. It returns the
// criteria's entry for module, whose kind, type and limits the run takes.
//
// # Errors
//
// A flag that the entry sets, criteria that the court would refuse, an
// artifact that is not a deliverable, or criteria that do not name the
// checker.
func courtRun(fs *flag.FlagSet, path string, module []byte, in *wasm.Input) (*checkers.Ref, error) {
	var conflict error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "fuel", "memory-mib", "kind", "type":
			conflict = fmt.Errorf("--%s and --criteria: the criteria's entry for the checker sets it", f.Name)
		}
	})
	if conflict != nil {
		return nil, conflict
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read criteria: %v", err)
	}
	plan, err := adjudicate.Compile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	d, err := adjudicate.ParseDeliverable(in.Artifact)
	if err != nil {
		return nil, fmt.Errorf("the artifact as a deliverable: %v", err)
	}
	in.Artifact, in.Criteria = d.Artifact(), plan.Canonical()
	sum := checkers.SHA256(module)
	for _, ref := range plan.Checkers() {
		if ref.SHA256 == sum {
			return &ref, nil
		}
	}
	return nil, fmt.Errorf("%s names no checker with sha256 %s", path, sum)
}

// printOutcome writes the short human summary of an outcome.
func printOutcome(w io.Writer, o wasm.Outcome) {
	fmt.Fprintf(w, "%s: %s\n", o.Kind, o.Detail)
	if o.FuelLimit > 0 {
		fmt.Fprintf(w, "fuel:    %d of %d\n", o.FuelUsed, o.FuelLimit)
	} else {
		fmt.Fprintln(w, "fuel:    unmetered")
	}
	fmt.Fprintf(w, "memory:  %d pages (%d KiB)\n", o.MemoryPages, uint64(o.MemoryPages)*64)
	fmt.Fprintf(w, "wall:    %s\n", time.Duration(o.WallNS).Round(time.Microsecond))
	fmt.Fprintf(w, "checker: %s\n", o.CheckerSHA256)
	fmt.Fprintf(w, "input:   %s\n", o.InputSHA256)
	for _, s := range []struct{ name, text, sum string }{{"stdout", o.Stdout, o.StdoutSHA256}, {"stderr", o.Stderr, o.StderrSHA256}} {
		if s.text == "" {
			continue
		}
		fmt.Fprintf(w, "--- %s (sha256 %s)\n%s", s.name, s.sum, s.text)
		if s.text[len(s.text)-1] != '\n' {
			fmt.Fprintln(w)
		}
	}
}

// defaultCacheDir is where assay check keeps compiled checkers between
// runs: the user's cache directory, or none when there is no such thing.
func defaultCacheDir() string {
	if dir := os.Getenv("ASSAY_CACHE"); dir != "" {
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "assay")
}

// loadRun reads what `assay check` and `assay replay` run: the checker at
// *checker, whose *kind it settles ("" becomes python for a .py file, wasm
// otherwise), the artifact, and the evidence when evidence is not "".
//
// # Errors
//
// An unknown kind, --type on a wasm checker or an unknown type, or a file
// that cannot be read; the caller exits with a usage error.
func loadRun(checker, kind *string, artType, artifact, evidence string) (module []byte, in wasm.Input, err error) {
	if *kind == "" {
		*kind = checkers.KindWasm
		if strings.EqualFold(filepath.Ext(*checker), ".py") {
			*kind = checkers.KindPython
		}
	}
	switch {
	case *kind != checkers.KindWasm && *kind != checkers.KindPython:
		return nil, in, fmt.Errorf("--kind must be %s or %s", checkers.KindWasm, checkers.KindPython)
	case artType != "" && *kind != checkers.KindPython:
		return nil, in, errors.New("--type applies to python checkers only")
	case artType != "" && !python.ValidType(artType):
		return nil, in, fmt.Errorf("--type must be one of %s", strings.Join(python.Types, ", "))
	}
	if module, err = os.ReadFile(*checker); err != nil {
		return nil, in, fmt.Errorf("cannot read checker %s: %v", *checker, err)
	}
	if in.Artifact, err = os.ReadFile(artifact); err != nil {
		return nil, in, fmt.Errorf("cannot read artifact %s: %v", artifact, err)
	}
	if evidence != "" {
		if in.Evidence, err = os.ReadFile(evidence); err != nil {
			return nil, in, fmt.Errorf("cannot read evidence %s: %v", evidence, err)
		}
	}
	return module, in, nil
}
