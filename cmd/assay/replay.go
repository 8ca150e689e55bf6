package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

func init() {
	register("replay", "replay a checker on an artifact many times, in parallel, and time it", cmdReplay)
}

// maxReplays bounds --count.
const maxReplays = 10_000_000

// replayReport is what assay replay --json prints.
type replayReport struct {
	Count int `json:"count"`
	// MedianNS and P99NS are of the replays' latencies, each measured
	// around one replay (a memo hit is a lookup).
	MedianNS int64 `json:"median_ns"`
	P99NS    int64 `json:"p99_ns"`
	// ReplaysPerS is Count over the wall-clock time of the whole batch.
	ReplaysPerS float64 `json:"replays_per_s"`
	ElapsedNS   int64   `json:"elapsed_ns"`
	Parallel    int     `json:"parallel"`
	Memo        bool    `json:"memo"`
	MemoHits    int     `json:"memo_hits"`
	Engine      string  `json:"engine"`
	// Mismatches counts replays whose outcome differed from the first run
	// apart from wall_ns: 0 unless something is wrong (or a replay timed
	// out on a busy machine).
	Mismatches int `json:"mismatches"`
	// Outcome is the first, uncounted run's, as assay check --json prints
	// it.
	Outcome wasm.Outcome `json:"outcome"`
	// Interrupted is set when Ctrl-C (or SIGTERM) stopped the replays
	// early: the figures are then those of the Count replays that
	// finished before it, Requested of them asked for.
	Interrupted bool `json:"interrupted,omitempty"`
	Requested   int  `json:"requested,omitempty"`
}

// exitInterrupted is assay replay's exit status when SIGINT or SIGTERM
// ended it early, after it printed what it had: 128 plus SIGINT's
// number, as a shell reports a command Ctrl-C stopped.
const exitInterrupted = 130

func cmdReplay(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	// Ctrl-C (or SIGTERM) stops the replays: the summary of those done
	// is printed, and the progress bar cleared.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return replay(ctx, args, stdout, stderr, progressTo(stderr))
}

// progress shows how many replays are done; progressTo's *progressBar is
// one.
type progress interface {
	set(done, total int) // calls come one at a time
	clear()              // erase what set drew
}

