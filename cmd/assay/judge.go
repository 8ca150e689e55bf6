package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/wasm"
)

func init() {
	register("judge", "decide criteria against a deliverable", cmdJudge)
}

// exitEscalated is assay judge's status for an escalated verdict.
const exitEscalated = 3

func cmdJudge(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay judge --criteria PATH --deliverable PATH [--checkers DIR] [--json]")
		fmt.Fprintln(stderr, "\nDecides a deliverable against acceptance criteria as the court does, with no jury:")
		fmt.Fprintln(stderr, "semantic criteria leave the verdict escalated.")
		fmt.Fprintln(stderr, "Exit status: 0 release, 1 refund, 3 escalated, 2 bad input or unreadable file.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var (
		criteriaPath = fs.String("criteria", "", "the acceptance criteria (`PATH` to a JSON file)")
		delivPath    = fs.String("deliverable", "", "the deliverable (`PATH` to a JSON file)")
		checkersDir  = fs.String("checkers", "", "directory of checker files, found by their SHA-256 (`DIR`)")
		asJSON       = fs.Bool("json", false, "print the result as one JSON object")
		cacheDir     = fs.String("cache", defaultCacheDir(), "directory for compiled checkers (`DIR`); empty for none")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "assay judge: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	case *criteriaPath == "" || *delivPath == "":
		fmt.Fprintln(stderr, "assay judge: --criteria and --deliverable are required")
		return exitUsage
	}

	criteria, err := os.ReadFile(*criteriaPath)
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: cannot read criteria: %v\n", err)
		return exitUsage
	}
	plan, err := adjudicate.Compile(criteria)
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: %s: %v\n", *criteriaPath, err)
		return exitUsage
	}
	raw, err := os.ReadFile(*delivPath)
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: cannot read deliverable: %v\n", err)
		return exitUsage
	}
	deliverable, err := adjudicate.ParseDeliverable(raw)
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: %s: %v\n", *delivPath, err)
		return exitUsage
	}

	ctx := context.Background()
	var runner adjudicate.Runner
	if len(plan.Checkers()) > 0 {
		if *checkersDir == "" {
			fmt.Fprintln(stderr, "assay judge: the criteria name checkers; give --checkers DIR")
			return exitUsage
		}
		dir, err := checkers.OpenDir(*checkersDir)
		if err != nil {
			fmt.Fprintf(stderr, "assay judge: %v\n", err)
			return exitUsage
		}
		sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: *cacheDir})
		if err != nil {
			fmt.Fprintf(stderr, "assay judge: sandbox: %v\n", err)
			return exitUsage
		}
		defer sb.Close(ctx)
		runner = checkers.NewRunner(sb, dir)
	}

	result, _, err := adjudicate.Judge(ctx, plan, deliverable, runner, nil)
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		var out bytes.Buffer
		_ = json.Indent(&out, result.JSON(), "", "  ")
		out.WriteByte('\n')
		_, _ = stdout.Write(out.Bytes())
	} else {
		printResult(stdout, result)
	}
	switch result.Verdict {
	case adjudicate.VerdictRelease:
		return exitOK
	case adjudicate.VerdictRefund:
		return exitNo
	}
	return exitEscalated
}

func printResult(w io.Writer, r *adjudicate.Result) {
	fmt.Fprintf(w, "verdict: %s (%s)\n", r.Verdict, r.Tier)
	for _, c := range r.Checks {
		mark := "FAIL"
		switch {
		case c.Skipped:
			mark = "SKIP"
		case c.Passed:
			mark = "ok  "
		}
		fmt.Fprintf(w, "  %s %-9s %s\n", mark, c.Kind, c.Detail)
	}
}
