package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/adjudicate/jury"
	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
	"github.com/assayhq/assay/wasm"
)

func init() { register("serve", "run the escrow court's HTTP server", cmdServe) }

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// shutdownGrace bounds how long in-flight requests may take to finish
// after SIGINT or SIGTERM.
const shutdownGrace = 30 * time.Second

// lingerGrace bounds how long shutdown waits for idle connections to close.
const lingerGrace = 2 * time.Second

// newJuror builds the tier-1 jury from the environment (ASSAY_JURY_*, see
// adjudicate/jury). It returns a nil juror (semantic criteria escalate) and
// an empty name when none is configured.
func newJuror(getenv func(string) string) (j adjudicate.Juror, name, model string, err error) {
	p, err := jury.FromEnv(getenv)
	if err != nil || p == nil {
		return nil, "", "", err
	}
	return p, p.Host(), strings.Join(p.Models(), ","), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func cmdServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("ASSAY_ADDR", ":8080"), "listen `ADDR` ($ASSAY_ADDR); port 0 picks a free one")
	data := fs.String("data", envOr("ASSAY_DATA", "data"), "data `DIR` ($ASSAY_DATA): DIR/db the store, DIR/keys the signing keys, DIR/cache compiled checkers")
	mattersAuth := fs.String("matters-auth", envOr("ASSAY_MATTERS_AUTH", string(api.MattersSigned)), "judgment routes' `MODE` ($ASSAY_MATTERS_AUTH): signed (RFC 9421 principals) or open (identities from the body, local use only)")
	storeSpec := fs.String("store", envOr("ASSAY_STORE", ""), "the `STORE` ($ASSAY_STORE): badger:PATH, or postgres:URL to share one PostgreSQL database between nodes (default badger:DIR/db)")
	keysDir := fs.String("keys", envOr("ASSAY_KEYS", ""), "signing keys `DIR` ($ASSAY_KEYS): the keys live in DIR/keys/ed25519.json; every node of one court names the same (default the data DIR)")
	memoryBudget := fs.String("memory-budget", envOr("ASSAY_MEMORY_BUDGET", ""), "`MiB` checker runs may hold at once, snapshots included ($ASSAY_MEMORY_BUDGET); runs wait for room (default half the machine's memory)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay serve [--addr :8080] [--data ./data] [--store badger:PATH|postgres:URL] [--keys DIR] [--memory-budget MiB]")
		fmt.Fprintln(stderr, "\nServes the escrow court until SIGINT or SIGTERM, then lets in-flight requests")
		fmt.Fprintln(stderr, "finish and closes the store. ASSAY_OPERATOR_TOKEN enables POST /contracts/{id}/resolve.")
		fmt.Fprintln(stderr, "\nSeveral nodes serve one court from one PostgreSQL database: give each the same")
		fmt.Fprintln(stderr, "--store postgres:URL and the same --keys DIR (a shared directory). The data DIR")
		fmt.Fprintln(stderr, "still holds each node's compiled checkers.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "assay serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if m := api.MattersAuth(*mattersAuth); m != api.MattersSigned && m != api.MattersOpen {
		fmt.Fprintf(stderr, "assay serve: --matters-auth must be signed or open, not %q\n", *mattersAuth)
		return exitUsage
	}
	st, err := parseStore(*storeSpec)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --store: %v\n", err)
		return exitUsage
	}
	budget, err := parseMemoryBudget(*memoryBudget)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --memory-budget: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := serveConfig{Addr: *addr, Data: *data, Store: st, Keys: *keysDir, MattersAuth: api.MattersAuth(*mattersAuth), MemoryBudgetMiB: budget}
	if err := serveWith(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitNo
	}
	return exitOK
}

// storeSpec names the store serve opens: badger in a directory, or a
// PostgreSQL database.
type storeSpec struct {
	Kind   string // "badger" or "postgres"; "" for badger in DATA/db
	Target string // the directory, or the URL
}

// String describes the store for the log, without a password.
func (s storeSpec) String() string {
	switch s.Kind {
	case "postgres":
		return "postgres " + postgres.Redact(s.Target)
	case "badger":
		return "badger " + s.Target
	}
	return "badger"
}

// parseStore parses --store: badger:PATH, postgres:URL (also a bare
// postgres:// or postgresql:// URL), or "" for the default.
//
// # Errors
//
// Another scheme, an empty path or a URL that does not parse.
func parseStore(spec string) (storeSpec, error) {
	if spec == "" {
		return storeSpec{}, nil
	}
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		spec = "postgres:" + spec
	}
	kind, target, _ := strings.Cut(spec, ":")
	switch kind {
	case "badger":
		if target == "" {
			return storeSpec{}, errors.New("badger: needs a directory: badger:PATH")
		}
	case "postgres":
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "" {
			return storeSpec{}, errors.New("postgres: needs a URL: postgres:postgres://USER@HOST:PORT/DB")
		}
	default:
		return storeSpec{}, fmt.Errorf("unknown store %q: want badger:PATH or postgres:URL", kind)
	}
	return storeSpec{Kind: kind, Target: target}, nil
}

