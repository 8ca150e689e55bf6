package translog

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Defaults of Config.
const (
	DefaultInterval = 250 * time.Millisecond
	DefaultLease    = 10 * time.Second
	// DefaultBatch is the most entries one integration transaction takes.
	DefaultBatch = 1000
)

// errNotLeader is what an integration transaction returns when another
// node's lease holds: it wrote nothing.
var errNotLeader = errors.New("translog: another node integrates")

// Config configures New. Store and Key are required.
type Config struct {
	Store store.Store
	// Key signs the checkpoints; its name is the log's origin.
	Key *receipt.LogKey
	// Node names this node in the lease; random when empty.
	Node string
	// Interval is how often Run looks for pending entries: an entry is
	// in a published checkpoint about Interval after its receipt was
	// stored, plus the witnesses' round trips. DefaultInterval when zero.
	Interval time.Duration
	// Lease is how long a node integrates for another node to wait before
	// it takes over: a dead integrator delays the log by at most this.
	// DefaultLease when zero.
	Lease time.Duration
	// Batch is the most entries one transaction integrates; DefaultBatch
	// when zero.
	Batch int
	// Witnesses are asked to cosign every checkpoint before it is
	// published; Quorum of them must (all of them when zero).
	Witnesses []Witness
	Quorum    int
	// Now is the lease's clock; time.Now when nil.
	Now func() time.Time
	// Logger gets a line per published checkpoint and every failure; none
	// when nil.
	Logger *slog.Logger
	// Client asks the witnesses; one with a 10-second timeout when nil.
	Client *http.Client
	// Integrated, when set, is called after each integration transaction
	// committed, with the node and the tree's size before and after.
	Integrated func(node string, from, to int64)
	// Included, when set, is called for each entry this node integrated,
	// once a checkpoint that includes it is published, with how long
	// after its receipt was signed (by the keyring's clock, as Now reads
	// it): the time from a receipt to its inclusion proof.
	Included func(waited time.Duration)
}

// Log is one court's transparency log on its store: it integrates pending
// entries (Run), serves checkpoints, tiles and entry bundles, and proves
// receipts' inclusion.
type Log struct {
	cfg  Config
	vkey string

	mu        sync.Mutex // serialises rounds of this node
	published []byte     // the last checkpoint this node read or published, for Checkpoint's cache
	// stored are when the receipts this node integrated and has not
	// seen published yet were signed, for Config.Included; under mu.
	stored []time.Time
	// rounds counts this node's rounds, for fullEvery; leading: this
	// node's last round found no other node's lease; under mu.
	rounds  int
	leading bool
}

