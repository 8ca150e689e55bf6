package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/adjudicate/jury"
	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/matters/appealcourt"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

func init() {
	register("serve", "serve the court, the market, judgment matters and /mcp over HTTP", cmdServe)
}

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// cores is GOMAXPROCS as the Go runtime chose it at start, before serve
// raises it: how many guests and compilations run at once.
var cores = runtime.GOMAXPROCS(0)

// badgerGCPercent is the garbage collector's target (GOGC) when the store
// is badger and the operator set none. Most of the heap is then badger's
// memtables, large and free of pointers, which the collector never needs
// to scan but which the default target (100) lets the heap double. The
// pages of that headroom are the process's most expensive: a page the
// heap grows into, or takes back after the runtime returned it to the
// system, costs a fault and a zeroing, and on a virtual machine that
// hands free memory back to its host, the host's as well. At 50, under
// `assay bench court --clients 128` on two cores (seven pairs of fresh
// servers), each pair served 2-24% more cases a second with 3-21% less
// server CPU a case, and the peak RSS was a quarter lower.
const badgerGCPercent = 50

// gcPercent is the collector's target serve sets for st: badgerGCPercent
// on badger, 0 (the runtime's own) on PostgreSQL, whose data is not in the
// process, or when the operator set GOGC.
func gcPercent(st storeSpec) int {
	if os.Getenv("GOGC") != "" || st.Kind == "postgres" {
		return 0
	}
	return badgerGCPercent
}

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
	config := configFlags(fs, os.Getenv, withStore|withKeys)
	mattersAuth := fs.String("matters-auth", envOr("ASSAY_MATTERS_AUTH", string(api.MattersSigned)), "judgment routes' `MODE` ($ASSAY_MATTERS_AUTH): signed (RFC 9421 principals) or open (identities from the body, local use only)")
	corsOrigins := fs.String("cors-origins", envOr("ASSAY_CORS_ORIGINS", api.DefaultCORSOrigins), "`ORIGINS` whose pages may call the public routes ($ASSAY_CORS_ORIGINS): * (any), a comma-separated list (https://a.example,https://b.example), or none; never the operator's routes, never with credentials")
	marketAuth := fs.String("market-auth", envOr("ASSAY_MARKET_AUTH", string(api.AuthSigned)), "the market's `MODE` ($ASSAY_MARKET_AUTH): signed (an agent's actions signed by it or made with its API key) or open (agents named in the body, local use only)")
	courtAuth := fs.String("court-auth", envOr("ASSAY_COURT_AUTH", string(api.AuthOpen)), "the court's `MODE` ($ASSAY_COURT_AUTH): open (the seed's court) or signed (a did:key's or registered principal's contracts moved only by the party)")
	publicURL := fs.String("public-url", envOr("ASSAY_PUBLIC_URL", ""), "the `URL[,URL]` clients reach this server at ($ASSAY_PUBLIC_URL): a signature made for any other origin (@authority) is refused with 401 authority_mismatch; default the listen address and loopback names (localhost, 127.0.0.1, [::1]) on any port")
	logFormat := fs.String("log-format", envOr("ASSAY_LOG_FORMAT", "text"), "the log's `FORMAT` ($ASSAY_LOG_FORMAT): text or json")
	logRequests, err1 := envBool("ASSAY_LOG_REQUESTS", true)
	withMetrics, err2 := envBool("ASSAY_METRICS", true)
	fs.BoolVar(&logRequests, "log-requests", logRequests, "log one line per request at info ($ASSAY_LOG_REQUESTS)")
	fs.BoolVar(&withMetrics, "metrics", withMetrics, "serve Prometheus metrics at GET /metrics ($ASSAY_METRICS)")
	debugAddr := fs.String("debug-addr", envOr("ASSAY_DEBUG_ADDR", ""), "serve net/http/pprof at `ADDR` ($ASSAY_DEBUG_ADDR), e.g. 127.0.0.1:6060, never on --addr; empty: off")
	rails := railFlags(fs)
	limits := fs.String("limits", "", "the rate `LIMITS` per caller, the upload quotas and the decisions at once: off, or NAME=VALUE,… changing the defaults ("+defaultLimits().String()+
		"); no environment variable: a server never inherits its limits from an environment")
	proxies := fs.String("trusted-proxies", "", "`ADDRS` (addresses or CIDR prefixes, comma-separated) of proxies whose X-Forwarded-For names the client; none: the peer is the client and the header is ignored; no environment variable")
	tlogs := logFlags(fs)
	memoryBudget := fs.String("memory-budget", envOr("ASSAY_MEMORY_BUDGET", ""), "`MiB` checker runs may hold at once, snapshots included ($ASSAY_MEMORY_BUDGET); runs wait for room (default half the machine's memory)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay serve [--addr :8080] [--data ./data] [--store badger:PATH|postgres:URL] [--keys DIR] [--memory-budget MiB]")
		fmt.Fprintln(stderr, "                   [--log-format text|json] [--log-requests=false] [--metrics=false] [--debug-addr 127.0.0.1:6060]")
		fmt.Fprintln(stderr, "                   [--limits off|NAME=N/PERIOD,...] [--trusted-proxies ADDRS]")
		fmt.Fprintln(stderr, "\nServes the escrow court until SIGINT or SIGTERM, then lets in-flight requests")
		fmt.Fprintln(stderr, "finish and closes the store. ASSAY_OPERATOR_TOKEN enables POST /contracts/{id}/resolve.")
		fmt.Fprintln(stderr, "\nSeveral nodes serve one court from one PostgreSQL database: give each the same")
		fmt.Fprintln(stderr, "--store postgres:URL and the same --keys DIR (a shared directory). The data DIR")
		fmt.Fprintln(stderr, "still holds each node's compiled checkers.")
		fmt.Fprintln(stderr, "\nOn badger, the garbage collector's target is GOGC=50 unless GOGC is set.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if m := api.MattersAuth(*mattersAuth); m != api.MattersSigned && m != api.MattersOpen {
		fmt.Fprintf(stderr, "assay serve: --matters-auth must be signed or open, not %q\n", *mattersAuth)
		return exitUsage
	}
	for _, m := range []struct{ flag, v string }{{"--market-auth", *marketAuth}, {"--court-auth", *courtAuth}} {
		if a := api.Auth(m.v); a != api.AuthSigned && a != api.AuthOpen {
			fmt.Fprintf(stderr, "assay serve: %s must be signed or open, not %q\n", m.flag, m.v)
			return exitUsage
		}
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitUsage
	}
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitUsage
	}
	if _, err := newLogger(*logFormat, io.Discard); err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitUsage
	}
	if err := rails.check(); err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitUsage
	}
	publicURLs, err := parsePublicURLs(*publicURL)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --public-url: %v\n", err)
		return exitUsage
	}
	budget, err := parseMemoryBudget(*memoryBudget)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --memory-budget: %v\n", err)
		return exitUsage
	}
	limitSpec, err := parseLimits(*limits)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --limits: %v\n", err)
		return exitUsage
	}
	trusted, err := parseProxies(*proxies)
	if err != nil {
		fmt.Fprintf(stderr, "assay serve: --trusted-proxies: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := serveConfig{Addr: *addr, Data: c.Data, Store: c.Store, Keys: c.Keys, MattersAuth: api.MattersAuth(*mattersAuth), CORSOrigins: *corsOrigins,
		MarketAuth: api.Auth(*marketAuth), CourtAuth: api.Auth(*courtAuth), MemoryBudgetMiB: budget,
		LogFormat: *logFormat, LogRequests: logRequests, Metrics: withMetrics, DebugAddr: *debugAddr, Rail: rails, PublicURLs: publicURLs,
		Limits: limitSpec, TrustedProxies: trusted, Log: tlogs}
	if err := serveWith(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "assay serve: %v\n", err)
		return exitNo
	}
	return exitOK
}

