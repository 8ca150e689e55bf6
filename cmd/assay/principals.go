package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

func init() {
	register("principals", "manage who may act: registered keys, API keys, did:key identities", cmdPrincipals)
}

func principalsUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay principals add --key-id ID --public-key BASE64 --tenant T --roles requester,solver,operator --scopes economic:read,economic:private,economic:write [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals revoke --key-id ID [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals issue-key --agent AGENT [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals revoke-key --id API_KEY_ID [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals list [--data DIR] [--store STORE]")
	fmt.Fprintln(w, "       assay principals keygen --out FILE")
	fmt.Fprintln(w, "\nThree kinds of principal sign or authenticate requests (see docs/identity.md):")
	fmt.Fprintln(w, "  a registered key (add, revoke): an Ed25519 key under a key id, with a tenant, roles and")
	fmt.Fprintln(w, "    scopes; it signs requests (RFC 9421) with keyid ID and acts as the agent ID.")
	fmt.Fprintln(w, "  an API key (issue-key, revoke-key): a bearer secret for one agent, printed once; the")
	fmt.Fprintln(w, "    store keeps its SHA-256. Send it as Authorization: Bearer <token>.")
	fmt.Fprintln(w, "  a did:key (keygen): needs no registration. keygen writes a new private key to FILE")
	fmt.Fprintln(w, "    (mode 0600) and prints its did:key, the agent id it signs as ('assay sign').")
	fmt.Fprintln(w, "\nRegistered keys and API keys are kept in the store, the one 'assay serve' names with")
	fmt.Fprintln(w, "--data and --store ($ASSAY_DATA, $ASSAY_STORE). The store is opened directly: on badger,")
	fmt.Fprintln(w, "stop 'assay serve' on the same data directory first; on PostgreSQL, running servers see")
	fmt.Fprintln(w, "a change at their next request.")
}

// principalsArgs are the subcommands' flags.
type principalsArgs struct {
	p     principal.Principal
	agent string // issue-key
	id    string // revoke-key
	out   string // keygen
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
	case "add", "list", "revoke", "issue-key", "revoke-key", "keygen":
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
	agent := fs.String("agent", "", "the `AGENT` id an API key acts as")
	id := fs.String("id", "", "the API key's `ID` (api_key_id in list)")
	out := fs.String("out", "", "`FILE` to write a new did:key's private key to")
	if code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	a := principalsArgs{p: principal.Principal{KeyID: *keyID, PublicKey: *pub, Tenant: *tenant,
		Roles: splitList(*roles), Scopes: splitList(*scopes)}, agent: *agent, id: *id, out: *out}
	if missing := a.missing(sub); missing != "" {
		fmt.Fprintf(stderr, "assay principals %s: %s is required\n", sub, missing)
		return exitUsage
	}
	if sub == "keygen" {
		if err := keygen(a.out, stdout); err != nil {
			fmt.Fprintf(stderr, "assay principals keygen: %v\n", err)
			return exitNo
		}
		return exitOK
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "assay principals %s: %v\n", sub, err)
		return exitUsage
	}
	if err := principals(sub, c, a, stdout, stderr); err != nil {
		if errors.Is(err, storage.ErrLocked) {
			// Not an internal error: the store is in use, which the
			// operator can fix.
			fmt.Fprintf(stderr, "assay principals %s: %v\n", sub, err)
			return exitNo
		}
		fmt.Fprintf(stderr, "assay principals %s: %s\n", sub, fault.MessageOf(err))
		if fault.KindOf(err) == fault.Internal {
			fmt.Fprintf(stderr, "  %v\n", err)
		}
		return exitNo
	}
	return exitOK
}

// missing names a flag sub needs that is empty.
func (a principalsArgs) missing(sub string) string {
	switch {
	case sub == "revoke" && a.p.KeyID == "":
		return "--key-id"
	case sub == "issue-key" && a.agent == "":
		return "--agent"
	case sub == "revoke-key" && a.id == "":
		return "--id"
	case sub == "keygen" && a.out == "":
		return "--out"
	}
	return ""
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
func principals(sub string, c Config, a principalsArgs, stdout, stderr io.Writer) error {
	ctx := context.Background()
	db, err := c.OpenStore(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	reg := principal.New(db, nil)
	var out any
	switch sub {
	case "add":
		out, err = reg.Add(ctx, a.p)
	case "revoke":
		out, err = reg.Revoke(ctx, a.p.KeyID)
	case "issue-key":
		var k principal.APIKey
		var token string
		if k, token, err = reg.IssueAPIKey(ctx, a.agent); err == nil {
			out = map[string]any{"api_key": k, "token": token}
			fmt.Fprintln(stderr, "assay principals issue-key: the token is shown this once; the store keeps only its SHA-256")
		}
	case "revoke-key":
		out, err = reg.RevokeAPIKey(ctx, a.id)
	case "list":
		var ps []principal.Principal
		var ks []principal.APIKey
		if ps, err = reg.Principals(ctx); err == nil {
			ks, err = reg.APIKeys(ctx)
		}
		out = map[string]any{"principals": ps, "api_keys": ks}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// keygen writes a new Ed25519 private key to path (standard base64 of its
// 32-byte seed, mode 0600, never over an existing file) and prints its
// did:key and public key.
func keygen(path string, stdout io.Writer) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, base64.StdEncoding.EncodeToString(priv.Seed())); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]string{"did": receipt.DIDKey(pub), "public_key": base64.StdEncoding.EncodeToString(pub), "key_file": path})
}