// replay is assay replay until ctx ends, showing its progress on bar.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer, bar progress) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay replay --checker PATH --artifact PATH [--evidence PATH] [--kind wasm|python] [--type TYPE] [--fuel N] [--memory MiB] [--count N] [--no-memo] [--parallel P] [--json]")
		fmt.Fprintln(stderr, "\nReplays a checker on one artifact --count times on a pool of --parallel workers, as a marketplace")
		fmt.Fprintln(stderr, "replays level-1 checkers, and reports the latency of one replay (median, p99) and replays per second.")
		fmt.Fprintln(stderr, "A first run warms the caches (compiled code, snapshot, memo) and is not counted. With the memo (the")
		fmt.Fprintln(stderr, "default) every counted replay is then answered from it; --no-memo runs every one in the sandbox.")
		fmt.Fprintln(stderr, "The outcome printed is the first run's; replays whose outcome differs are counted as mismatches.")
		fmt.Fprintln(stderr, "Exit status as assay check: 0 pass, 1 any other deciding outcome (or a mismatch), 2 usage or")
		fmt.Fprintln(stderr, "unreadable file, 3 invalid checker, 4 timeout; 130 when Ctrl-C stopped it, after printing the replays done.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var memoryMiB uint
	var (
		checker  = fs.String("checker", "", "the checker (`PATH` to a .wasm module or a .py file)")
		kind     = fs.String("kind", "", "checker kind, wasm or python (default: python for a .py file, else wasm)")
		artType  = fs.String("type", "", "artifact type for a python checker: "+strings.Join(python.Types, "|")+" (default "+python.DefaultType+")")
		artifact = fs.String("artifact", "", "the artifact (`PATH`), given on stdin and as /in/artifact")
		evidence = fs.String("evidence", "", "a challenger's counterexample (`PATH`), given as /in/evidence")
		fuel     = fs.Uint64("fuel", wasm.DefaultFuel, "fuel budget of each replay")
		count    = fs.Int("count", 1000, "replays to run and time, after the uncounted first")
		noMemo   = fs.Bool("no-memo", false, "run every replay in the sandbox instead of answering it from the memo")
		parallel = fs.Int("parallel", runtime.GOMAXPROCS(0), "replays at once (`P` workers)")
		asJSON   = fs.Bool("json", false, "print the result as one JSON object")
		cacheDir = fs.String("cache", defaultCacheDir(), "directory for compiled checkers (`DIR`); empty for none")
	)
	fs.UintVar(&memoryMiB, "memory", uint(wasm.DefaultMemoryMiB), "memory limit of each replay in `MiB`")
	fs.UintVar(&memoryMiB, "memory-mib", uint(wasm.DefaultMemoryMiB), "the same as --memory, as assay check spells it")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch {
	case *checker == "" || *artifact == "":
		fmt.Fprintln(stderr, "assay replay: --checker and --artifact are required")
		return exitUsage
	case memoryMiB == 0 || memoryMiB > uint(wasm.MaxMemoryMiB):
		fmt.Fprintf(stderr, "assay replay: --memory must be between 1 and %d\n", wasm.MaxMemoryMiB)
		return exitUsage
	case *fuel == 0 || *fuel > wasm.MaxFuel:
		fmt.Fprintf(stderr, "assay replay: --fuel must be between 1 and %d (replays are always metered)\n", wasm.MaxFuel)
		return exitUsage
	case *count < 1 || *count > maxReplays:
		fmt.Fprintf(stderr, "assay replay: --count must be between 1 and %d\n", maxReplays)
		return exitUsage
	case *parallel < 1:
		fmt.Fprintln(stderr, "assay replay: --parallel must be at least 1")
		return exitUsage
	}
	module, in, err := loadRun(checker, kind, *artType, *artifact, *evidence)
	if err != nil {
		fmt.Fprintf(stderr, "assay replay: %v\n", err)
		return exitUsage
	}

	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: *cacheDir})
	if err != nil {
		fmt.Fprintf(stderr, "assay replay: %v\n", err)
		return exitUsage
	}
	defer func() {
		// A guest left running by a timeout is ended by the process's exit.
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = sb.Close(closeCtx)
	}()
	// Python that does not compile is invalid_checker, as assay check and
	// POST /checkers say, not a replayed fail.
	if out, ok := refused(ctx, sb, *kind, module, in, wasm.Limits{Fuel: *fuel, MemoryMiB: uint32(memoryMiB)}); ok {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(replayReport{Memo: !*noMemo, Engine: sb.Engine(), Outcome: out})
		} else {
			printOutcome(stdout, out)
		}
		return exitInvalidChecker
	}
	ref := checkers.Ref{SHA256: checkers.SHA256(module), Kind: *kind, Fuel: *fuel, MemoryMiB: uint32(memoryMiB), ArtifactType: *artType}
	pool := checkers.NewPool(*parallel)
	opts := []checkers.RunnerOption{checkers.WithPool(pool)}
	if !*noMemo {
		opts = append(opts, checkers.WithMemo(checkers.NewMemo(checkers.MemoConfig{})))
	}
	runner := checkers.NewRunner(sb, checkers.Modules(module), opts...)
	job := checkers.Job{Ref: ref, Input: in, NoMemo: *noMemo}

	first := runner.Do(ctx, job)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "assay replay: interrupted during the first, uncounted run: no replay to report")
		return exitInterrupted
	}
	if first.Err != nil {
		fmt.Fprintf(stderr, "assay replay: %v\n", first.Err)
		return exitUsage
	}
	res, err := timeReplays(ctx, runner, pool, job, first.Outcome, *count, *parallel, bar.set)
	bar.clear()
	if err != nil {
		fmt.Fprintf(stderr, "assay replay: %v\n", err)
		return exitUsage
	}
	res.Memo = !*noMemo
	res.Engine = sb.Engine()
	res.Outcome = first.Outcome

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "assay replay: %v\n", err)
			return exitUsage
		}
	} else {
		memo := "memo off"
		if res.Memo {
			memo = fmt.Sprintf("memo on (%d hits)", res.MemoHits)
		}
		done := fmt.Sprintf("%d replays", res.Count)
		if res.Interrupted {
			done = fmt.Sprintf("interrupted: %d of %d replays", res.Count, *count)
		}
		fmt.Fprintf(stdout, "%s of %s (%s, %s) on %d workers, %s\n", done, filepath.Base(*checker), *kind, res.Engine, res.Parallel, memo)
		if res.Count > 0 {
			fmt.Fprintf(stdout, "median %s, p99 %s per replay; %.0f replays/s (%s in all)\n",
				roundDur(res.MedianNS), roundDur(res.P99NS), res.ReplaysPerS, time.Duration(res.ElapsedNS).Round(time.Millisecond))
		}
		if res.Mismatches > 0 {
			fmt.Fprintf(stdout, "%d replays gave another outcome than the first run's\n", res.Mismatches)
		}
		printOutcome(stdout, res.Outcome)
	}
	switch {
	case res.Mismatches > 0:
		return exitNo // not deterministic: nothing it says can be trusted
	case res.Interrupted:
		return exitInterrupted
	}
	switch res.Outcome.Kind {
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

// timeReplays runs job n times on pool, parallel at once, timing each
// replay and the whole, and counting the outcomes that differ from want
// (apart from wall_ns) as they come: only the latencies are kept. progress
// may be nil. When ctx ends first, the report is of the replays that
// finished before it did, marked Interrupted: a replay that ctx cut short
// is neither timed nor compared.
func timeReplays(ctx context.Context, r *checkers.Runner, pool *checkers.Pool, job checkers.Job, want wasm.Outcome, n, parallel int, progress func(done, total int)) (replayReport, error) {
	lat := make([]int64, n)
	hits := make([]bool, n)
	done := make([]bool, n)
	var (
		mu       sync.Mutex
		firstErr error
		differ   int
	)
	wantKey := outcomeKey(want)
	start := time.Now()
	_, err := pool.Do(ctx, n, parallel, func(ctx context.Context, i int) {
		t := time.Now()
		res := r.Do(ctx, job)
		if ctx.Err() != nil {
			return // interrupted: this replay may have been cut short
		}
		lat[i], hits[i], done[i] = int64(time.Since(t)), res.Memo, true
		other := res.Err == nil && !sameOutcome(want, wantKey, res.Outcome)
		if res.Err != nil || other {
			mu.Lock()
			if res.Err != nil && firstErr == nil {
				firstErr = res.Err
			}
			if other {
				differ++
			}
			mu.Unlock()
		}
	}, progress)
	elapsed := time.Since(start)
	if err != nil && ctx.Err() == nil {
		return replayReport{}, err
	}
	if firstErr != nil {
		return replayReport{}, firstErr
	}
	var res replayReport
	kept := lat[:0]
	for i := range lat {
		if done[i] {
			kept = append(kept, lat[i])
			if hits[i] {
				res.MemoHits++
			}
		}
	}
	if ctx.Err() != nil {
		res.Interrupted, res.Requested = true, n
	}
	res.Mismatches = differ
	res.Count = len(kept)
	res.ElapsedNS = int64(elapsed)
	res.ReplaysPerS = float64(res.Count) / elapsed.Seconds()
	res.Parallel = min(parallel, pool.Size(), n)
	if res.Count > 0 {
		slices.Sort(kept)
		res.MedianNS = kept[res.Count/2]
		res.P99NS = kept[min(res.Count-1, (res.Count*99+99)/100-1)]
	}
	return res, nil
}

var wallField = regexp.MustCompile(`"wall_ns":-?\d+`)

// outcomeKey is o's JSON without its wall time.
func outcomeKey(o wasm.Outcome) string {
	b, _ := json.Marshal(o)
	return wallField.ReplaceAllString(string(b), "")
}

// sameOutcome reports whether o is want (whose outcomeKey is wantKey)
// apart from wall_ns.
func sameOutcome(want wasm.Outcome, wantKey string, o wasm.Outcome) bool {
	o.WallNS = want.WallNS
	return o == want || outcomeKey(o) == wantKey
}

// progressBar draws replays' progress on a terminal. A nil *progressBar
// draws nothing.
type progressBar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

var _ progress = (*progressBar)(nil)

// progressTo returns a progress bar drawn on w when w is a terminal, and
// a nil one (drawing nothing) otherwise.
func progressTo(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressBar{w: f}
}

// set shows done of total replays; calls come one at a time.
func (p *progressBar) set(done, total int) {
	if p == nil {
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("replays"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("replays"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	_ = p.bar.Set(done)
}

// clear erases the bar, finished or not, so that what is printed next
// starts on a clean line.
func (p *progressBar) clear() {
	if p == nil || p.bar == nil {
		return
	}
	_ = p.bar.Clear()
}

func roundDur(ns int64) time.Duration {
	d := time.Duration(ns)
	switch {
	case d < 10*time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	case d < 10*time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