// serveConfig is what serve runs with.
type serveConfig struct {
	Addr        string
	Data        string    // the data directory: the badger store by default, the keys by default, the compile cache
	Store       storeSpec // zero: badger in Data/db
	Keys        string    // the directory holding keys/ed25519.json; "": Data
	MattersAuth api.MattersAuth
	// CORSOrigins is api.Config.CORSOrigins.
	CORSOrigins string
	// MarketAuth and CourtAuth are the market's and the court's modes.
	MarketAuth, CourtAuth api.Auth
	// MemoryBudgetMiB is the sandbox's wasm.Config.MemoryBudgetMiB; 0 its
	// default.
	MemoryBudgetMiB int
	// LogFormat is the log's format, "text" (also "") or "json";
	// LogRequests logs a line per request; Metrics serves GET /metrics.
	LogFormat   string
	LogRequests bool
	Metrics     bool
	// DebugAddr, when set, serves net/http/pprof on a listener of its own.
	DebugAddr string
	// Rail is the market's payment rail; nil or "dev": the dev rail.
	Rail *railSpec
	// Log is the transparency log's; nil: no log.
	Log *logSpec
	// PublicURLs are the origins signatures may be made for
	// (api.Config.PublicURLs); none: the listen address and loopback.
	PublicURLs []string
	// Limits are the rates per caller and the upload quotas (--limits);
	// the zero limitsSpec limits nothing.
	Limits limitsSpec
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (api.Limits.TrustedProxies).
	TrustedProxies []netip.Prefix
}