// serveConfig is what serve runs with.
type serveConfig struct {
	Addr        string
	Data        string    // the data directory: the badger store by default, the keys by default, the compile cache
	Store       storeSpec // zero: badger in Data/db
	Keys        string    // the directory holding keys/ed25519.json; "": Data
	MattersAuth api.MattersAuth
	// MemoryBudgetMiB is the sandbox's wasm.Config.MemoryBudgetMiB; 0 its
	// default.
	MemoryBudgetMiB int
}

// minMemoryBudgetMiB is the least --memory-budget: room for a reactor's
// start-up (wasm.InitMemoryMiB) beside the snapshot cache's quarter.
const minMemoryBudgetMiB = 2 * wasm.InitMemoryMiB

// parseMemoryBudget parses --memory-budget: "" (the default, 0) or a
// whole number of MiB, at least minMemoryBudgetMiB.
//
// # Errors
//
// Anything else, with what is wanted.
func parseMemoryBudget(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || n < minMemoryBudgetMiB {
		return 0, fmt.Errorf("want a whole number of MiB, at least %d, not %q", minMemoryBudgetMiB, s)
	}
	return int(n), nil
}

// openStore opens the store cfg names.
func openStore(ctx context.Context, cfg serveConfig, log *slog.Logger) (store.Store, error) {
	switch cfg.Store.Kind {
	case "postgres":
		return postgres.Open(ctx, cfg.Store.Target, postgres.Options{Logger: log})
	case "badger":
		return storage.Open(cfg.Store.Target, storage.Options{Logger: log})
	}
	return storage.Open(filepath.Join(cfg.Data, "db"), storage.Options{Logger: log})
}

// serveWith runs the server cfg describes until ctx ends.
func serveWith(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	addr, dir, mattersAuth := cfg.Addr, cfg.Data, cfg.MattersAuth
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	keysDir := cmp.Or(cfg.Keys, dir)
	// Nodes starting together on one empty key directory agree on one
	// first key: OpenKeyring links the file into place exclusively.
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: keysDir, Now: time.Now, Rand: rand.Reader})
	if err != nil {
		return err
	}
	db, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: filepath.Join(dir, "cache"), MemoryBudgetMiB: cfg.MemoryBudgetMiB})
	if err != nil {
		return err
	}
	defer func() {
		// Close stops running guests within a fuel slice each; do not
		// wait past a bound all the same.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			fmt.Fprintf(stderr, "assay serve: %v\n", err)
		}
	}()
	juror, jurorName, jurorModel, err := newJuror(os.Getenv)
	if err != nil {
		return fmt.Errorf("juror: %w", err)
	}
	court, err := escrow.New(ctx, escrow.Config{Store: db, Signer: keys, Sandbox: sb, Juror: juror, Now: time.Now})
	if err != nil {
		return err
	}
	replayQueue, err := queueFor(db)
	if err != nil {
		return err
	}
	stopReplays, err := startReplayWorker(ctx, replayQueue, db, sb, court.Checkers(), log)
	if err != nil {
		return err
	}
	defer stopReplays()
	// ASSAY_TEST_CLOCK=1 lets the operator move the market's clock forward
	// (POST /market/clock), so that end-to-end tests close windows.
	marketNow := time.Now
	var advance func(time.Duration)
	if os.Getenv("ASSAY_TEST_CLOCK") == "1" {
		var skew atomic.Int64
		marketNow = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		advance = func(d time.Duration) { skew.Add(int64(d)) }
		log.Warn("market test clock: POST /market/clock moves it forward; for tests only")
	}
	bazaar, err := market.New(market.Config{Store: db, Signer: keys, Sandbox: sb, Checkers: court.Checkers(), Now: marketNow})
	if err != nil {
		return err
	}
	judgments, err := matters.New(matters.Config{Store: db, Signer: keys, Now: time.Now})
	if err != nil {
		return err
	}
	log.Info("judgment matters", "auth", string(mattersAuth), "routes", "/api/v1/economic/matters")
	if mattersAuth == api.MattersOpen {
		log.Warn("judgment matters in open mode: identities come from request bodies, no signatures are checked; for local use only")
	}
	// inflight counts requests in handlers, so that shutdown waits for
	// them and not for connections that merely linger.
	var inflight atomic.Int64
	app := api.New(api.Config{
		Court: court, Keys: keys, OperatorToken: os.Getenv("ASSAY_OPERATOR_TOKEN"),
		JurorName: jurorName, JurorModel: jurorModel, Version: version, Logger: log,
		InFlight: &inflight, Matters: judgments, MattersAuth: mattersAuth,
		Market: bazaar, AdvanceMarketClock: advance, ReplayQueue: replayQueue,
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "assay: serving the escrow court on http://%s (data %s, store %s, key %s)\n", ln.Addr(), dir, cfg.Store, keys.Current().PublicKey)
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "assay: shutting down; letting in-flight requests finish")
	// fasthttp waits for every connection to go idle; one a client opened
	// and left silent can hold it up, so wait a little for that and then
	// only for requests still in handlers.
	if err := app.ShutdownWithTimeout(lingerGrace); err != nil {
		deadline := time.Now().Add(shutdownGrace)
		for inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := inflight.Load(); n > 0 {
			log.Error("shutdown: requests still running", "count", n)
		}
	}
	select {
	case <-served:
	case <-time.After(time.Second):
	}
	return nil
}
