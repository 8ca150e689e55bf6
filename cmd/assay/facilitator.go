package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func init() {
	register("facilitator", "run a local x402 facilitator with simulated USDC balances (tests, local use)", cmdFacilitator)
}

// fundFlags collects --fund ADDRESS=UNITS.
type fundFlags []string

func (f *fundFlags) String() string     { return strings.Join(*f, ",") }
func (f *fundFlags) Set(s string) error { *f = append(*f, s); return nil }

func cmdFacilitator(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("facilitator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("ASSAY_FACILITATOR_ADDR", "127.0.0.1:4020"), "listen `ADDR` ($ASSAY_FACILITATOR_ADDR); port 0 picks a free one")
	data := fs.String("data", envOr("ASSAY_FACILITATOR_DATA", "assay-facilitator"), "`DIR` of the balances' badger store ($ASSAY_FACILITATOR_DATA)")
	network := fs.String("network", envOr("ASSAY_X402_NETWORK", x402.BaseSepolia), "the CAIP-2 `NETWORK` it settles ($ASSAY_X402_NETWORK)")
	asset := fs.String("asset", envOr("ASSAY_X402_ASSET", ""), "the EIP-3009 token's contract `ADDRESS` ($ASSAY_X402_ASSET); USDC's on Base and Base Sepolia by default")
	var funds fundFlags
	fs.Var(&funds, "fund", "mint `ADDRESS=UNITS` at start (repeatable): the local faucet, also POST /fund")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay facilitator [flags]")
		fmt.Fprintln(stderr, "\nA local x402 facilitator: GET /supported, POST /verify, POST /settle, and its own")
		fmt.Fprintln(stderr, "POST /fund and GET /balances/<address>. It verifies EIP-3009 payments as a hosted")
		fmt.Fprintln(stderr, "facilitator does and settles them by moving simulated balances on a local ledger:")
		fmt.Fprintln(stderr, "it stands in for the hosted facilitator and the chain. No real money moves.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runFacilitator(ctx, *addr, *data, *network, *asset, funds, stdout); err != nil {
		fmt.Fprintf(stderr, "assay facilitator: %v\n", err)
		return exitNo
	}
	return exitOK
}

func runFacilitator(ctx context.Context, addr, data, network, asset string, funds []string, stdout io.Writer) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	f, err := x402.NewFacilitator(x402.FacilitatorConfig{Store: db, Network: network, Asset: asset})
	if err != nil {
		return err
	}
	for _, fund := range funds {
		address, units, ok := strings.Cut(fund, "=")
		if !ok {
			return fmt.Errorf("--fund %q: want ADDRESS=UNITS", fund)
		}
		b, err := f.Fund(ctx, address, units)
		if err != nil {
			return fmt.Errorf("--fund %q: %w", fund, err)
		}
		fmt.Fprintf(stdout, "assay: funded %s, balance %s\n", b.Address, b.Balance)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "assay: facilitator on http://%s (network %s, data %s; simulated balances, no chain)\n", ln.Addr(), network, data)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// railSpec is serve's choice of payment rail: --rail and the x402 flags.
type railSpec struct {
	Rail        string // "dev" (the default) or "x402"
	Facilitator string // the facilitator's URL
	Network     string // CAIP-2
	Asset       string // the EIP-3009 token's contract; USDC's by default
	PayTo       string // receives payments; the operator's address by default
	KeyFile     string // a file holding the operator's hex secp256k1 key
	Key         string // the key itself ($ASSAY_X402_OPERATOR_KEY), when no file
	RPC         string // a JSON-RPC endpoint of the network: asked whether an authorization was used
	// Crash is $ASSAY_TEST_CRASH, a test hook: POINT[:N],… ends the
	// process with SIGKILL the Nth time (1st by default) a payment
	// reaches the named point (rail.FaultPoints). check refuses it on a
	// network that carries real money.
	Crash string
	crash func(point string) // parsed by check
}

// railFlags registers serve's rail flags on fs.
func railFlags(fs *flag.FlagSet) *railSpec {
	r := &railSpec{Key: os.Getenv("ASSAY_X402_OPERATOR_KEY"), Crash: os.Getenv("ASSAY_TEST_CRASH")}
	fs.StringVar(&r.Rail, "rail", envOr("ASSAY_RAIL", "dev"), "the market's payment `RAIL` ($ASSAY_RAIL): dev (instant, simulated) or x402 (HTTP 402, USDC through a facilitator)")
	fs.StringVar(&r.Facilitator, "x402-facilitator", envOr("ASSAY_X402_FACILITATOR", ""), "x402: the facilitator's `URL` ($ASSAY_X402_FACILITATOR): a hosted one, or `assay facilitator` locally")
	fs.StringVar(&r.Network, "x402-network", envOr("ASSAY_X402_NETWORK", x402.BaseSepolia), "x402: the CAIP-2 `NETWORK` ($ASSAY_X402_NETWORK): eip155:84532 is Base Sepolia, eip155:8453 Base")
	fs.StringVar(&r.Asset, "x402-asset", envOr("ASSAY_X402_ASSET", ""), "x402: the EIP-3009 token's contract `ADDRESS` ($ASSAY_X402_ASSET); USDC's on Base and Base Sepolia by default")
	fs.StringVar(&r.PayTo, "x402-pay-to", envOr("ASSAY_X402_PAY_TO", ""), "x402: the `ADDRESS` payments go to ($ASSAY_X402_PAY_TO); the operator key's address by default")
	fs.StringVar(&r.RPC, "x402-rpc", envOr("ASSAY_X402_RPC", ""), "x402: a JSON-RPC `URL` of the network ($ASSAY_X402_RPC), asked whether a payment whose settlement answer was lost was made: a node's, or `assay facilitator`'s /rpc")
	fs.StringVar(&r.KeyFile, "x402-operator-key-file", envOr("ASSAY_X402_OPERATOR_KEY_FILE", ""), "x402: a `FILE` holding the operator's hex secp256k1 key, which signs refunds and payouts ($ASSAY_X402_OPERATOR_KEY_FILE; or the key itself in $ASSAY_X402_OPERATOR_KEY)")
	return r
}

// check refuses a spec that cannot work, before anything starts.
func (r *railSpec) check() error {
	switch r.Rail {
	case "dev", "x402":
	default:
		return fmt.Errorf("--rail must be dev or x402, not %q", r.Rail)
	}
	if r.Crash != "" {
		if r.Rail == "x402" && !testNetwork(r.Network) {
			return fmt.Errorf("$ASSAY_TEST_CRASH is a test hook, refused in production: %s carries real money (the hook runs on a test network: %s)", r.Network, strings.Join(testNetworkNames(), ", "))
		}
		crash, err := crashHook(r.Crash, os.Stderr)
		if err != nil {
			return err
		}
		r.crash = crash
	}
	if r.Rail == "dev" {
		return nil
	}
	if r.Facilitator == "" {
		return errors.New("--rail x402 needs --x402-facilitator: a hosted facilitator's URL, or `assay facilitator`'s")
	}
	if r.KeyFile != "" {
		b, err := os.ReadFile(r.KeyFile)
		if err != nil {
			return fmt.Errorf("--x402-operator-key-file: %w", err)
		}
		r.Key = strings.TrimSpace(string(b))
	}
	if r.Key == "" && r.PayTo == "" {
		return errors.New("--rail x402 needs an operator key (--x402-operator-key-file) or at least --x402-pay-to")
	}
	if r.Key != "" {
		if _, err := x402.ParseKey(r.Key); err != nil {
			return err
		}
	}
	return nil
}

// open returns the rail the spec names over db (nil for dev, the market's
// default) and the configuration of its intents: shared says that other
// processes may use db (PostgreSQL), so that a lease found at start-up
// may be a live node's.
func (r *railSpec) open(db store.Store, shared bool, now func() time.Time, log *slog.Logger) (rail.Rail, rail.PaymentsConfig, error) {
	intents := rail.PaymentsConfig{Exclusive: !shared, Counters: &rail.Counters{}}
	if r == nil || r.Rail != "x402" {
		return nil, intents, nil
	}
	intents.Fault = r.crash
	cfg := x402.Config{Store: db, Facilitator: &x402.Client{URL: r.Facilitator}, Network: r.Network, Asset: r.Asset,
		PayTo: r.PayTo, Currency: market.Currency, Now: now, Counters: intents.Counters, Fault: r.crash}
	if r.RPC != "" {
		cfg.Chain = &x402.RPC{URL: r.RPC}
	}
	if r.Key != "" {
		k, err := x402.ParseKey(r.Key)
		if err != nil {
			return nil, intents, err
		}
		cfg.Operator = k
	}
	x, err := x402.New(cfg)
	if err != nil {
		return nil, intents, err
	}
	op, ok := x.Operator()
	log.Info("market rail", "rail", "x402", "facilitator", r.Facilitator, "network", r.Network, "pay_to", x.PayTo().Hex(), "operator", op.Hex(), "rpc", r.RPC)
	if !ok {
		log.Warn("x402 rail without an operator key: refunds and withdrawals cannot be paid back on the rail and stay owed")
	}
	if r.RPC == "" {
		log.Warn("x402 rail without --x402-rpc: a payment whose settlement answer was lost is resolved by asking the facilitator to settle it again, which a hosted facilitator may refuse; such payments then wait for the operator")
	}
	if r.crash != nil {
		log.Warn("ASSAY_TEST_CRASH is set: the process kills itself at a named point of a payment; for tests only", "points", r.Crash)
	}
	return x, intents, nil
}

// testNetworks are the networks whose money is not real, where the test
// hook ASSAY_TEST_CRASH may run: Base Sepolia, Sepolia, and the local
// chains of Hardhat and Anvil.
var testNetworks = map[string]string{"eip155:84532": "Base Sepolia", "eip155:11155111": "Sepolia", "eip155:31337": "a local chain"}

func testNetwork(n string) bool { _, ok := testNetworks[n]; return ok }

func testNetworkNames() []string {
	var out []string
	for n, name := range testNetworks {
		out = append(out, n+" ("+name+")")
	}
	slices.Sort(out)
	return out
}

// crashHook parses ASSAY_TEST_CRASH, POINT[:N] separated by commas, into
// the hook that kills the process with SIGKILL, as a crash would, the Nth
// time a payment reaches POINT: nothing after it runs, not even deferred
// calls, and only what was already durable survives.
//
// # Errors
//
// A point rail.FaultPoints does not name, or an N that is not a positive
// integer.
func crashHook(spec string, stderr io.Writer) (func(string), error) {
	at := map[string]int64{}
	for _, part := range strings.Split(spec, ",") {
		point, n, found := strings.Cut(strings.TrimSpace(part), ":")
		if !slices.Contains(rail.FaultPoints, point) {
			return nil, fmt.Errorf("$ASSAY_TEST_CRASH: %q is no point; the points are %s", point, strings.Join(rail.FaultPoints, ", "))
		}
		at[point] = 1
		if found {
			k, err := strconv.ParseInt(n, 10, 64)
			if err != nil || k < 1 {
				return nil, fmt.Errorf("$ASSAY_TEST_CRASH: %q: the count after %s: is a positive integer", part, point)
			}
			at[point] = k
		}
	}
	var mu sync.Mutex
	seen := map[string]int64{}
	return func(point string) {
		want, ok := at[point]
		if !ok {
			return
		}
		mu.Lock()
		seen[point]++
		hit := seen[point] == want
		mu.Unlock()
		if !hit {
			return
		}
		fmt.Fprintf(stderr, "assay: ASSAY_TEST_CRASH: killed at %s\n", point)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the signal ends the process; nothing after the point runs
	}, nil
}

// withRail is a wire option: the market settles on r (nil: the dev rail),
// keeping the intents of a rail that settles remotely as intents says.
func withRail(r rail.Rail, intents rail.PaymentsConfig) wireOption {
	return func(w *wiring) { w.rail, w.intents = r, intents }
}

// withAuth sets how the court, the market and the judgment service
// authenticate.
func withAuth(court, market, matters principal.Mode) wireOption {
	return func(w *wiring) { w.court, w.market, w.matters = court, market, matters }
}

// wiring is what wire's options set: the market's rail, each service's
// mode and the upload quotas.
type wiring struct {
	rail                   rail.Rail
	intents                rail.PaymentsConfig
	court, market, matters principal.Mode
	// quotas are the checker uploads' (withQuotas); none when zero.
	quotas replays.Quotas
}

// wireOption adjusts what wire builds.
type wireOption func(*wiring)

// recoverTimeout bounds the start-up resolution of payments: a
// facilitator that does not answer must not keep the server from
// starting; what is left unresolved waits for the next tick.
const recoverTimeout = 30 * time.Second

// recoverPayments resolves, before the server listens, the payments a
// crash left unresolved on a rail that settles remotely, and the refunds
// still owed (market.Service.Recover), and logs what it did.
func recoverPayments(ctx context.Context, m *market.Service, log *slog.Logger) {
	if m.Intents() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	res, err := m.Recover(ctx)
	attrs := []any{"done", res.Done, "refunded", res.Refunded, "released", res.Released, "unresolved", res.Unresolved}
	switch {
	case err != nil:
		log.Error("payments left unresolved at start-up", append(attrs, "err", err)...)
	case res.Unresolved > 0:
		log.Warn("payments left unresolved at start-up: see GET /market/intents", attrs...)
	case res.Done+res.Refunded+res.Released > 0:
		log.Info("payments resolved at start-up", attrs...)
	}
}

// registerIntents exports how the market's payment intents stand: how
// many are unresolved now (read from the store at most every heldTTL),
// how many were resolved since start, by outcome, and how many attempts
// left one unresolved.
func registerIntents(m *metrics.Metrics, db store.Store, mk *market.Service) error {
	c := mk.Intents()
	if c == nil {
		return nil
	}
	pending := metrics.Cached(heldTTL, time.Now, func() (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return rail.CountUnresolved(ctx, db, mk.Rail().Name())
	})
	resolved := func(outcome string, n func(rail.CounterValues) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assay_payment_intents_resolved_total",
			Help:        "Payment intents resolved since start, by outcome: done (moved and completed once), refunded (moved, its purpose refused, paid back), released (never moved).",
			ConstLabels: prometheus.Labels{"outcome": outcome}}, func() float64 { return float64(n(c.Values())) })
	}
	return m.Register(
		metrics.GaugeFunc("assay_payment_intents_pending", "Payment intents not resolved yet (pending or refunding): GET /market/intents lists them.",
			func() float64 { n, _ := pending(); return float64(n) }),
		resolved("done", func(v rail.CounterValues) int64 { return v.Done }),
		resolved("refunded", func(v rail.CounterValues) int64 { return v.Refunded }),
		resolved("released", func(v rail.CounterValues) int64 { return v.Released }),
		metrics.CounterFunc("assay_payment_intents_failed_total", "Attempts that could not resolve a payment intent (the facilitator or the chain unreachable, an answer lost); each such intent waits for the next tick.",
			func() float64 { return float64(c.Values().Failed) }),
	)
}
