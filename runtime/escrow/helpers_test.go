package escrow_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type court struct {
	*escrow.Service
	clock *clock
	keys  *receipt.Keyring
	store store.Store
	// lib is the checker registry's uploads, validated by the court's
	// runner, as assay serve wires them.
	lib *replays.Library
}

// anon is the caller that proved nothing: the seed's open court.
var anon principal.Actor

// PutChecker uploads a checker to the registry the court reads.
func (c *court) PutChecker(ctx context.Context, kind string, module []byte, ik idem.Request) (escrow.Reply, error) {
	return c.lib.Put(ctx, kind, module, ik)
}

// Checker is a stored checker's metadata.
func (c *court) Checker(ctx context.Context, sum string) (checkers.Info, error) {
	return c.lib.Info(ctx, sum)
}

type option func(*escrow.Config)

func withJuror(j adjudicate.Juror) option { return func(c *escrow.Config) { c.Juror = j } }
func withSandbox(tb testing.TB) option {
	return func(c *escrow.Config) {
		sb, err := wasm.NewSandbox(context.Background(), wasm.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = sb.Close(context.Background()) })
		// As assay serve wires it: one runner over the registry in the
		// court's store, validating uploads too.
		r := checkers.NewRunner(sb, replays.Checkers(c.Store), checkers.WithMemo(replays.NewMemo(c.Store)))
		c.Runner = r
	}
}

// mustCourt opens a court on an in-memory store with a test clock, a seeded
// keyring and sequential ids.
func mustCourt(tb testing.TB, opts ...option) *court {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return mustCourtOn(tb, db, tb.TempDir(), opts...)
}

func mustCourtOn(tb testing.TB, db store.Store, keyDir string, opts ...option) *court {
	tb.Helper()
	ck := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: keyDir, Now: ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		tb.Fatal(err)
	}
	// The store's own ids (store.IDs), as the server makes them: the
	// benchmark measures what their order and length cost.
	cfg := escrow.Config{Store: db, Signer: keys, Now: ck.Now}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := escrow.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	v, _ := cfg.Runner.(replays.Validator)
	return &court{Service: s, clock: ck, keys: keys, store: db, lib: replays.NewLibrary(db, v, ck.Now)}
}

func createReq(buyer, seller string, price string, acceptance string) escrow.CreateRequest {
	return escrow.CreateRequest{Buyer: buyer, Seller: seller, Price: json.RawMessage(price), Acceptance: json.RawMessage(acceptance)}
}

const rows100 = `{"assertions":[{"path":"rows","op":"gte","value":100}]}`

// delivered runs a contract to delivered and returns its id.
func (c *court) delivered(tb testing.TB, req escrow.CreateRequest, deliverable string) string {
	tb.Helper()
	ctx := context.Background()
	r, err := c.Create(ctx, req, idem.Request{})
	if err != nil {
		tb.Fatal(err)
	}
	var created escrow.Created
	if err := json.Unmarshal(r.Body, &created); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Fund(ctx, anon, created.ContractID, idem.Request{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Deliver(ctx, anon, created.ContractID, escrow.DeliverRequest{Deliverable: json.RawMessage(deliverable)}, idem.Request{}); err != nil {
		tb.Fatal(err)
	}
	return created.ContractID
}

func subject(tb testing.TB, body []byte) escrow.VerdictSubject {
	tb.Helper()
	r, err := receipt.Parse(body)
	if err != nil {
		tb.Fatal(err)
	}
	var s escrow.VerdictSubject
	if err := r.Subject(&s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := fault.CodeOf(err); got != code {
		tb.Fatalf("error code %q (%v), want %q", got, err, code)
	}
}

func (c *court) sums(tb testing.TB) map[string]int64 {
	tb.Helper()
	s, err := ledger.SumsOf(context.Background(), c.Store())
	if err != nil {
		tb.Fatal(err)
	}
	for cur, v := range s {
		if v != 0 {
			tb.Fatalf("ledger sum in %s is %d, want 0", cur, v)
		}
	}
	return s
}

func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "checkers", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// juror answers every question the same way.
type juror struct{ pass bool }

func (j juror) Vote(context.Context, adjudicate.SemanticQuestion) (adjudicate.Vote, error) {
	return adjudicate.Vote{Pass: j.pass, Reason: "test juror"}, nil
}