// New returns the log of cfg.Store.
//
// # Errors
//
// A witness quorum larger than the witnesses.
func New(cfg Config) (*Log, error) {
	if cfg.Store == nil || cfg.Key == nil {
		panic("translog: Config needs Store and Key")
	}
	if cfg.Node == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		cfg.Node = hex.EncodeToString(b[:])
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Quorum == 0 {
		cfg.Quorum = len(cfg.Witnesses)
	}
	if cfg.Quorum < 0 || cfg.Quorum > len(cfg.Witnesses) {
		return nil, fmt.Errorf("translog: a quorum of %d out of %d witnesses", cfg.Quorum, len(cfg.Witnesses))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Log{cfg: cfg, vkey: cfg.Key.VerifierKey()}, nil
}

// Origin is the log's checkpoint origin.
func (l *Log) Origin() string { return l.cfg.Key.Origin() }

// VerifierKey is the signed-note key that verifies the log's checkpoints.
func (l *Log) VerifierKey() string { return l.vkey }

// Witnesses are the witnesses the log asks, and Quorum how many must
// cosign.
func (l *Log) Witnesses() ([]Witness, int) { return l.cfg.Witnesses, l.cfg.Quorum }

// Run integrates pending entries and publishes checkpoints every
// Interval until ctx ends, logging what fails and trying again next time.
// It returns ctx's error.
func (l *Log) Run(ctx context.Context) error {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := l.Round(ctx); err != nil && ctx.Err() == nil {
			l.cfg.Logger.Error("transparency log", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Round integrates every entry pending now, in batches, then signs and
// publishes a checkpoint of the tree if it grew past the published one
// (with the witnesses' cosignatures when the log has witnesses). It
// returns the size of the checkpoint published now, or 0 when none was:
// nothing new, or another node's lease holds.
func (l *Log) Round(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	full := !l.leading || l.rounds%fullEvery == 0
	l.rounds++
	for {
		n, err := l.integrate(ctx, full)
		if errors.Is(err, errNotLeader) {
			l.leading = false
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		l.leading = true
		if n < l.cfg.Batch {
			break
		}
	}
	return l.publish(ctx)
}

// Where a round looks for pending entries. A pending key is deleted once
// integrated, and on badger a deleted key stays in the tables until a
// compaction drops it: a scan of every pending key walks every deletion
// not yet compacted, milliseconds under load, four times a second. Keys
// are ordered by when their receipts were signed (receipt.Put), by the
// keyring's clock, which Now reads too; so most rounds look only in the
// keys of the seconds around now (recent), each second a prefix of its
// own that a scan seeks straight to, and every fullEvery-th round, the
// first and the first after another node's lease, looks in all of them: a receipt whose transaction
// committed more than recent after it was signed, one signed by another
// node whose clock is off by more, or one left by a crash, is integrated
// by the next such round (a minute at DefaultInterval). A look in all of
// them took 40 ms under load.
const (
	recent    = 5 * time.Second
	fullEvery = 240
)

// pending lists up to Batch pending keys, oldest first: every pending
// key when full, else those of the recent seconds. It looks at none while
// another node's lease holds (errNotLeader): that node integrates them.
func (l *Log) pending(ctx context.Context, full bool) ([]string, error) {
	var keys []string
	collect := func(k string, _ []byte) error {
		keys = append(keys, k)
		if len(keys) == l.cfg.Batch {
			return store.ErrStop
		}
		return nil
	}
	err := l.cfg.Store.View(ctx, func(tx store.Tx) error {
		keys = keys[:0]
		if held, err := l.heldByOther(tx); err != nil || held {
			return cmp.Or(err, errNotLeader)
		}
		if full {
			return tx.Scan(receipt.PendingPrefix, false, collect)
		}
		now := l.cfg.Now()
		for sec := now.Add(-recent).Unix(); sec <= now.Unix()+1 && len(keys) < l.cfg.Batch; sec++ {
			if err := tx.Scan(receipt.PendingSecond(sec), false, collect); err != nil {
				return err
			}
		}
		return nil
	})
	return keys, err
}

// integrate integrates one batch of pending entries, and returns how many
// pending keys it took.
func (l *Log) integrate(ctx context.Context, full bool) (int, error) {
	keys, err := l.pending(ctx, full)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	var from, to int64
	var stored []time.Time
	err = l.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := l.hold(tx); err != nil {
			return err
		}
		st, err := readState(tx)
		if err != nil {
			return err
		}
		from = st.Size
		stored = stored[:0]
		if to, err = l.append(tx, st, keys, &stored); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if l.cfg.Included != nil {
		l.stored = append(l.stored, stored...)
	}
	if l.cfg.Integrated != nil {
		l.cfg.Integrated(l.cfg.Node, from, to)
	}
	return len(keys), nil
}

// hold checks in tx that no other node's lease holds, and takes or
// renews this node's.
func (l *Log) hold(tx store.Tx) error {
	if held, err := l.heldByOther(tx); err != nil || held {
		return cmp.Or(err, errNotLeader)
	}
	return tx.Set(keyLease, marshal(lease{Node: l.cfg.Node, Until: l.cfg.Now().Add(l.cfg.Lease).UnixNano()}))
}

// heldByOther reports whether another node's lease holds now.
func (l *Log) heldByOther(tx store.Tx) (bool, error) {
	var cur lease
	err := store.GetJSON(tx, keyLease, &cur)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return cur.Node != l.cfg.Node && l.cfg.Now().UnixNano() < cur.Until, nil
}

// append integrates the entries under keys (those still pending) into the
// tree st, and returns the tree's new size; it adds when each entry it
// appended was stored to stored.
func (l *Log) append(tx store.Tx, st state, keys []string, stored *[]time.Time) (int64, error) {
	hr := newHashReader(tx)
	n := st.Size
	for _, k := range keys {
		entry, err := tx.Get(k)
		if errors.Is(err, store.ErrNotFound) {
			continue // integrated already
		} else if err != nil {
			return 0, err
		}
		if err := tx.Delete(k); err != nil {
			return 0, err
		}
		e, err := receipt.ParseEntry(entry)
		if err != nil {
			l.cfg.Logger.Error("transparency log: a pending entry that is not one is dropped", "key", k, "err", err)
			continue
		}
		rk := receiptKey(e.ID, tlog.RecordHash(entry))
		if _, err := tx.Get(rk); err == nil {
			continue // the same receipt stored twice: logged once
		} else if !errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		if err := tx.Set(rk, []byte(strconv.FormatInt(n, 10))); err != nil {
			return 0, err
		}
		hashes, err := tlog.StoredHashes(n, entry, hr)
		if err != nil {
			return 0, err
		}
		base := tlog.StoredHashIndex(0, n)
		for i, h := range hashes {
			hr.fresh[base+int64(i)] = h
		}
		if err := tx.Set(entryKey(n), entry); err != nil {
			return 0, err
		}
		if e.Supersedes != "" {
			if err := tx.Set(supersededPrefix(e.Supersedes)+pad(n, 20), []byte(e.ID)); err != nil {
				return 0, err
			}
		}
		if at, ok := receipt.PendingSigned(k); ok {
			*stored = append(*stored, at)
		}
		n++
	}
	if n == st.Size {
		return n, nil
	}
	for _, t := range tlog.NewTiles(TileHeight, st.Size, n) {
		data, err := tlog.ReadTileData(t, hr)
		if err != nil {
			return 0, err
		}
		if err := tx.Set(tileKey(t.L, t.N), data); err != nil {
			return 0, err
		}
	}
	root, err := tlog.TreeHash(n, hr)
	if err != nil {
		return 0, err
	}
	return n, tx.Set(keyState, marshal(state{Size: n, Hash: root}))
}

// indexOf is the index in a key of supersededPrefix.
func indexOf(key string) (int64, error) {
	i := strings.LastIndexByte(key, '/')
	var n int64
	_, err := fmt.Sscanf(key[i+1:], "%d", &n)
	return n, err
}
