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
	"strings"
	"syscall"
	"time"

	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
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
}

// railFlags registers serve's rail flags on fs.
func railFlags(fs *flag.FlagSet) *railSpec {
	r := &railSpec{Key: os.Getenv("ASSAY_X402_OPERATOR_KEY")}
	fs.StringVar(&r.Rail, "rail", envOr("ASSAY_RAIL", "dev"), "the market's payment `RAIL` ($ASSAY_RAIL): dev (instant, simulated) or x402 (HTTP 402, USDC through a facilitator)")
	fs.StringVar(&r.Facilitator, "x402-facilitator", envOr("ASSAY_X402_FACILITATOR", ""), "x402: the facilitator's `URL` ($ASSAY_X402_FACILITATOR): a hosted one, or `assay facilitator` locally")
	fs.StringVar(&r.Network, "x402-network", envOr("ASSAY_X402_NETWORK", x402.BaseSepolia), "x402: the CAIP-2 `NETWORK` ($ASSAY_X402_NETWORK): eip155:84532 is Base Sepolia, eip155:8453 Base")
	fs.StringVar(&r.Asset, "x402-asset", envOr("ASSAY_X402_ASSET", ""), "x402: the EIP-3009 token's contract `ADDRESS` ($ASSAY_X402_ASSET); USDC's on Base and Base Sepolia by default")
	fs.StringVar(&r.PayTo, "x402-pay-to", envOr("ASSAY_X402_PAY_TO", ""), "x402: the `ADDRESS` payments go to ($ASSAY_X402_PAY_TO); the operator key's address by default")
	fs.StringVar(&r.KeyFile, "x402-operator-key-file", envOr("ASSAY_X402_OPERATOR_KEY_FILE", ""), "x402: a `FILE` holding the operator's hex secp256k1 key, which signs refunds and payouts ($ASSAY_X402_OPERATOR_KEY_FILE; or the key itself in $ASSAY_X402_OPERATOR_KEY)")
	return r
}

// check refuses a spec that cannot work, before anything starts.
func (r *railSpec) check() error {
	switch r.Rail {
	case "dev":
		return nil
	case "x402":
	default:
		return fmt.Errorf("--rail must be dev or x402, not %q", r.Rail)
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

// open returns the rail the spec names over db: nil for dev (the market's
// default).
func (r *railSpec) open(db store.Store, now func() time.Time, log *slog.Logger) (rail.Rail, error) {
	if r == nil || r.Rail != "x402" {
		return nil, nil
	}
	cfg := x402.Config{Store: db, Facilitator: &x402.Client{URL: r.Facilitator}, Network: r.Network, Asset: r.Asset,
		PayTo: r.PayTo, Currency: market.Currency, Now: now}
	if r.Key != "" {
		k, err := x402.ParseKey(r.Key)
		if err != nil {
			return nil, err
		}
		cfg.Operator = k
	}
	x, err := x402.New(cfg)
	if err != nil {
		return nil, err
	}
	op, ok := x.Operator()
	log.Info("market rail", "rail", "x402", "facilitator", r.Facilitator, "network", r.Network, "pay_to", x.PayTo().Hex(), "operator", op.Hex())
	if !ok {
		log.Warn("x402 rail without an operator key: refunds and withdrawals cannot be paid back on the rail and stay owed")
	}
	return x, nil
}

// withRail is a wire option: the market settles on r (nil: the dev rail).
func withRail(r rail.Rail) wireOption {
	return func(w *wiring) { w.rail = r }
}

// withAuth sets how the court, the market and the judgment service
// authenticate.
func withAuth(court, market, matters principal.Mode) wireOption {
	return func(w *wiring) { w.court, w.market, w.matters = court, market, matters }
}

// wiring is what wire's options set: the market's rail and each
// service's mode.
type wiring struct {
	rail                   rail.Rail
	court, market, matters principal.Mode
}

// wireOption adjusts what wire builds.
type wireOption func(*wiring)
