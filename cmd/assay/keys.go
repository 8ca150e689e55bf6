package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/assayhq/assay/runtime/receipt"
)

func init() { register("keys", "list or rotate the court's signing keys", cmdKeys) }

func keysUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay keys list [--data DIR] [--keys DIR]")
	fmt.Fprintln(w, "       assay keys rotate [--data DIR] [--keys DIR]")
	fmt.Fprintln(w, "\nlist    prints every court key, oldest first, as published at /.well-known/assay-keys;")
	fmt.Fprintln(w, "        the output is a valid 'assay verify --keys' file")
	fmt.Fprintln(w, "rotate  makes a new signing key; old keys stay listed with the time they stopped")
	fmt.Fprintln(w, "        signing, so their receipts keep verifying. A running server signs with the")
	fmt.Fprintln(w, "        new key once restarted. In an empty key directory it makes the first key.")
	fmt.Fprintln(w, "\nThe keys live in DIR/keys/ed25519.json, where DIR is --keys ($ASSAY_KEYS), as for")
	fmt.Fprintln(w, "'assay serve', else the data directory --data ($ASSAY_DATA, else ./data).")
}

func cmdKeys(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		keysUsage(stderr)
		return exitUsage
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		keysUsage(stderr)
		return exitOK
	case "list", "rotate":
	default:
		fmt.Fprintf(stderr, "assay keys: unknown subcommand %q\n", sub)
		keysUsage(stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { keysUsage(stderr); fmt.Fprintln(stderr); fs.PrintDefaults() }
	config := configFlags(fs, os.Getenv, withKeys)
	if code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "assay keys %s: %v\n", sub, err)
		return exitUsage
	}
	dir := c.KeysDir()
	existing, err := c.ReadKeys()
	absent := errors.Is(err, receipt.ErrNoKeys)
	if err != nil && !absent {
		fmt.Fprintf(stderr, "assay keys %s: %v\n", sub, err)
		return exitUsage
	}
	var keys []receipt.Key
	switch sub {
	case "list":
		if absent {
			fmt.Fprintf(stderr, "assay keys list: no keys in %s yet; the server makes one on first start, or run 'assay keys rotate'\n", dir)
			return exitNo
		}
		keys = existing
	case "rotate":
		ring, err := c.OpenKeyring()
		if err != nil {
			fmt.Fprintf(stderr, "assay keys rotate: %v\n", err)
			return exitUsage
		}
		if absent {
			fmt.Fprintf(stderr, "assay keys rotate: made the first key %s in %s\n", ring.Current().DID, dir)
		} else {
			k, err := ring.Rotate()
			if err != nil {
				fmt.Fprintf(stderr, "assay keys rotate: %v\n", err)
				return exitUsage
			}
			fmt.Fprintf(stderr, "assay keys rotate: %s now signs; restart running servers to use it\n", k.DID)
		}
		keys = ring.Keys()
	}
	out, err := json.MarshalIndent(receipt.KeySet{Keys: keys}, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "assay keys %s: %v\n", sub, err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
}
