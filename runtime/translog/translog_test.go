package translog_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/runtime/translog"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// court is a store, a keyring that logs and the log's key, in a fresh
// directory.
type court struct {
	st   store.Store
	keys *receipt.Keyring
	lkey *receipt.LogKey
	dir  string
}

func newCourt(tb testing.TB, st store.Store) *court {
	tb.Helper()
	dir := tb.TempDir()
	if st == nil {
		db, err := storage.Open(filepath.Join(dir, "db"), storage.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		st = db
	}
	return openCourt(tb, st, dir)
}

func openCourt(tb testing.TB, st store.Store, dir string) *court {
	tb.Helper()
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: dir, Now: func() time.Time { return epoch }, Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		tb.Fatal(err)
	}
	keys.LogReceipts()
	lkey, err := receipt.OpenLogKey(receipt.LogKeyConfig{Dir: dir, Origin: "assay.test/log", Rand: rand.NewChaCha8([32]byte{2})})
	if err != nil {
		tb.Fatal(err)
	}
	return &court{st: st, keys: keys, lkey: lkey, dir: dir}
}

func (c *court) log(tb testing.TB, mod ...func(*translog.Config)) *translog.Log {
	tb.Helper()
	// The log reads the clock the receipts were stored by, as a court's
	// log does: it looks for pending entries around now (recent).
	cfg := translog.Config{Store: c.st, Key: c.lkey, Now: func() time.Time { return epoch }}
	for _, m := range mod {
		m(&cfg)
	}
	l, err := translog.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// put signs and stores n receipts, each in its own transaction, and
// returns their stored bytes by id.
func (c *court) put(tb testing.TB, prefix string, n int) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	for i := range n {
		id := receipt.ID(prefix, fmt.Sprint(i))
		r, err := c.keys.Sign(receipt.KindVerdict, id, map[string]any{"contract_id": prefix, "n": i})
		if err != nil {
			tb.Fatal(err)
		}
		err = c.st.Update(context.Background(), func(tx store.Tx) error {
			b, err := receipt.Put(tx, r, epoch.Add(time.Duration(i)), "did:example:buyer")
			out[id] = b
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// serve serves the log over HTTP as C2SP tlog-tiles at <url>/.
func serve(tb testing.TB, l *translog.Log) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b []byte
		var err error
		if r.URL.Path == "/checkpoint" {
			b, err = l.Checkpoint(r.Context())
		} else {
			b, err = l.Tile(r.Context(), strings.TrimPrefix(r.URL.Path, "/"))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(b)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func round(tb testing.TB, l *translog.Log) int64 {
	tb.Helper()
	n, err := l.Round(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestLog_Round integrates receipts across several tiles, and a client
// written against the C2SP formats (torchwood's, over HTTP) finds each
// receipt's entry, at the index the log gives, in a tree whose checkpoint
// the log key signed; the tlog-proof the log gives verifies too.
func TestLog_Round(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	stored := c.put(t, "esc-1", 300)
	if n := round(t, l); n != 300 {
		t.Fatalf("published size %d, want 300", n)
	}
	more := c.put(t, "esc-2", 270)
	if n := round(t, l); n != 570 {
		t.Fatalf("published size %d, want 570", n)
	}
	if n := round(t, l); n != 0 {
		t.Fatalf("a round with nothing pending published %d", n)
	}
	for k, v := range more {
		stored[k] = v
	}
	ctx := context.Background()
	fetcher, err := torchwood.NewTileFetcher(serve(t, l))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := fetcher.ReadEndpoint(ctx, "checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil || tree.N != 570 || tree.Origin != "assay.test/log" {
		t.Fatalf("checkpoint %+v, %v", tree, err)
	}
	client, err := torchwood.NewClient(fetcher)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for next := int64(0); next < tree.N; {
		for i, e := range client.Entries(ctx, tree.Tree, next) {
			entry, err := receipt.ParseEntry(e)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			seen[entry.ID] = true
			next = i + 1
		}
		if err := client.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 570 {
		t.Fatalf("the client read %d distinct entries, want 570", len(seen))
	}
	pol := translog.Policy{LogKey: l.VerifierKey()}
	for id, b := range stored {
		inc, err := l.Inclusion(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if inc.Status != "included" || inc.Index == nil {
			t.Fatalf("%s: %+v", id, inc)
		}
		r, _ := receipt.Parse(b)
		e, err := receipt.ParseEntry([]byte(inc.Entry))
		if err != nil || e.Pins(r) != nil {
			t.Fatalf("%s: entry %q does not pin the receipt: %v", id, inc.Entry, err)
		}
		got, _, err := client.Entry(ctx, tree.Tree, *inc.Index)
		if err != nil || string(got) != inc.Entry {
			t.Fatalf("%s: the client's entry %d is %q, %v", id, *inc.Index, got, err)
		}
		if idx, _, err := pol.CheckProof([]byte(inc.Entry), inc.Proof); err != nil || idx != *inc.Index {
			t.Fatalf("%s: proof: %d %v", id, idx, err)
		}
	}
}

// TestLog_Consistency: a client proves from tiles alone that a later
// checkpoint extends an earlier one.
func TestLog_Consistency(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	c.put(t, "a", 37)
	round(t, l)
	ctx := context.Background()
	cp1, _ := l.Checkpoint(ctx)
	c.put(t, "b", 600)
	round(t, l)
	cp2, _ := l.Checkpoint(ctx)
	pol := translog.Policy{LogKey: l.VerifierKey()}
	t1, _, err := pol.Open(cp1)
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := pol.Open(cp2)
	if err != nil {
		t.Fatal(err)
	}
	fetcher, _ := torchwood.NewTileFetcher(serve(t, l))
	hr := torchwood.TileHashReaderWithContext(ctx, t2.Tree, fetcher)
	p, err := tlog.ProveTree(t2.N, t1.N, hr)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(p, t2.N, t2.Hash, t1.N, t1.Hash); err != nil {
		t.Fatal(err)
	}
}

// TestLog_Dedupe: a receipt stored twice (a retried transaction that
// committed, a repeated Put) is logged once; a second receipt under the
// same id with other bytes, the equivocation the log exists to show, is
// logged beside the first.
func TestLog_Dedupe(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	c.put(t, "x", 3)
	c.put(t, "x", 3)
	round(t, l)
	id := receipt.ID("x", "0")
	r, err := c.keys.Sign(receipt.KindVerdict, id, map[string]any{"contract_id": "x", "n": "another verdict"})
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	if err := c.st.Update(context.Background(), func(tx store.Tx) error {
		b, err = receipt.Put(tx, r, epoch)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := round(t, l); n != 4 {
		t.Fatalf("size %d, want 4: three receipts, then a contradicting one", n)
	}
	inc, err := l.Inclusion(context.Background(), b)
	if err != nil || inc.Status != "included" || *inc.Index != 3 {
		t.Fatalf("%+v %v", inc, err)
	}
}

// TestLog_Supersedes: an entry made with Superseding names the receipt it
// overturns, and that receipt's inclusion lists it, with its own proof.
func TestLog_Supersedes(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	first := c.put(t, "esc", 1)
	oldID := receipt.ID("esc", "0")
	r, err := c.keys.Sign(receipt.KindVerdict, receipt.ID("esc", "final"), map[string]any{"verdict": "refund"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.st.Update(context.Background(), func(tx store.Tx) error {
		_, err := receipt.Put(tx, r.Superseding(oldID), epoch)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	round(t, l)
	inc, err := l.Inclusion(context.Background(), first[oldID])
	if err != nil {
		t.Fatal(err)
	}
	if len(inc.SupersededBy) != 1 {
		t.Fatalf("superseded by %+v", inc.SupersededBy)
	}
	s := inc.SupersededBy[0]
	e, err := receipt.ParseEntry([]byte(s.Entry))
	if err != nil || e.Supersedes != oldID || e.ID != r.ShortID() {
		t.Fatalf("%q %v", s.Entry, err)
	}
	if _, _, err := (translog.Policy{LogKey: l.VerifierKey()}).CheckProof([]byte(s.Entry), s.Proof); err != nil {
		t.Fatal(err)
	}
}

// TestLog_Late: a round looks for pending entries in the seconds around
// its clock; a receipt signed long before its transaction committed, or
// by a clock far ahead of the log's, is integrated by the next round that
// looks in every pending key, the 240th. Included hears of each entry once
// a checkpoint that holds it is published, with how long it waited since
// it was signed.
func TestLog_Late(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	now := epoch.Add(time.Hour)
	var waited []time.Duration
	l := c.log(t, func(cfg *translog.Config) {
		cfg.Now = func() time.Time { return now }
		cfg.Included = func(d time.Duration) { waited = append(waited, d) }
	})
	round(t, l) // the first round looks everywhere
	// signAt signs with a keyring whose clock reads at, and stores.
	signAt := func(name string, at time.Time) {
		keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: func() time.Time { return at }, Rand: rand.NewChaCha8([32]byte{5})})
		if err != nil {
			t.Fatal(err)
		}
		keys.LogReceipts()
		r, err := keys.Sign(receipt.KindVerdict, receipt.ID(name, "0"), map[string]any{"n": name})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.st.Update(context.Background(), func(tx store.Tx) error {
			_, err := receipt.Put(tx, r, at)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	signAt("now", now.Add(-time.Second))
	signAt("late", now.Add(-time.Hour))
	signAt("ahead", now.Add(time.Hour))
	if n := round(t, l); n != 1 {
		t.Fatalf("the next round published %d, want the recent receipt alone", n)
	}
	if len(waited) != 1 || waited[0] != time.Second {
		t.Fatalf("waited %v, want [1s]", waited)
	}
	published := int64(0)
	for i := 2; i <= 240; i++ {
		if n := round(t, l); n != 0 {
			published = n
			if i != 240 {
				t.Fatalf("round %d published %d, want nothing before the 240th", i, n)
			}
		}
	}
	if published != 3 || len(waited) != 3 {
		t.Fatalf("the 240th round published %d (waited %v), want 3", published, waited)
	}
}

// TestLog_Pending: a receipt stored is pending until a round integrates
// it; a receipt signed while the log was off is absent.
func TestLog_Pending(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	b := c.put(t, "p", 1)[receipt.ID("p", "0")]
	inc, err := l.Inclusion(context.Background(), b)
	if err != nil || inc.Status != "pending" {
		t.Fatalf("%+v %v", inc, err)
	}
	off, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: func() time.Time { return epoch }, Rand: rand.NewChaCha8([32]byte{3})})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := off.Sign(receipt.KindVerdict, "unlogged", map[string]any{"n": 1})
	if err := c.st.Update(context.Background(), func(tx store.Tx) error {
		b, err = receipt.Put(tx, r, epoch)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	round(t, l)
	if inc, err = l.Inclusion(context.Background(), b); err != nil || inc.Status != "absent" {
		t.Fatalf("%+v %v", inc, err)
	}
}

// TestLog_Tile refuses paths that are not tlog-tiles paths and tiles the
// log does not have.
func TestLog_Tile(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	l := c.log(t)
	c.put(t, "t", 5)
	round(t, l)
	ctx := context.Background()
	for path, want := range map[string]string{
		"tile/0/000.p/5":       "",
		"tile/0/000.p/3":       "",
		"tile/entries/000.p/5": "",
		"tile/entries/000.p/2": "",
		"tile/0/000.p/6":       translog.ECodeTileNotFound,
		"tile/0/000":           translog.ECodeTileNotFound,
		"tile/1/000.p/1":       translog.ECodeTileNotFound,
		"tile/0/0":             translog.ECodeBadTilePath,
		"tile/0/000.p/0":       translog.ECodeBadTilePath,
		"tile/x/000":           translog.ECodeBadTilePath,
		"checkpoint":           translog.ECodeBadTilePath,
	} {
		_, err := l.Tile(ctx, path)
		if got := codeOf(err); got != want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	b, _ := l.Tile(ctx, "tile/entries/000.p/2")
	e1, rest, _ := torchwood.ReadTileEntry(b)
	e2, rest, _ := torchwood.ReadTileEntry(rest)
	if _, err := receipt.ParseEntry(e1); err != nil || len(rest) != 0 || len(e2) == 0 {
		t.Fatalf("a partial bundle of two: %q %q %q", e1, e2, rest)
	}
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	for _, c := range []string{translog.ECodeTileNotFound, translog.ECodeBadTilePath} {
		if strings.Contains(fmt.Sprintf("%#v", err), c) {
			return c
		}
	}
	return s
}

// TestWitness follows the tlog-witness protocol: it cosigns a first
// checkpoint, then only checkpoints that extend the last one it cosigned,
// answers 409 with its size to a wrong old size, and refuses a fork.
func TestWitness(t *testing.T) {
	t.Parallel()
	c := newCourt(t, nil)
	w, wkey := newWitness(t, c.lkey.VerifierKey())
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	wit, err := translog.ParseWitness(wkey + "@" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	l := c.log(t, func(cfg *translog.Config) { cfg.Witnesses = []translog.Witness{wit} })
	c.put(t, "w", 10)
	round(t, l)
	c.put(t, "v", 300)
	if n := round(t, l); n != 310 {
		t.Fatalf("published %d, want 310", n)
	}
	cp, _ := l.Checkpoint(context.Background())
	pol := translog.Policy{LogKey: l.VerifierKey(), Witnesses: []note.Verifier{wit.Verifier()}, Quorum: 1}
	if _, names, err := pol.Open(cp); err != nil || len(names) != 1 {
		t.Fatalf("cosigned by %v: %v", names, err)
	}

	// A fork: the same key and origin over other entries.
	f := openCourt(t, nil, t.TempDir())
	f.lkey = c.lkey
	fst, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	f.st = fst
	fl := f.log(t)
	f.put(t, "w", 10)
	f.put(t, "fork", 400)
	round(t, fl)
	forked, _ := fl.Checkpoint(context.Background())
	for _, old := range []int64{310, 10, 0} {
		_, _, err := w.Add([]byte(fmt.Sprintf("old %d\n\n%s", old, forked)))
		if err == nil {
			t.Fatalf("the witness cosigned a fork from old size %d", old)
		}
	}
	// And with a proof the forked log made from the size the witness holds.
	_, size, err := w.Add([]byte(fmt.Sprintf("old 0\n\n%s", forked)))
	if err == nil || size != 310 {
		t.Fatalf("a wrong old size: size %d, %v", size, err)
	}
}

func newWitness(tb testing.TB, logs ...string) (*translog.WitnessServer, string) {
	tb.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{9}))
	w, err := translog.NewWitnessServer(translog.WitnessConfig{Name: "witness.test/w1", Key: priv, Logs: logs, State: filepath.Join(tb.TempDir(), "witness.json")})
	if err != nil {
		tb.Fatal(err)
	}
	return w, w.VerifierKey()
}

// TestCosignatureVerifier checks torchwood's cosignatures, which `assay
// witness` makes, and refuses another checkpoint's.
func TestCosignatureVerifier(t *testing.T) {
	t.Parallel()
	_, priv, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{5}))
	s, err := torchwood.NewCosignatureSigner("w.example/1", priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := translog.NewCosignatureVerifier(s.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	cp := "o.example/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	msg, err := note.Sign(&note.Note{Text: cp}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(msg), "\n5\n", "\n6\n", 1)
	if _, err := note.Open([]byte(other), note.VerifierList(v)); err == nil {
		t.Fatal("a cosignature verified on another checkpoint")
	}
	if _, err := translog.NewCosignatureVerifier(strings.Replace(s.Verifier().String(), "w.example/1", "w.example/2", 1)); err == nil {
		t.Fatal("a key hash that does not match its name parsed")
	}
}

// TestLog_TwoNodes runs two nodes' logs on one PostgreSQL database while
// receipts are stored: their integrations never overlap, every receipt is
// logged once, and when the first node stops, the second takes over once
// its lease has run out.
func TestLog_TwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	open := func() store.Store {
		st, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	c := newCourt(t, open())
	st2 := open()
	var mu sync.Mutex
	type span struct {
		node     string
		from, to int64
		at       time.Time
	}
	var spans []span
	var clock sync.Mutex
	now := epoch // the clock the receipts are stored by
	at := func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	integrated := func(node string, from, to int64) {
		mu.Lock()
		spans = append(spans, span{node, from, to, time.Now()})
		mu.Unlock()
	}
	cfg := func(node string) func(*translog.Config) {
		return func(cfg *translog.Config) {
			cfg.Node, cfg.Now, cfg.Integrated, cfg.Batch = node, at, integrated, 50
		}
	}
	a := c.log(t, cfg("a"))
	b := (&court{st: st2, lkey: c.lkey}).log(t, cfg("b"))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, l := range []*translog.Log{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Round(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stored := c.put(t, "pg", 400)
	deadline := time.Now().Add(time.Minute)
	for logged(t, c, a) < 400 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	seen := append([]span(nil), spans...)
	mu.Unlock()
	var next int64
	leader := seen[0].node
	for _, s := range seen {
		if s.from != next {
			t.Fatalf("integrations overlap or skip: %+v after size %d", s, next)
		}
		if s.node != leader {
			t.Fatalf("node %s integrated while node %s's lease held: %+v", s.node, leader, s)
		}
		next = s.to
	}
	if next != 400 {
		t.Fatalf("logged %d, want 400", next)
	}
	for id, rb := range stored {
		inc, err := b.Inclusion(ctx, rb)
		if err != nil || inc.Status != "included" {
			t.Fatalf("%s: %+v %v", id, inc, err)
		}
	}
	// The leader stops; the other takes over once its lease ran out.
	other := b
	if leader == "b" {
		other = a
	}
	c.put(t, "later", 5)
	if n, err := other.Round(ctx); err != nil || n != 0 {
		t.Fatalf("a node integrated while the leader's lease held: %d %v", n, err)
	}
	clock.Lock()
	now = now.Add(translog.DefaultLease + time.Second)
	clock.Unlock()
	if n, err := other.Round(ctx); err != nil || n != 405 {
		t.Fatalf("after the leader's lease ran out: %d %v", n, err)
	}
}

func logged(tb testing.TB, c *court, l *translog.Log) int64 {
	tb.Helper()
	cp, err := l.Checkpoint(context.Background())
	if err != nil {
		return 0
	}
	t, _, err := (translog.Policy{LogKey: l.VerifierKey()}).Open(cp)
	if err != nil {
		tb.Fatal(err)
	}
	return t.N
}