// parsePublicURLs parses --public-url: URLs separated by commas, each
// scheme://host[:port]; "" for the default.
//
// # Errors
//
// An entry that is no such URL.
func parsePublicURLs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, u := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(u))
	}
	_, err := api.ParsePublicURLs(out)
	return out, err
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

// config is the part of cfg that every subcommand touching the data shares.
func (cfg serveConfig) config() Config {
	return Config{Data: cfg.Data, Store: cfg.Store, Keys: cfg.Keys}
}

// serveWith runs the server cfg describes until ctx ends.
func serveWith(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	addr, dir, mattersAuth := cfg.Addr, cfg.Data, cfg.MattersAuth
	log, err := newLogger(cfg.LogFormat, stderr)
	if err != nil {
		return err
	}
	var m *metrics.Metrics
	if cfg.Metrics {
		m = metrics.New()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Nodes starting together on one empty key directory agree on one
	// first key: OpenKeyring links the file into place exclusively.
	keys, err := cfg.config().OpenKeyring()
	if err != nil {
		return err
	}
	db, err := cfg.config().openStore(ctx, log, m)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	if gc := gcPercent(cfg.Store); gc != 0 {
		debug.SetGCPercent(gc)
	}
	// Guests get the cores the Go runtime found (container limits
	// included), and the scheduler one more, so that requests and the
	// garbage collector always have a core's worth of scheduling however
	// many checkers spin. GOMAXPROCS set by the operator is left alone.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cores + 1)
	}
	sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: filepath.Join(dir, "cache"), MemoryBudgetMiB: cfg.MemoryBudgetMiB, Guests: cores})
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
	var signer escrow.Signer = keys
	if m != nil {
		signer = countingSigner{keys, m}
	}
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
	marketRail, intents, err := cfg.Rail.open(db, cfg.Store.Kind == "postgres", marketNow, log)
	if err != nil {
		return err
	}
	tlog, err := cfg.Log.open(cfg.config().KeysDir(), db, keys, log, m)
	if err != nil {
		return err
	}
	svc, err := wire(ctx, db, signer, sb, juror, marketNow, log, m, withRail(marketRail, intents),
		withAuth(cfg.CourtAuth, cfg.MarketAuth, mattersAuth), withQuotas(cfg.Limits.Quotas))
	if err != nil {
		return err
	}
	recoverPayments(ctx, svc.market, log)
	if m != nil {
		if err := registerIntents(m, db, svc.market); err != nil {
			return err
		}
	}
	defer startReplayWorker(ctx, svc.worker, log)()
	defer startLog(ctx, tlog, log)()
	log.Info("judgment matters", "auth", string(mattersAuth), "routes", "/api/v1/economic/matters")
	if mattersAuth == api.MattersOpen {
		log.Warn("judgment matters in open mode: identities come from request bodies, no signatures are checked; for local use only")
	}
	log.Info("market", "auth", string(cfg.MarketAuth), "routes", "/market, /mcp")
	if cfg.MarketAuth == api.AuthOpen {
		log.Warn("market in open mode: agents are named in request bodies, no signatures are checked, anyone may spend any wallet; for local use only")
	}
	log.Info("escrow court", "auth", string(cfg.CourtAuth), "routes", "/contracts")
	log.Info("limits", "per_caller", cfg.Limits.String(), "trusted_proxies", len(cfg.TrustedProxies))
	if off := cfg.Limits.off(); len(off) > 0 {
		log.Warn("limits off: any one caller may send these as fast as it likes; for tests only", "off", strings.Join(off, ","))
	}
	if m != nil {
		if err := registerRunner(m, svc.runner); err != nil {
			return err
		}
		if err := registerHeld(m, db); err != nil {
			return err
		}
		if err := registerWorker(m, svc.worker); err != nil {
			return err
		}
		if err := registerSandbox(m, sb); err != nil {
			return err
		}
	}
	if cfg.DebugAddr != "" {
		stopDebug, err := startDebug(cfg.DebugAddr, stdout, log)
		if err != nil {
			return err
		}
		defer stopDebug()
	}
	// inflight counts requests in handlers, so that shutdown waits for
	// them and not for connections that merely linger.
	var inflight atomic.Int64
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	publicURLs := cfg.PublicURLs
	if len(publicURLs) == 0 {
		publicURLs = []string{api.Loopback, "http://" + ln.Addr().String()}
	}
	log.Info("signatures", "public_urls", strings.Join(publicURLs, ","))
	acfg := api.Config{
		Court: svc.court, Checkers: svc.checkers, Market: svc.market, Matters: svc.matters, Replays: svc.replays,
		Identities: svc.identities, Replies: idem.NewKeeper(db), PublicURLs: publicURLs,
		Keys: keys, OperatorToken: os.Getenv("ASSAY_OPERATOR_TOKEN"),
		JurorName: jurorName, JurorModel: jurorModel, Version: version, Logger: log,
		InFlight: &inflight, CORSOrigins: cfg.CORSOrigins,
		AdvanceMarketClock: advance, ReplayQueue: svc.queue,
		Metrics: m, LogRequests: cfg.LogRequests,
		Limits: api.Limits{Rates: cfg.Limits.Rates, TrustedProxies: cfg.TrustedProxies, ConcurrentDecisions: cfg.Limits.Decisions},
	}
	if tlog != nil { // a nil *translog.Log is no log, not a log that is nil
		acfg.Log = tlog
	}
	app := api.New(acfg)
	printServing(stdout, ln.Addr(), m != nil, dir, cfg.Store.String(), keys.Current().PublicKey)
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

