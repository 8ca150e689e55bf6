package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// countingStore counts what a request costs the store: the transactions
// that committed (each a durable write), and the reads of the keys a
// prefix names, however they were read (Get, GetMany, a read ahead, a
// Read outside a transaction).
type countingStore struct {
	store.Store
	watch string

	mu      sync.Mutex
	commits int
	reads   int
}

func (s *countingStore) saw(keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if strings.HasPrefix(k, s.watch) {
			s.reads++
		}
	}
}

func (s *countingStore) reset() (commits, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	commits, reads = s.commits, s.reads
	s.commits, s.reads = 0, 0
	return commits, reads
}

func (s *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := s.Store.Update(ctx, func(tx store.Tx) error { return fn(countingTx{tx, s}) })
	if err == nil {
		s.mu.Lock()
		s.commits++
		s.mu.Unlock()
	}
	return err
}

func (s *countingStore) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.Store.View(ctx, func(tx store.Tx) error { return fn(countingTx{tx, s}) })
}

type countingTx struct {
	store.Tx
	s *countingStore
}

func (t countingTx) Get(k string) ([]byte, error) { t.s.saw(k); return t.Tx.Get(k) }

func (t countingTx) GetMany(keys ...string) ([][]byte, error) {
	t.s.saw(keys...)
	return t.Tx.GetMany(keys...)
}

// TestWalk_SignedDispute counts what one signed dispute of the court costs
// the store, from the HTTP edge: how many times it reads the contract and
// how many durable commits it makes (its nonce's, and its own).
func TestWalk_SignedDispute(t *testing.T) {
	env := mustSignedCourt(t)
	buyer := ed25519.NewKeyFromSeed(append(make([]byte, 31), 21))
	seller := ed25519.NewKeyFromSeed(append(make([]byte, 31), 22))
	bid := receipt.DIDKey(buyer.Public().(ed25519.PublicKey))
	sid := receipt.DIDKey(seller.Public().(ed25519.PublicKey))
	c := do(t, env.app, call{"POST", "/contracts", `{"buyer":"` + bid + `","seller":"` + sid + `","price":5,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":100}]}}`, nil})
	wantStatus(t, c, 200, "")
	id := c.json(t)["contract_id"].(string)
	wantStatus(t, env.signed(t, buyer, bid, "POST", "/contracts/"+id+"/fund", `{}`), 200, "")
	wantStatus(t, env.signed(t, seller, sid, "POST", "/contracts/"+id+"/deliver", `{"deliverable":{"rows":3}}`), 200, "")
	env.st.watch = "escrow/contract/" + id
	env.st.reset()
	r := env.signed(t, buyer, bid, "POST", "/contracts/"+id+"/dispute", `{"reason":"short"}`)
	wantStatus(t, r, 200, "")
	var rc receipt.Receipt
	if err := json.Unmarshal(r.body, &rc); err != nil {
		t.Fatal(err)
	}
	commits, reads := env.st.reset()
	t.Logf("a signed dispute: %d commits, %d reads of the contract", commits, reads)
	if commits != wantDisputeCommits || reads != wantDisputeReads {
		t.Errorf("a signed dispute made %d commits and read the contract %d times; want %d and %d", commits, reads, wantDisputeCommits, wantDisputeReads)
	}
}

// The counts TestWalk_SignedDispute holds a signed dispute to: the
// nonce's commit and the dispute's; the contract read once on a snapshot
// (the parties, the delivery, for the adjudication) and once in the
// transaction. Before the court decided on its own parties, a middleware
// read it a third time.
const (
	wantDisputeCommits = 2
	wantDisputeReads   = 2
)

// signedCourt is the court, signed, in process, on a counting store.
type signedCourt struct {
	app   *fiber.App
	st    *countingStore
	nonce atomic.Int64
}

func mustSignedCourt(tb testing.TB) *signedCourt {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	st := &countingStore{Store: db}
	now := func() time.Time { return mNow }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{5})})
	if err != nil {
		tb.Fatal(err)
	}
	reg := principal.New(st, now)
	court, err := escrow.New(context.Background(), escrow.Config{Store: st, Signer: keys, Now: now, Auth: principal.Signed, Identities: reg})
	if err != nil {
		tb.Fatal(err)
	}
	app := api.New(api.Config{Court: court, Keys: keys, Version: "test", Identities: reg, Replies: idem.NewKeeper(st), PublicURLs: []string{"http://assay.test"}})
	return &signedCourt{app: app, st: st}
}

// signed sends a request signed by priv as keyID, for the authority
// assay.test.
func (e *signedCourt) signed(tb testing.TB, priv ed25519.PrivateKey, keyID, method, path, body string) resp {
	tb.Helper()
	member := `("@method" "@path" "@authority" "content-digest");created=` + itoa(mNow.Unix()) + `;keyid="` + keyID + `";nonce="n` + itoa(e.nonce.Add(1)) + `"`
	return signedRequest(tb, e.app, priv, method, path, body, member)
}
