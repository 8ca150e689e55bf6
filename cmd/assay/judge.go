package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/adjudicate/jury"
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
		fmt.Fprintln(stderr, "usage: assay judge --criteria PATH --deliverable PATH [--checkers DIR] [--json] [--jury-* ...]")
		fmt.Fprintln(stderr, "\nDecides a deliverable against acceptance criteria as the court does. Semantic")
		fmt.Fprintln(stderr, "criteria go to the LLM jury when one is configured, by flags or by the environment")
		fmt.Fprintf(stderr, "(%s, %s, %s, %s);\n", jury.EnvBaseURL, jury.EnvAPIKey, jury.EnvModels, jury.EnvTimeout)
		fmt.Fprintln(stderr, "with none, they leave the verdict escalated.")
		fmt.Fprintf(stderr, "The schema and assertions are decided within the court's budget of %d units a\n", adjudicate.DefaultBudget)
		fmt.Fprintln(stderr, "decision (lowered by the criteria's \"budget\"), and criteria over a static limit are")
		fmt.Fprintln(stderr, "refused, as the court refuses them: a check during which the budget runs out fails.")
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
		juryBaseURL  = fs.String("jury-base-url", "", "the jury's OpenAI-compatible base `URL` (overrides "+jury.EnvBaseURL+")")
		juryModels   = fs.String("jury-models", "", "the jury's `MODELS`, comma separated, one juror each (overrides "+jury.EnvModels+")")
		juryTimeout  = fs.String("jury-timeout", "", "each juror's time limit, retries included, e.g. 30s (overrides "+jury.EnvTimeout+")")
	)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch {
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

	// Flags lay over the environment; the API key comes only from the
	// environment, to keep it out of process listings.
	flagEnv := map[string]string{jury.EnvBaseURL: *juryBaseURL, jury.EnvModels: *juryModels, jury.EnvTimeout: *juryTimeout}
	panel, err := jury.FromEnv(func(k string) string {
		if v := flagEnv[k]; v != "" {
			return v
		}
		return os.Getenv(k)
	})
	if err != nil {
		fmt.Fprintf(stderr, "assay judge: %v\n", err)
		return exitUsage
	}
	var juror adjudicate.Juror
	if panel != nil {
		juror = panel
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
		defer func() {
			// A guest left running by a timeout ends with the process.
			closeCtx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_ = sb.Close(closeCtx)
		}()
		runner = checkers.NewRunner(sb, dir)
	}

	result, _, err := adjudicate.Judge(ctx, plan, deliverable, runner, juror)
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
		for _, j := range c.Jurors {
			vote, why := j.Vote, j.Rationale
			if vote == "" {
				vote, why = "no vote", j.Error
			}
			fmt.Fprintf(w, "         juror %s@%s: %s (%d ms) %s\n", j.Model, j.Host, vote, j.LatencyMS, why)
		}
	}
}
