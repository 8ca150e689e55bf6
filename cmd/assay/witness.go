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
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
)

func init() {
	register("witness", "cosign transparency log checkpoints that extend the last one cosigned (C2SP tlog-witness)", cmdWitness)
}

// witnessKeyFile is the witness's key in its data directory.
type witnessKeyFile struct {
	Name string `json:"name"`
	Seed string `json:"seed"` // base64 of the Ed25519 seed
}

func cmdWitness(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("witness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("ASSAY_WITNESS_ADDR", "127.0.0.1:8090"), "listen `ADDR`; port 0 picks a free one")
	data := fs.String("data", envOr("ASSAY_WITNESS_DATA", "witness"), "the witness's `DIR`: its key (key.json) and the last checkpoint it cosigned of each log (state.json)")
	name := fs.String("name", envOr("ASSAY_WITNESS_NAME", ""), "the witness's key `NAME`, e.g. witness.example/w1; fixed when its key is made (default assay.local/witness)")
	var logs []string
	fs.Func("log", "witness the log whose signed-note verifier key is `VKEY` (GET /log/key shows it; repeatable)", func(v string) error {
		logs = append(logs, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay witness --log VKEY [--log VKEY]... [--addr 127.0.0.1:8090] [--data DIR] [--name NAME]")
		fmt.Fprintln(stderr, "\nServes C2SP tlog-witness: POST /add-checkpoint cosigns a log's checkpoint only when a")
		fmt.Fprintln(stderr, "consistency proof shows it extends the last one this witness cosigned of that log, and")
		fmt.Fprintln(stderr, "keeps that one on disk before it answers; GET /<sha256 of the origin>/checkpoint serves it.")
		fmt.Fprintln(stderr, "It prints its cosignature key, which a court takes as --log-witness VKEY@URL.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if len(logs) == 0 {
		fmt.Fprintln(stderr, "assay witness: give the log to witness: --log VKEY")
		return exitUsage
	}
	priv, wname, err := openWitnessKey(*data, *name)
	if err != nil {
		fmt.Fprintf(stderr, "assay witness: %v\n", err)
		return exitUsage
	}
	w, err := translog.NewWitnessServer(translog.WitnessConfig{Name: wname, Key: priv, Logs: logs,
		State: filepath.Join(*data, "state.json"), Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintf(stderr, "assay witness: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "assay witness: %v\n", err)
		return exitNo
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	fmt.Fprintf(stdout, "assay: witness %s on http://%s\nkey %s\n", wname, ln.Addr(), w.VerifierKey())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "assay witness: %v\n", err)
		return exitNo
	}
	return exitOK
}

// openWitnessKey loads the witness's key from dir/key.json, making it
// (mode 0600) when there is none.
func openWitnessKey(dir, name string) (ed25519.PrivateKey, string, error) {
	path := filepath.Join(dir, "key.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if name == "" {
			name = "assay.local/witness"
		}
		if err := receipt.ValidOrigin(name); err != nil {
			return nil, "", fmt.Errorf("--name: %w", err)
		}
		seed := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, "", err
		}
		out, _ := json.MarshalIndent(witnessKeyFile{Name: name, Seed: base64.StdEncoding.EncodeToString(seed)}, "", "  ")
		if err := translog.WriteFileAtomic(path, append(out, '\n'), 0o600); err != nil {
			return nil, "", err
		}
		return ed25519.NewKeyFromSeed(seed), name, nil
	} else if err != nil {
		return nil, "", err
	}
	var k witnessKeyFile
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	seed, err := base64.StdEncoding.DecodeString(k.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, "", fmt.Errorf("%s: seed is not base64 of 32 bytes", path)
	}
	if name != "" && name != k.Name {
		return nil, "", fmt.Errorf("%s holds the key of witness %q, not %q", path, k.Name, name)
	}
	return ed25519.NewKeyFromSeed(seed), k.Name, nil
}
