package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage/postgres"
)

func cmdBenchReplays(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench replays", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		storeSpec = fs.String("store", envOr("ASSAY_STORE", ""), "the nodes' shared store, `postgres:URL` ($ASSAY_STORE): the replays are queued there")
		base      = fs.String("base", envOr("ASSAY_BASE", "http://127.0.0.1:8080"), "a node's base `URL`, to upload the checker to")
		checker   = fs.String("checker", "", "the checker to replay: a .wasm module or a .py Python checker")
		count     = fs.Int("count", 1000, "replays to run, each on its own artifact")
		nodes     = fs.Int("nodes", 1, "warm up until this many nodes' workers have run the checker (compiled it) before the clock starts")
		asJSON    = fs.Bool("json", false, "print the result as JSON")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay bench replays --store postgres:URL --base URL --checker PATH [--count N] [--json]")
		fmt.Fprintln(stderr, "\nUploads the checker to a node, queues --count replays of it in the shared store, each")
		fmt.Fprintln(stderr, `on its own artifact ({"min_rows":1,"rows":[{"id":"r<i>"}]}) and bypassing the memo, so`)
		fmt.Fprintln(stderr, "that every replay runs, and waits for the nodes' replay workers to run them all: replays/s over every")
		fmt.Fprintln(stderr, "node, and how many each node ran. Untimed warm-up batches run first, until --nodes")
		fmt.Fprintln(stderr, "workers have each run one, so that the figure excludes compiling the checker.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	st, err := parseStore(*storeSpec)
	if err != nil || st.Kind != "postgres" || *checker == "" || *count < 1 || *count > 1_000_000 || *nodes < 1 || *nodes > 1000 {
		fmt.Fprintln(stderr, "assay bench replays: give --store postgres:URL, --checker PATH, a --count from 1 to 1000000 and --nodes from 1 to 1000")
		return exitUsage
	}
	res, err := benchReplays(context.Background(), replayLoad{Store: st.Target, Base: strings.TrimRight(*base, "/"), Checker: *checker, Count: *count, Nodes: *nodes})
	if err != nil {
		fmt.Fprintf(stderr, "assay bench replays: %v\n", err)
		return exitNo
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "%d replays on %d node(s) in %s: %.0f replays/s\n", res.Count, len(res.ByNode),
			time.Duration(res.ElapsedNS).Round(time.Millisecond), res.ReplaysPerSec)
		for _, n := range slices.Sorted(maps.Keys(res.ByNode)) {
			fmt.Fprintf(stdout, "  %s ran %d\n", n, res.ByNode[n])
		}
		fmt.Fprintf(stdout, "outcomes %v; %d retaken after a lost lease; %d errors\n", res.Kinds, res.Retaken, res.Errors)
		if res.FirstError != "" {
			fmt.Fprintf(stdout, "first error: %s\n", res.FirstError)
		}
	}
	if res.Errors > 0 {
		return exitNo
	}
	return exitOK
}

// replayLoad describes a replay run through the shared queue.
type replayLoad struct {
	Store   string // PostgreSQL URL
	Base    string
	Checker string
	Count   int
	Nodes   int // warm up until this many workers ran a replay
}

// replayResult is what a replay run measured.
type replayResult struct {
	Count         int            `json:"count"`
	ElapsedNS     int64          `json:"elapsed_ns"`
	ReplaysPerSec float64        `json:"replays_per_s"`
	ByNode        map[string]int `json:"by_node"`
	Kinds         map[string]int `json:"kinds"`
	Retaken       int            `json:"retaken"`
	Errors        int            `json:"errors"`
	FirstError    string         `json:"first_error,omitempty"`
}

// benchReplays uploads the checker, queues the replays and waits for them.
func benchReplays(ctx context.Context, l replayLoad) (replayResult, error) {
	module, err := os.ReadFile(l.Checker)
	if err != nil {
		return replayResult{}, err
	}
	ref := checkers.Ref{SHA256: checkers.SHA256(module)}
	ctype := "application/wasm"
	if filepath.Ext(l.Checker) == ".py" {
		ref.Kind, ctype = checkers.KindPython, "text/x-python"
	}
	resp, err := http.Post(l.Base+"/checkers", ctype, bytes.NewReader(module))
	if err != nil {
		return replayResult{}, fmt.Errorf("upload the checker: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return replayResult{}, fmt.Errorf("upload the checker: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	st, err := postgres.Open(ctx, l.Store, postgres.Options{})
	if err != nil {
		return replayResult{}, err
	}
	defer st.Close()
	q := postgres.NewQueue(st)
	tasks := func(n, from int) []replays.Task {
		out := make([]replays.Task, n)
		for i := range out {
			out[i] = replays.Task{Checker: ref, Artifact: fmt.Appendf(nil, `{"min_rows":1,"rows":[{"id":"r%d"}]}`, from+i), NoMemo: true}
		}
		return out
	}
	batch := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	// Warm up: every node compiles the checker on its first replay.
	warm := map[string]bool{}
	for round := 0; len(warm) < l.Nodes; round++ {
		if round == 30 {
			return replayResult{}, fmt.Errorf("after %d warm-up batches only %d workers ran a replay, want --nodes %d", round, len(warm), l.Nodes)
		}
		out, err := replays.RunQueued(ctx, q, fmt.Sprintf("%s-warm%d", batch, round), tasks(4*l.Nodes, -1_000_000*(round+1)), 10*time.Millisecond, nil)
		if err != nil {
			return replayResult{}, err
		}
		for _, r := range out {
			warm[r.Worker] = true
		}
	}
	start := time.Now()
	out, err := replays.RunQueued(ctx, q, batch, tasks(l.Count, 0), 10*time.Millisecond, nil)
	elapsed := time.Since(start)
	if err != nil {
		return replayResult{}, err
	}
	res := replayResult{Count: len(out), ElapsedNS: elapsed.Nanoseconds(), ReplaysPerSec: float64(len(out)) / elapsed.Seconds(),
		ByNode: map[string]int{}, Kinds: map[string]int{}}
	for _, r := range out {
		res.ByNode[r.Worker]++
		if r.Attempt > 1 {
			res.Retaken++
		}
		if r.Error != "" {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = r.Error
			}
			continue
		}
		res.Kinds[string(r.Outcome.Kind)]++
	}
	return res, nil
}