// services are the parts of one assay serve, wired once: one checker
// runner (one pool, one memo, one cache of checkers' bytes over the
// registry in the store), handed to the court, the market, POST /replays
// and the replay worker as the interfaces each declares.
type services struct {
	runner   *checkers.Runner
	court    *escrow.Service
	market   *market.Service
	matters  *matters.Service
	replays  *replays.Service
	checkers *replays.Library
	// identities is the server's one principal registry: the court, the
	// judgment service and the API check the same keys and nonces.
	identities *principal.Registry
	queue      store.Queue
	worker     *replays.Worker // nil when ASSAY_REPLAY_SLOTS=-1
}

// wire builds the services on db, signing with keys and running checkers
// in sb; the market's clock is marketNow. The worker is built, not started.
func wire(ctx context.Context, db store.Store, keys escrow.Signer, sb *wasm.Sandbox, juror adjudicate.Juror, marketNow func() time.Time, log *slog.Logger, m *metrics.Metrics, extra ...wireOption) (*services, error) {
	// The memo lives on the store: it survives restarts, and every node
	// on one store shares it. Checkers' bytes, named by their hash, are
	// read from the store once.
	opts := []checkers.RunnerOption{checkers.WithMemo(replays.NewMemo(db))}
	if m != nil {
		opts = append(opts, checkers.WithObserver(observeRun(m)))
	}
	runner := checkers.NewRunner(sb, replays.Checkers(db), opts...)
	var w wiring
	for _, o := range extra {
		o(&w)
	}
	reg := principal.New(db, time.Now)
	newID := idsFor(db)
	court, err := escrow.New(ctx, escrow.Config{Store: db, Signer: keys, Runner: runner, Juror: juror, Now: time.Now, NewID: newID, Auth: w.court, Identities: reg})
	if err != nil {
		return nil, err
	}
	queue, err := queueFor(db)
	if err != nil {
		return nil, err
	}
	worker, err := newReplayWorker(queue, runner, log)
	if err != nil {
		return nil, err
	}
	// Checker uploads and the market's Python sources are charged to
	// their uploaders' quotas in one library.
	library := replays.NewLibrary(db, runner, time.Now, replays.WithQuotas(w.quotas))
	bazaar, err := market.New(market.Config{Store: db, Signer: keys, Runner: runner, Now: marketNow, NewID: newID, Rail: w.rail, Intents: w.intents, Auth: w.market, Sources: library})
	if err != nil {
		return nil, err
	}
	judgments, err := matters.New(matters.Config{Store: db, Signer: keys, Now: time.Now, NewID: newID, Court: appealcourt.New(court), Auth: w.matters, Principals: reg})
	if err != nil {
		return nil, err
	}
	batches := replays.NewService(runner)
	if batches.Timeout, err = replayBatchTimeout(os.Getenv); err != nil {
		return nil, err
	}
	return &services{runner: runner, court: court, market: bazaar, matters: judgments, identities: reg,
		replays: batches, checkers: library, queue: queue, worker: worker}, nil
}

// withQuotas charges checker uploads and the market's Python sources to
// their uploaders' quotas.
func withQuotas(q replays.Quotas) wireOption {
	return func(w *wiring) { w.quotas = q }
}
