package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

// Config says where a court's data lives: the data directory, the store
// and the signing keys. Every subcommand that opens the store or the keys
// (serve, keys, principals) takes it from the same flags and environment
// through configFlags, validated once, and opens them through OpenStore and
// OpenKeyring, so that they all find the same data.
type Config struct {
	Data  string    // the data directory: the badger store by default (DATA/db), the keys by default, the compile cache
	Store storeSpec // zero: badger in Data/db
	Keys  string    // the directory holding keys/ed25519.json; "": Data
}

// configParts names the parts of Config besides the data directory that a
// subcommand uses, and so the flags it takes: a flag that would change
// nothing is refused, not ignored.
type configParts uint8

const (
	withStore configParts = 1 << iota // --store, $ASSAY_STORE
	withKeys                          // --keys, $ASSAY_KEYS
)

// configFlags registers --data and, as parts asks, --store and --keys on
// fs, each defaulting to its environment variable read with getenv, and
// returns the function that gives the Config they name once fs is parsed:
// the flag wins over the variable, the variable over the default (./data,
// badger in DATA/db, the keys in DATA).
//
// # Errors
//
// The returned function's: a store parseStore refuses, named by the flag
// or the variable it came from, and what Validate reports.
func configFlags(fs *flag.FlagSet, getenv func(string) string, parts configParts) func() (Config, error) {
	or := func(key, def string) string { return cmp.Or(getenv(key), def) }
	data := fs.String("data", or("ASSAY_DATA", "data"), "data `DIR` ($ASSAY_DATA): DIR/db the store, DIR/keys the signing keys, DIR/cache compiled checkers")
	var spec, keys string
	if parts&withStore != 0 {
		fs.StringVar(&spec, "store", getenv("ASSAY_STORE"), "the `STORE` ($ASSAY_STORE): badger:PATH, or postgres:URL to share one PostgreSQL database between nodes (default badger:DIR/db)")
	}
	if parts&withKeys != 0 {
		fs.StringVar(&keys, "keys", getenv("ASSAY_KEYS"), "signing keys `DIR` ($ASSAY_KEYS): the keys live in DIR/keys/ed25519.json; every node of one court names the same (default the data DIR)")
	}
	return func() (Config, error) {
		st, err := parseStore(spec)
		if err != nil {
			from := "$ASSAY_STORE"
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "store" {
					from = "--store"
				}
			})
			return Config{}, fmt.Errorf("%s: %w", from, err)
		}
		c := Config{Data: *data, Store: st, Keys: keys}
		if err := c.Validate(); err != nil {
			return Config{}, err
		}
		return c, nil
	}
}

// Validate reports what makes c unusable, without opening or creating
// anything: no data directory, a data or keys directory that is a file, a
// store of an unknown kind or without its directory or URL.
func (c Config) Validate() error {
	if c.Data == "" {
		return errors.New("--data: needs a directory")
	}
	for _, d := range []struct{ flag, dir string }{{"--data", c.Data}, {"--keys", c.Keys}} {
		if fi, err := os.Stat(d.dir); d.dir != "" && err == nil && !fi.IsDir() {
			return fmt.Errorf("%s: %s is a file, not a directory", d.flag, d.dir)
		}
	}
	switch c.Store.Kind {
	case "":
	case "badger", "postgres":
		if c.Store.Target == "" {
			return fmt.Errorf("--store: %s needs a target: want badger:PATH or postgres:URL", c.Store.Kind)
		}
	default:
		return fmt.Errorf("--store: unknown store %q: want badger:PATH or postgres:URL", c.Store.Kind)
	}
	return nil
}

// KeysDir is the directory whose keys/ed25519.json holds the signing keys:
// Keys, else Data.
func (c Config) KeysDir() string { return cmp.Or(c.Keys, c.Data) }

// OpenKeyring opens the signing keys in KeysDir, making the directory and
// a first key when there are none.
func (c Config) OpenKeyring() (*receipt.Keyring, error) {
	return receipt.OpenKeyring(receipt.KeyringConfig{Dir: c.KeysDir(), Now: time.Now, Rand: rand.Reader})
}

// ReadKeys returns the published keys in KeysDir without opening them for
// signing; receipt.ErrNoKeys when there are none.
func (c Config) ReadKeys() ([]receipt.Key, error) { return receipt.ReadKeys(c.KeysDir()) }

