// Command assay is the Assay binary: serve, check, replay, judge, verify, keys,
// principals and bench. The subcommands that open a court's store or keys take
// them from one Config (config.go).
package main

import (
	"fmt"
	"io"
	"os"
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
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'assay <command> -h' for a command's flags")
}
