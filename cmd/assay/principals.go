package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

func init() {
	register("principals", "add, list or revoke the judgment service's signing principals", cmdPrincipals)
}

func principalsUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay principals add --key-id ID --public-key BASE64 --tenant T --roles requester,solver,operator --scopes economic:read,economic:private,economic:write [--data DIR]")
	fmt.Fprintln(w, "       assay principals list [--data DIR]")
	fmt.Fprintln(w, "       assay principals revoke --key-id ID [--data DIR]")
	fmt.Fprintln(w, "\nPrincipals sign requests to /api/v1/economic/matters (RFC 9421, Ed25519). The store")
	fmt.Fprintln(w, "is opened directly, so stop 'assay serve' on the same data directory first.")
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
	dir := fs.String("data", envOr("ASSAY_DATA", "data"), "data `DIR`")
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
	if err := principals(sub, *dir, matters.Principal{KeyID: *keyID, PublicKey: *pub, Tenant: *tenant,
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

func principals(sub, dir string, p matters.Principal, stdout io.Writer) error {
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: dir, Now: time.Now, Rand: rand.Reader})
	if err != nil {
		return err
	}
	db, err := storage.Open(filepath.Join(dir, "db"), storage.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	svc, err := matters.New(matters.Config{Store: db, Signer: keys})
	if err != nil {
		return err
	}
	ctx := context.Background()
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
