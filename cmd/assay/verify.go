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

func init() { register("verify", "verify a signed receipt offline", cmdVerify) }

// maxReceiptBytes bounds what assay verify reads.
const maxReceiptBytes = 16 << 20

func cmdVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay verify [--key BASE64 | --keys FILE] PATH|-")
		fmt.Fprintln(stderr, "\nVerifies a signed receipt (bare or wrapped as {\"receipt\": …}) offline and prints")
		fmt.Fprintln(stderr, `{"valid": bool, "reason": "…"}. Without --key or --keys it checks integrity only:`)
		fmt.Fprintln(stderr, "the receipt is intact, but nothing shows its key is the court's.")
		fmt.Fprintln(stderr, "Exit status: 0 valid, 1 invalid, 2 usage or unreadable file.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var (
		key      = fs.String("key", "", "pin the court key: `BASE64` of the raw key (as /health shows it) or its did:key")
		keysFile = fs.String("keys", "", "pin the court keys in `FILE`: the output of 'assay keys list' or /.well-known/assay-keys")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() != 1:
		fmt.Fprintln(stderr, "assay verify: give exactly one receipt: a PATH, or - for stdin")
		return exitUsage
	case *key != "" && *keysFile != "":
		fmt.Fprintln(stderr, "assay verify: give --key or --keys, not both")
		return exitUsage
	}

	var pinned []receipt.Key
	switch {
	case *key != "":
		k, err := receipt.ParseKey(*key)
		if err != nil {
			fmt.Fprintf(stderr, "assay verify: --key: %v\n", err)
			return exitUsage
		}
		pinned = []receipt.Key{k}
	case *keysFile != "":
		data, err := os.ReadFile(*keysFile)
		if err != nil {
			fmt.Fprintf(stderr, "assay verify: --keys: %v\n", err)
			return exitUsage
		}
		if pinned, err = receipt.ParseKeys(data); err != nil {
			fmt.Fprintf(stderr, "assay verify: --keys %s: %v\n", *keysFile, err)
			return exitUsage
		}
	}

	data, err := readReceipt(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "assay verify: %v\n", err)
		return exitUsage
	}
	res := receipt.NewVerifier(pinned).Verify(data)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "assay verify: %v\n", err)
		return exitUsage
	}
	if !res.Valid {
		return exitNo
	}
	return exitOK
}

// readReceipt reads path, or stdin for "-", up to maxReceiptBytes.
func readReceipt(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxReceiptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxReceiptBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxReceiptBytes)
	}
	return data, nil
}
