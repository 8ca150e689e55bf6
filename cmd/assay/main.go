// Command assay is the Assay binary: serve, check, replay, judge, verify, keys,
// principals, bench and version. The subcommands that open a court's store or keys take
// them from one Config (config.go).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
)

func main() {
	os.Exit(doMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses shared by the subcommands.
const (
	exitOK    = 0
	exitNo    = 1 // the thing checked did not hold: fail, refund, invalid
	exitUsage = 2 // bad flags, unreadable files
)

// command is one subcommand. run gets the arguments after the name and
// returns the process exit status.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands is filled by each subcommand's file in its init.
var commands = map[string]command{}

func register(name, summary string, run func([]string, io.Reader, io.Writer, io.Writer) int) {
	if _, dup := commands[name]; dup {
		panic("assay: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// doMain is separated from main so that tests can run the whole command.
func doMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return cmdVersion(args[1:], stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "assay: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'assay <command> -h' for a command's flags")
}

func init() {
	register("version", "print assay's version and the Go that built it", cmdVersion)
	version = buildVersion(version, debug.ReadBuildInfo)
}

// buildVersion is the version assay reports (assay version, /health,
// /agentfacts): the one the build set with -ldflags "-X main.version=…"
// (make build sets git describe's), else the module version Go recorded
// (go install github.com/assayhq/assay/cmd/assay@v1.2.0 records v1.2.0, a
// build in a git checkout a pseudo-version), else set's own ("dev").
func buildVersion(set string, read func() (*debug.BuildInfo, bool)) string {
	if set != "" && set != "dev" {
		return set
	}
	if bi, ok := read(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return set
}

// cmdVersion prints the version, the Go toolchain and platform, and the
// commit the binary was built from when Go recorded it; with --json, the
// same as one object (versionInfo).
func cmdVersion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the version as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay version [--json] (or assay --version)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Commit, v.CommitTime, v.Modified = vcsOf(bi)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(stderr, "assay version: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "assay %s\n", v.Version)
	fmt.Fprintf(stdout, "go %s %s/%s\n", v.Go, v.OS, v.Arch)
	if v.Commit != "" {
		c := v.Commit
		if v.CommitTime != "" {
			c += " " + v.CommitTime
		}
		if v.Modified {
			c += " (modified)"
		}
		fmt.Fprintf(stdout, "commit %s\n", c)
	}
	return exitOK
}

// versionInfo is what assay version --json prints.
type versionInfo struct {
	Version string `json:"version"` // as /health reports it
	Go      string `json:"go"`      // the toolchain that built the binary
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// Commit, CommitTime and Modified are the VCS revision Go stamped
	// into the binary, its time, and whether the tree had changes; empty
	// when Go recorded none (go install of a module version, -buildvcs=false).
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
}

// vcsOf returns the VCS revision Go stamped into the binary, with its
// time and whether the tree had changes; rev is "" when there is none.
func vcsOf(bi *debug.BuildInfo) (rev, at string, modified bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "", "", false
	}
	return rev, at, modified
}

// parseFlags parses a command's args into fs, which takes no positional
// arguments. It returns false, with the exit code, when the command must
// stop: help was asked for, a flag was bad (fs has said which), or an
// argument was left over.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "assay %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
}
