package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// newLogger returns serve's logger writing to w in format "text" or
// "json", at info.
//
// # Errors
//
// Any other format.
func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// envBool reads the boolean $key (strconv.ParseBool: 1, t, true, 0, f,
// false, …), def when unset.
//
// # Errors
//
// A value ParseBool refuses, naming the variable.
func envBool(key string, def bool) (bool, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("$%s must be true or false, not %q", key, v)
	}
	return b, nil
}

// countingSigner signs with Keyring and counts each receipt by kind.
type countingSigner struct {
	*receipt.Keyring
	m *metrics.Metrics
}

// Sign signs with the keyring and counts the receipt when it was signed.
func (s countingSigner) Sign(kind, id string, subject any) (receipt.Receipt, error) {
	r, err := s.Keyring.Sign(kind, id, subject)
	if err == nil {
		s.m.ReceiptSigned(kind)
	}
	return r, err
}

// registerRunner exports what r counts: runs started in the sandbox, its
// memo's hits and misses and size, and its pool's size.
func registerRunner(m *metrics.Metrics, r *checkers.Runner) error {
	if r == nil {
		return nil
	}
	cs := []prometheus.Collector{
		metrics.CounterFunc("assay_checker_runs_started_total", "Checker runs started in the sandbox by the court's runner (memo hits are not runs).",
			func() float64 { return float64(r.Runs()) }),
		metrics.GaugeFunc("assay_checker_pool_workers", "Workers in the runner's pool: how many checker runs a batch runs at once.",
			func() float64 { return float64(r.Pool().Size()) }),
	}
	if memo := r.Memo(); memo != nil {
		cs = append(cs,
			metrics.CounterFunc("assay_replay_memo_hits_total", "Checker runs answered from the memo of outcomes (in memory or in the store).",
				func() float64 { return float64(memo.Stats().Hits) }),
			metrics.CounterFunc("assay_replay_memo_misses_total", "Checker runs the memo of outcomes did not hold.",
				func() float64 { return float64(memo.Stats().Misses) }),
			metrics.GaugeFunc("assay_replay_memo_entries", "Outcomes the memo holds in memory.",
				func() float64 { return float64(memo.Stats().Entries) }),
			metrics.GaugeFunc("assay_replay_memo_bytes", "Bytes of outcomes the memo holds in memory.",
				func() float64 { return float64(memo.Stats().Bytes) }),
		)
	}
	return m.Register(cs...)
}

// registerSandbox exports what sb holds and runs: reactor snapshots
// cached (entries and bytes), and guests and compilations running against
// their slots.
func registerSandbox(m *metrics.Metrics, sb *wasm.Sandbox) error {
	stat := func(f func(wasm.Stats) float64) func() float64 { return func() float64 { return f(sb.Stats()) } }
	return m.Register(
		metrics.GaugeFunc("assay_snapshot_cache_entries", "Reactor snapshots the sandbox holds.",
			stat(func(s wasm.Stats) float64 { return float64(s.SnapshotEntries) })),
		metrics.GaugeFunc("assay_snapshot_cache_bytes", "Bytes of the memory images of the reactor snapshots the sandbox holds.",
			stat(func(s wasm.Stats) float64 { return float64(s.SnapshotBytes) })),
		metrics.GaugeFunc("assay_sandbox_guests_running", "Checker guests running now, of assay_sandbox_slots at most.",
			stat(func(s wasm.Stats) float64 { return float64(s.Guests) })),
		metrics.GaugeFunc("assay_sandbox_compiles_running", "Checker compilations running now, of assay_sandbox_slots at most.",
			stat(func(s wasm.Stats) float64 { return float64(s.Compiles) })),
		metrics.GaugeFunc("assay_sandbox_slots", "How many guests, and how many compilations, may run at once.",
			stat(func(s wasm.Stats) float64 { return float64(s.Slots) })),
	)
}

// observeRun returns what records a checker run in m: the hook a runner
// calls after each run in the sandbox (memo hits are not runs), with the
// checker's kind ("" is wasm), the sandbox's engine and the outcome.
// wire gives it to the server's runner (checkers.WithObserver).
func observeRun(m *metrics.Metrics) func(kind, engine string, o wasm.Outcome) {
	return func(kind, engine string, o wasm.Outcome) {
		m.ObserveRun(cmp.Or(kind, checkers.KindWasm), string(o.Kind), engine, o.FuelUsed, time.Duration(o.WallNS))
	}
}

