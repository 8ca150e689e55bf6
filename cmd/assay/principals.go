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

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
)

func init() {
	register("principals", "add, list or revoke the judgment service's signing principals", cmdPrincipals)
}

func principalsUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay principals add --key-id ID --public-key BASE64 --tenant T --roles requester,solver,operator --scopes economic:read,economic:private,economic:write [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals list [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals revoke --key-id ID [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "\nPrincipals sign requests to /api/v1/economic/matters (RFC 9421, Ed25519). They are kept")
	fmt.Fprintln(w, "in the store, the one 'assay serve' names with --data and --store ($ASSAY_DATA, $ASSAY_STORE).")
	fmt.Fprintln(w, "The store is opened directly: on badger, stop 'assay serve' on the same data directory")
	fmt.Fprintln(w, "first; on PostgreSQL, running servers see a change at their next request.")
}

func cmdPrincipals(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		principalsUsage(stderr)
		return exitUsage
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		principalsUsage(stderr)
		return exitOK
	case "add", "list", "revoke":
	default:
		fmt.Fprintf(stderr, "assay principals: unknown subcommand %q\n", sub)
		principalsUsage(stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("principals "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { principalsUsage(stderr); fmt.Fprintln(stderr); fs.PrintDefaults() }
	config := configFlags(fs, os.Getenv, withStore)
	keyID := fs.String("key-id", "", "the principal's key `ID` (the signature's keyid)")
	pub := fs.String("public-key", "", "standard `BASE64` of the raw 32-byte Ed25519 public key")
	tenant := fs.String("tenant", "", "`TENANT` id")
	roles := fs.String("roles", "", "comma-separated `ROLES`: requester, solver, operator")
	scopes := fs.String("scopes", "", "comma-separated `SCOPES`: economic:read, economic:private, economic:write")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "assay principals %s: unexpected argument %q\n", sub, fs.Arg(0))
		return exitUsage
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "assay principals %s: %v\n", sub, err)
		return exitUsage
	}
	if err := principals(sub, c, matters.Principal{KeyID: *keyID, PublicKey: *pub, Tenant: *tenant,
		Roles: splitList(*roles), Scopes: splitList(*scopes)}, stdout); err != nil {
		fmt.Fprintf(stderr, "assay principals %s: %s\n", sub, fault.MessageOf(err))
		if fault.KindOf(err) == fault.Internal {
			fmt.Fprintf(stderr, "  %v\n", err)
		}
		return exitNo
	}
	return exitOK
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// principals runs sub on the principals in the store c names.
func principals(sub string, c Config, p matters.Principal, stdout io.Writer) error {
	ctx := context.Background()
	db, err := c.OpenStore(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	svc, err := matters.New(matters.Config{Store: db, Signer: signsNothing{}})
	if err != nil {
		return err
	}
	var out any
	switch sub {
	case "add":
		out, err = svc.AddPrincipal(ctx, p)
	case "revoke":
		out, err = svc.RevokePrincipal(ctx, p.KeyID)
	case "list":
		var ps []matters.Principal
		ps, err = svc.Principals(ctx)
		out = map[string]any{"principals": ps}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// signsNothing is the signer of a matters.Service that only keeps its
// principals: adding, listing and revoking them signs no receipt, so
// principals opens no keys, and makes none in a directory no server reads.
type signsNothing struct{}

func (signsNothing) Sign(kind, id string, _ any) (receipt.Receipt, error) {
	return receipt.Receipt{}, fmt.Errorf("assay principals: %s %s: keeping principals signs no receipts", kind, id)
}