// OpenStore opens the store c names; log (nil discards) gets the store's
// warnings.
func (c Config) OpenStore(ctx context.Context, log *slog.Logger) (store.Store, error) {
	return c.openStore(ctx, log, nil)
}

// openStore is OpenStore reporting commits, group syncs and retries to m
// (nil: nowhere).
func (c Config) openStore(ctx context.Context, log *slog.Logger, m *metrics.Metrics) (store.Store, error) {
	bo := storage.Options{Logger: log}
	po := postgres.Options{Logger: log}
	if m != nil {
		bo.OnCommit, bo.OnSync, bo.OnRetry = m.ObserveCommit, m.ObserveSyncBatch, m.ObserveRetry
		po.OnCommit, po.OnRetry = m.ObserveCommit, m.ObserveRetry
	}
	switch c.Store.Kind {
	case "postgres":
		return postgres.Open(ctx, c.Store.Target, po)
	case "badger":
		return lockHint(storage.Open(c.Store.Target, bo))
	}
	return lockHint(storage.Open(filepath.Join(c.Data, "db"), bo))
}

// idsFor is how the services on st make the ids of new records
// (contracts, listings, matters). On badger they sort by when they were
// made (ident.NewID), so that the keys of the cases in flight sit
// together in the memtable; on PostgreSQL they are random
// (ident.RandomID), since its SERIALIZABLE transactions lock the index
// pages their reads visit, and ids made one after another share a page:
// time-ordered ids gave 4.5 retries a court case at 128 clients against
// 1.2, and half the cases a second.
func idsFor(st store.Store) func() string {
	if _, ok := st.(*postgres.Store); ok {
		return ident.RandomID
	}
	return ident.NewID
}

// lockHint adds to storage.ErrLocked what to do about it.
func lockHint(db *storage.DB, err error) (store.Store, error) {
	if errors.Is(err, storage.ErrLocked) {
		return nil, fmt.Errorf("%w: stop the process that holds it (an assay serve on the same data directory?) and try again, "+
			"or keep the store in PostgreSQL (--store postgres:URL), which several processes share", err)
	}
	if err != nil {
		return nil, err
	}
	return db, nil
}

// storeSpec names the store: badger in a directory, or a PostgreSQL
// database.
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

// limitsSpec is what --limits sets: the rate of each class of rows, per
// caller (api.Limits), and the bytes of new checkers an agent and an
// anonymous client address may store (replays.Quotas).
type limitsSpec struct {
	Rates  map[api.RateClass]api.Rate
	Quotas replays.Quotas
	// Decisions is api.Limits.ConcurrentDecisions: 0 is no bound.
	Decisions int
}

// defaultLimits are what assay serve runs with when --limits is not
// given: api.DefaultRates and replays.DefaultQuotas.
func defaultLimits() limitsSpec {
	return limitsSpec{Rates: maps.Clone(api.DefaultRates), Quotas: replays.DefaultQuotas, Decisions: api.DefaultConcurrentDecisions}
}

// The --limits names of the quotas.
const (
	limitAgentBytes   = "agent-bytes"
	limitAddressBytes = "address-bytes"
	limitDecisions    = "concurrent-decisions"
)

// String writes l as --limits takes it, every limit named.
func (l limitsSpec) String() string {
	var parts []string
	for _, c := range api.RateClasses {
		parts = append(parts, string(c)+"="+l.Rates[c].String())
	}
	parts = append(parts, limitAgentBytes+"="+l.Quotas.Agent.String(), limitAddressBytes+"="+l.Quotas.Address.String())
	decisions := "off"
	if l.Decisions > 0 {
		decisions = strconv.Itoa(l.Decisions)
	}
	return strings.Join(append(parts, limitDecisions+"="+decisions), ",")
}

// off lists the limits l turns off, for the start-up warning.
func (l limitsSpec) off() []string {
	var out []string
	for _, c := range api.RateClasses {
		if r := l.Rates[c]; r.N <= 0 || r.Per <= 0 {
			out = append(out, string(c))
		}
	}
	for _, q := range []struct {
		name string
		q    replays.Quota
	}{{limitAgentBytes, l.Quotas.Agent}, {limitAddressBytes, l.Quotas.Address}} {
		if q.q.Bytes <= 0 || q.q.Per <= 0 {
			out = append(out, q.name)
		}
	}
	if l.Decisions <= 0 {
		out = append(out, limitDecisions)
	}
	return out
}

