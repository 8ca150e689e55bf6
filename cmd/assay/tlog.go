package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/runtime/translog"
)

// logInclusion is the histogram of the time from a receipt to its
// inclusion proof, which assay bench court reads.
const logInclusion = "assay_log_inclusion_seconds"

// logSpec is how serve keeps its transparency log: the flags of
// logFlags.
type logSpec struct {
	On        bool
	Origin    string
	Witnesses []string
	Quorum    int
	Interval  time.Duration
	Lease     time.Duration
}

// logFlags registers serve's transparency log flags on fs.
func logFlags(fs *flag.FlagSet) *logSpec {
	s := &logSpec{On: true}
	if v, err := envBool("ASSAY_LOG", true); err == nil {
		s.On = v
	}
	fs.BoolVar(&s.On, "log", s.On, "keep the transparency log of every receipt, served under /log ($ASSAY_LOG)")
	fs.StringVar(&s.Origin, "log-origin", envOr("ASSAY_LOG_ORIGIN", ""), "the log's checkpoint `ORIGIN` ($ASSAY_LOG_ORIGIN), e.g. court.example/log; fixed when the log key is made (default assay.local/log/<random>)")
	fs.Func("log-witness", "a witness that must cosign each checkpoint, `VKEY@URL` (repeatable; $ASSAY_LOG_WITNESSES, comma-separated): its cosignature key, as `assay witness` prints it, and its URL", func(v string) error {
		s.Witnesses = append(s.Witnesses, v)
		return nil
	})
	if v := envOr("ASSAY_LOG_WITNESSES", ""); v != "" {
		s.Witnesses = strings.Split(v, ",")
	}
	quorum, _ := strconv.Atoi(envOr("ASSAY_LOG_QUORUM", "0"))
	fs.IntVar(&s.Quorum, "log-quorum", quorum, "how many of the witnesses must cosign a checkpoint before it is published ($ASSAY_LOG_QUORUM; 0: all)")
	fs.DurationVar(&s.Interval, "log-interval", translog.DefaultInterval, "how often the log integrates new receipts and publishes a checkpoint")
	fs.DurationVar(&s.Lease, "log-lease", translog.DefaultLease, "how long the node that integrates holds the log: another node, or this one started again, integrates once it runs out")
	return s
}

// open opens the log's key in keysDir and the log on db, or returns nil
// when the log is off. It turns logging on in keys. With m, the log's
// inclusion times are exported (logInclusion).
func (s *logSpec) open(keysDir string, db store.Store, keys *receipt.Keyring, log *slog.Logger, m *metrics.Metrics) (*translog.Log, error) {
	if s == nil || !s.On {
		return nil, nil
	}
	if s.Origin != "" {
		if err := receipt.ValidOrigin(s.Origin); err != nil {
			return nil, fmt.Errorf("--log-origin: %w", err)
		}
	}
	if s.Interval <= 0 {
		return nil, fmt.Errorf("--log-interval must be positive, not %s", s.Interval)
	}
	if s.Lease <= 0 {
		return nil, fmt.Errorf("--log-lease must be positive, not %s", s.Lease)
	}
	var ws []translog.Witness
	for _, spec := range s.Witnesses {
		w, err := translog.ParseWitness(strings.TrimSpace(spec))
		if err != nil {
			return nil, fmt.Errorf("--log-witness: %w", err)
		}
		ws = append(ws, w)
	}
	lkey, err := receipt.OpenLogKey(receipt.LogKeyConfig{Dir: keysDir, Origin: s.Origin, Rand: rand.Reader})
	if err != nil {
		return nil, err
	}
	cfg := translog.Config{Store: db, Key: lkey, Witnesses: ws, Quorum: s.Quorum, Interval: s.Interval, Lease: s.Lease, Logger: log}
	if m != nil {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: logInclusion,
			Help:    "Seconds from a receipt stored to a published checkpoint of the transparency log that includes it: when its inclusion proof can be served.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30}})
		if err := m.Register(h); err != nil {
			return nil, err
		}
		cfg.Included = func(d time.Duration) { h.Observe(d.Seconds()) }
	}
	l, err := translog.New(cfg)
	if err != nil {
		return nil, err
	}
	keys.LogReceipts()
	return l, nil
}

// startLog runs l's integrator until the returned stop is called, which
// waits for its round to end. A nil l does nothing.
func startLog(ctx context.Context, l *translog.Log, log *slog.Logger) (stop func()) {
	if l == nil {
		return func() {}
	}
	log.Info("transparency log", "origin", l.Origin(), "key", l.VerifierKey(), "routes", "/log/checkpoint, /log/tile/…, /log/key")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
