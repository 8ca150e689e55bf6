package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/torchwood"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
)

func init() { register("verify", "verify a signed receipt offline", cmdVerify) }

// maxReceiptBytes bounds what assay verify reads.
const maxReceiptBytes = 16 << 20

func cmdVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay verify [--key BASE64 | --keys FILE] [--log URL|DIR] [--log-key VKEY] [--witness VKEY]... PATH|-")
		fmt.Fprintln(stderr, "\nVerifies a signed receipt (bare or wrapped as {\"receipt\": …}) offline and prints")
		fmt.Fprintln(stderr, `{"valid": bool, "reason": "…"}. Without --key or --keys it checks integrity only:`)
		fmt.Fprintln(stderr, "the receipt is intact, but nothing shows its key is the court's.")
		fmt.Fprintln(stderr, "\nWith --log, or given the bundle GET /receipts/{id}?log=true answers ({\"receipt\", \"log\"}),")
		fmt.Fprintln(stderr, "it also checks that the court's transparency log holds the receipt: from the log at URL")
		fmt.Fprintln(stderr, "or in a copy in DIR (assay audit --save), read as C2SP tlog-tiles, else offline from the")
		fmt.Fprintln(stderr, "bundle's C2SP tlog-proof; the checkpoint must verify with the log's key and carry the")
		fmt.Fprintln(stderr, "cosignatures of the --witness keys. It prints \"log\": {included, index, …}.")
		fmt.Fprintln(stderr, "Exit status: 0 valid, 1 invalid, 2 usage or unreadable file.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var (
		key      = fs.String("key", "", "pin the court key: `BASE64` of the raw key (as /health shows it) or its did:key")
		keysFile = fs.String("keys", "", "pin the court keys in `FILE`: the output of 'assay keys list' or /.well-known/assay-keys")
		logAt    = fs.String("log", "", "check the receipt's inclusion in the transparency log at `URL` (the court's base or its /log) or in a copy in DIR")
		pol      policyFlags
	)
	pol.register(fs.Func, fs.StringVar, fs.IntVar)
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
	res := verified{Result: receipt.NewVerifier(pinned).Verify(data)}
	if res.Valid {
		if lc, err := checkLog(context.Background(), data, *logAt, pol); err != nil {
			fmt.Fprintf(stderr, "assay verify: %v\n", err)
			return exitUsage
		} else if lc != nil {
			res.Log = lc
			if !lc.Included {
				res.Valid, res.Reason = false, "not in the transparency log: "+lc.Reason
			}
		}
	}
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

// verified is what assay verify prints: the receipt's Result, and what
// the log says when it was asked.
type verified struct {
	receipt.Result
	Log *logCheck `json:"log,omitempty"`
}

// checkLog checks data's receipt against the log at logAt, or against the
// proof its bundle carries; nil when there is neither. Its error is a
// usage error (a bad flag, an unreachable log); a receipt the log does
// not hold is a logCheck that says why.
func checkLog(ctx context.Context, data []byte, logAt string, pf policyFlags) (*logCheck, error) {
	var bundle struct {
		Log *translog.Inclusion `json:"log"`
	}
	_ = json.Unmarshal(data, &bundle)
	if logAt == "" && bundle.Log == nil {
		return nil, nil
	}
	fail := func(format string, args ...any) (*logCheck, error) {
		return &logCheck{Reason: fmt.Sprintf(format, args...)}, nil
	}
	var src *logSource
	if logAt != "" {
		var err error
		if src, err = openLogSource(logAt); err != nil {
			return nil, err
		}
	}
	key, fromLog := pf.logKey, false
	if key == "" {
		if src == nil {
			return nil, errors.New("a bundle's proof is checked against the log's key: give --log-key VKEY (GET /log/key shows it)")
		}
		var err error
		if key, fromLog, err = src.logKey(ctx, ""); err != nil {
			return nil, err
		}
	}
	pol, err := pf.policy(key)
	if err != nil {
		return nil, err
	}
	entry, err := entryFor(data, bundle.Log)
	if err != nil {
		return fail("%v", err)
	}
	out := &logCheck{KeyPinned: !fromLog}
	for _, s := range supersededBy(bundle.Log) {
		if _, _, err := pol.CheckProof([]byte(s.Entry), s.Proof); err == nil {
			if e, err := receipt.ParseEntry([]byte(s.Entry)); err == nil {
				out.SupersededBy = append(out.SupersededBy, e.ID)
			}
		}
	}
	if src == nil {
		idx, c, err := pol.CheckProof(entry, bundle.Log.Proof)
		if err != nil {
			return fail("%v", err)
		}
		_, names, _ := pol.Open([]byte(strings.SplitN(bundle.Log.Proof, "\n\n", 2)[1]))
		out.Included, out.Index, out.TreeSize, out.CosignedBy = true, &idx, c.N, names
		return out, nil
	}
	c, names, _, err := src.checkpoint(ctx, pol)
	if err != nil {
		return fail("%v", err)
	}
	idx := int64(-1)
	switch {
	case bundle.Log != nil && bundle.Log.Index != nil:
		idx = *bundle.Log.Index
	case src.court != "":
		e, _ := receipt.ParseEntry(entry)
		b, err := httpGet(ctx, src.court+"/receipts/"+e.ID+"?log=true")
		if err != nil {
			return fail("the court does not serve receipt %s with its log index: %v", e.ID, err)
		}
		var asked struct {
			Log translog.Inclusion `json:"log"`
		}
		if json.Unmarshal(b, &asked) != nil || asked.Log.Index == nil {
			return fail("the court gives no log index for receipt %s (status %q)", e.ID, asked.Log.Status)
		}
		idx = *asked.Log.Index
	default:
		if idx, err = findEntry(ctx, src.tiles, c.Tree, entry); err != nil {
			return fail("%v", err)
		}
	}
	if idx < 0 || idx >= c.N {
		return fail("the log's checkpoint of size %d does not hold the entry (index %d)", c.N, idx)
	}
	client, err := torchwood.NewClient(src.tiles)
	if err != nil {
		return nil, err
	}
	got, _, err := client.Entry(ctx, c.Tree, idx)
	if err != nil {
		return fail("%v", err)
	}
	if string(got) != string(entry) {
		return fail("the log's entry %d is another receipt's: %q", idx, got)
	}
	out.Included, out.Index, out.TreeSize, out.CosignedBy = true, &idx, c.N, names
	return out, nil
}

func supersededBy(inc *translog.Inclusion) []translog.Inclusion {
	if inc == nil {
		return nil
	}
	return inc.SupersededBy
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