// registerWorker exports what this node's replay worker counts: jobs
// claimed (leases taken), completed, lost (a result refused because the
// lease ran out and another worker retook the job), retried after a
// store error, and released at shutdown.
func registerWorker(m *metrics.Metrics, w *replays.Worker) error {
	if w == nil {
		return nil
	}
	stat := func(f func(replays.WorkerStats) int64) func() float64 {
		return func() float64 { return float64(f(w.Stats())) }
	}
	return m.Register(
		metrics.CounterFunc("assay_replay_jobs_claimed_total", "Replay jobs this node's worker claimed from the queue (leases taken).",
			stat(func(s replays.WorkerStats) int64 { return s.Claimed })),
		metrics.CounterFunc("assay_replay_jobs_completed_total", "Replay jobs whose result this node's worker recorded.",
			stat(func(s replays.WorkerStats) int64 { return s.Completed })),
		metrics.CounterFunc("assay_replay_jobs_lost_total", "Replay results refused because the lease ran out first and the job was retaken.",
			stat(func(s replays.WorkerStats) int64 { return s.Lost })),
		metrics.CounterFunc("assay_replay_jobs_retried_total", "Replay jobs given back to the queue after a transient store error.",
			stat(func(s replays.WorkerStats) int64 { return s.Retried })),
		metrics.CounterFunc("assay_replay_jobs_released_total", "Replay jobs released unrun or cut short when the worker stopped.",
			stat(func(s replays.WorkerStats) int64 { return s.Abandoned })),
	)
}

// heldTTL bounds how often a scrape reads the ledger's hold accounts.
const heldTTL = 2 * time.Second

// holdShards starts the keys of the hold accounts' balance counters
// (storage/doc.go: ledger/shard/<account>/<currency>/<n>; the accounts are
// hold:escrow:<contract>, hold:market:<purchase>, hold:bond:<listing>).
const holdShards = "ledger/shard/hold:"

// heldIn reads, per service and currency, the money the hold accounts
// hold: the sum of their balance counters, one scan over the counters of
// the hold accounts (never the legs).
func heldIn(ctx context.Context, db store.Store) ([]metrics.Holding, error) {
	type key struct{ service, hold, currency string }
	sums := map[key]int64{}
	err := db.View(ctx, func(tx store.Tx) error {
		return tx.Scan(holdShards, false, func(k string, v []byte) error {
			parts := strings.Split(strings.TrimPrefix(k, "ledger/shard/"), "/")
			if len(parts) != 3 {
				return nil
			}
			var service, hold string
			switch acct := parts[0]; {
			case strings.HasPrefix(acct, "hold:escrow:"):
				service, hold = "escrow", "payment"
			case strings.HasPrefix(acct, "hold:market:"):
				service, hold = "market", "payment"
			case strings.HasPrefix(acct, "hold:bond:"):
				service, hold = "market", "bond"
			default:
				return nil
			}
			var n int64
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("ledger counter %s: %w", k, err)
			}
			sums[key{service, hold, parts[1]}] += n
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	hs := make([]metrics.Holding, 0, len(sums))
	for k, n := range sums {
		hs = append(hs, metrics.Holding{Service: k.service, Hold: k.hold, Currency: k.currency, Amount: n})
	}
	return hs, nil
}

// registerHeld exports assay_money_held, read from db at most every
// heldTTL.
func registerHeld(m *metrics.Metrics, db store.Store) error {
	read := metrics.Cached(heldTTL, time.Now, func() ([]metrics.Holding, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return heldIn(ctx, db)
	})
	return m.Register(metrics.HeldCollector(read))
}

// startDebug serves net/http/pprof on its own listener at addr, never on
// the public port. The returned function stops it.
func startDebug(addr string, stdout io.Writer, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("debug listener", "err", err)
		}
	}()
	fmt.Fprintf(stdout, "assay: profiling (net/http/pprof) on http://%s/debug/pprof/\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}