// parseLimits parses --limits: "" (the defaults), "off" (no limit at
// all), or NAME=VALUE entries separated by commas, each changing one
// limit of the defaults: reads, writes, decisions and uploads take
// N/PERIOD (N requests in any PERIOD, a Go duration such as 1s, 1m or
// 24h, or a bare unit: s, m, h) and agent-bytes and address-bytes take
// SIZE/PERIOD (SIZE in bytes, or with KiB, MiB or GiB), and
// concurrent-decisions takes N (the decisions at once on the server); any
// of them takes off.
//
// # Errors
//
// An unknown name, a name given twice, or a value that is none of these.
func parseLimits(s string) (limitsSpec, error) {
	l := defaultLimits()
	switch strings.TrimSpace(s) {
	case "":
		return l, nil
	case "off":
		return limitsSpec{Rates: map[api.RateClass]api.Rate{}}, nil
	}
	seen := map[string]bool{}
	for _, entry := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || seen[name] {
			return limitsSpec{}, fmt.Errorf("want NAME=VALUE entries, each name once, not %q", entry)
		}
		seen[name] = true
		class := api.RateClass(name)
		switch {
		case slices.Contains(api.RateClasses, class):
			r, err := parseRate(value, parseCount)
			if err != nil {
				return limitsSpec{}, fmt.Errorf("%s: %w", name, err)
			}
			l.Rates[class] = api.Rate{N: int(r.n), Per: r.per}
		case name == limitAgentBytes || name == limitAddressBytes:
			r, err := parseRate(value, parseSize)
			if err != nil {
				return limitsSpec{}, fmt.Errorf("%s: %w", name, err)
			}
			q := replays.Quota{Bytes: r.n, Per: r.per}
			if name == limitAgentBytes {
				l.Quotas.Agent = q
			} else {
				l.Quotas.Address = q
			}
		case name == limitDecisions:
			if value == "off" {
				l.Decisions = 0
				continue
			}
			n, err := parseCount(value)
			if err != nil {
				return limitsSpec{}, fmt.Errorf("%s: %w", name, err)
			}
			l.Decisions = int(n)
		default:
			return limitsSpec{}, fmt.Errorf("unknown limit %q: the limits are reads, writes, decisions, uploads, %s, %s and %s", name, limitAgentBytes, limitAddressBytes, limitDecisions)
		}
	}
	return l, nil
}

// amountPer is an amount in a period, as --limits writes one; the zero
// amountPer is off.
type amountPer struct {
	n   int64
	per time.Duration
}

// parseRate parses AMOUNT/PERIOD, AMOUNT read by amount, or off.
func parseRate(s string, amount func(string) (int64, error)) (amountPer, error) {
	if s == "off" {
		return amountPer{}, nil
	}
	a, p, ok := strings.Cut(s, "/")
	if !ok {
		return amountPer{}, fmt.Errorf("want AMOUNT/PERIOD (100/1s, 16MiB/24h) or off, not %q", s)
	}
	n, err := amount(a)
	if err != nil {
		return amountPer{}, err
	}
	if p == "s" || p == "m" || p == "h" {
		p = "1" + p
	}
	per, err := time.ParseDuration(p)
	if err != nil || per <= 0 {
		return amountPer{}, fmt.Errorf("the period %q is not a positive duration such as 1s, 1m or 24h", p)
	}
	return amountPer{n, per}, nil
}

// parseCount parses a positive whole number of requests.
func parseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("the count %q is not a positive whole number", s)
	}
	return n, nil
}

// parseSize parses a positive size: bytes, or a whole number of KiB, MiB
// or GiB.
func parseSize(s string) (int64, error) {
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if t, ok := strings.CutSuffix(s, u.suffix); ok {
			s, unit = t, u.size
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("the size %q is not a positive whole number of B, KiB, MiB or GiB", s)
	}
	return n * unit, nil
}

// parseProxies parses --trusted-proxies: addresses or CIDR prefixes
// separated by commas; "" for none.
//
// # Errors
//
// An entry that is neither.
func parseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix (10.0.0.0/8)", e)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
