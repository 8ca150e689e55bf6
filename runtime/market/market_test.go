package market_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time            { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration)       { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func raw(s string) json.RawMessage         { return json.RawMessage(s) }
func amount(s string) market.AmountRequest { return market.AmountRequest{AmountUSD: raw(s)} }

type env struct {
	svc     *market.Service
	ck      *clock
	squares string // sha256 of fixtures/checkers/squares.wasm
	fail    string
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ck := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(ctx) })
	dir, err := checkers.OpenDir("../../fixtures/checkers")
	if err != nil {
		tb.Fatal(err)
	}
	var n atomic.Uint64
	// The registry in the store (python sources the market keeps), then
	// the fixture checkers, memoised on the store.
	runner := checkers.NewRunner(sb, firstOf{replays.Checkers(db), dir}, checkers.WithMemo(replays.NewMemo(db)))
	svc, err := market.New(market.Config{Store: db, Signer: keys, Runner: runner, Now: ck.Now,
		NewID: func() string { return fmt.Sprintf("%016x", n.Add(1)) }, Rand: func(n int) int { return 0 }})
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{svc: svc, ck: ck}
	for name, p := range map[string]*string{"squares.wasm": &e.squares, "fail.wasm": &e.fail} {
		b, err := os.ReadFile("../../fixtures/checkers/" + name)
		if err != nil {
			tb.Fatal(err)
		}
		*p = checkers.SHA256(b)
	}
	return e
}

func (e *env) balance(tb testing.TB, did string) market.USD {
	tb.Helper()
	w, err := e.svc.WalletOf(context.Background(), did)
	if err != nil {
		tb.Fatal(err)
	}
	return w.Balance
}

func (e *env) zero(tb testing.TB) {
	tb.Helper()
	sums, err := ledger.SumsOf(context.Background(), e.svc.Store())
	if err != nil {
		tb.Fatal(err)
	}
	for c, v := range sums {
		if v != 0 {
			tb.Fatalf("ledger sums to %d %s", v, c)
		}
	}
}

func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if fault.CodeOf(err) != code {
		tb.Fatalf("err %v, want %s", err, code)
	}
}

const table = `"1 1\n2 4\n3 9\n"`

func (e *env) publishSquares(tb testing.TB, seller, problem string) string {
	tb.Helper()
	r := must(e.svc.Publish(context.Background(), anon, market.PublishRequest{Agent: seller, Title: "squares", ProblemStatement: problem,
		Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw("2.50"),
		Checker: &market.CheckerSpec{SHA256: e.squares}}, idem.Request{}))(tb)
	var p market.Published
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Fatal(err)
	}
	return p.Listing.ListingID
}

func TestService_Lifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
	id := e.publishSquares(t, "seller", "table of squares of 3 integers")
	v := must(e.svc.Get(ctx, id))(t)
	if v.Level != 1 || !v.HasChecker || v.Bond != 0 {
		t.Fatalf("listing %+v", v)
	}
	r := must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer", Purpose: "homework"}, idem.Request{}))(t)
	var b market.Bought
	json.Unmarshal(r.Body, &b)
	if string(b.Artifact) != table || b.TotalUSD != 2_575_000 || b.Recourse.ChallengeWindowHours != 1 {
		t.Fatalf("bought %s", r.Body)
	}
	if got := e.balance(t, "buyer"); got != 10_000_000-2_575_000 {
		t.Fatalf("buyer %s", got)
	}
	_, err := e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{})
	wantCode(t, err, "already_purchased")
	_, err = e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "poor"}, idem.Request{})
	wantCode(t, err, "insufficient_funds")
	if got := e.balance(t, "seller"); got != 0 {
		t.Fatalf("seller paid %s before the window closed", got)
	}
	e.ck.Add(time.Hour)
	if got := e.balance(t, "seller"); got != 2_500_000 {
		t.Fatalf("seller %s after the window", got)
	}
	if got := e.balance(t, "platform-is-not-an-agent"); got != 0 {
		t.Fatal(got)
	}
	_, err = e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"4"`)}, idem.Request{})
	wantCode(t, err, "purchase_closed")
	p := must(e.svc.AgentProfile(ctx, "seller"))(t)
	if p.TradesSold != 1 || p.ChallengesLost != 0 {
		t.Fatalf("profile %+v", p)
	}
	e.zero(t)
}

func TestService_Publish(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	t.Run("ErrCheckerFailed", func(t *testing.T) {
		_, err := e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "s", Title: "t", ProblemStatement: "squares table",
			Artifact: raw(`"2 5\n"`), ArtifactType: "dataset", PriceUSD: raw("1"), Checker: &market.CheckerSpec{SHA256: e.squares}}, idem.Request{})
		wantCode(t, err, "checker_failed")
	})
	t.Run("ErrBondFunds", func(t *testing.T) {
		_, err := e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "s", Title: "t", ProblemStatement: "squares table",
			Artifact: raw(`"x"`), ArtifactType: "dataset", PriceUSD: raw("10")}, idem.Request{})
		wantCode(t, err, "insufficient_funds")
	})
	t.Run("ErrInput", func(t *testing.T) {
		for code, req := range map[string]market.PublishRequest{
			"invalid_amount":        {Agent: "s", Title: "t", ProblemStatement: "pq rs", Artifact: raw(`1`), ArtifactType: "dataset", PriceUSD: raw("1.0000001")},
			"level_reserved":        {Agent: "s", Title: "t", ProblemStatement: "pq rs", Artifact: raw(`1`), ArtifactType: "dataset", PriceUSD: raw("1"), VerificationLevel: 4},
			"invalid_artifact_type": {Agent: "s", Title: "t", ProblemStatement: "pq rs", Artifact: raw(`1`), ArtifactType: "x", PriceUSD: raw("1")},
			"missing_field":         {Agent: "s", Title: "t", ProblemStatement: "pq rs", ArtifactType: "dataset", PriceUSD: raw("1")},
			"unknown_checker":       {Agent: "s", Title: "t", ProblemStatement: "pq rs", Artifact: raw(`1`), ArtifactType: "dataset", PriceUSD: raw("1"), Checker: &market.CheckerSpec{SHA256: fmt.Sprintf("%064d", 0)}},
		} {
			_, err := e.svc.Publish(ctx, anon, req, idem.Request{})
			wantCode(t, err, code)
		}
	})
	t.Run("Level2Bond", func(t *testing.T) {
		must(e.svc.Deposit(ctx, anon, "s2", amount("1"), idem.Request{}))(t)
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "s2", Title: "t", ProblemStatement: "squares table",
			Artifact: raw(`"x"`), ArtifactType: "dataset", PriceUSD: raw("2")}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		if p.Listing.Level != 2 || p.Listing.Bond != 500_000 || e.balance(t, "s2") != 500_000 {
			t.Fatalf("level 2 %s", r.Body)
		}
		// Clean retirement with no window open returns the bond.
		must(e.svc.Deactivate(ctx, anon, p.Listing.ListingID, market.DeactivateRequest{Agent: "s2"}, idem.Request{}))(t)
		if e.balance(t, "s2") != 1_000_000 {
			t.Fatal("bond not returned")
		}
	})
	e.zero(t)
}

func TestService_Challenge(t *testing.T) {
	ctx := context.Background()
	t.Run("UpheldByReplay", func(t *testing.T) {
		e := newEnv(t)
		must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
		id := e.publishSquares(t, "seller", "table of squares")
		must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		r := must(e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"4"`)}, idem.Request{}))(t)
		var out struct{ Challenge market.Challenge }
		json.Unmarshal(r.Body, &out)
		if out.Challenge.Status != market.ChallengeUpheld || out.Challenge.Replay == nil || out.Challenge.Replay.Pass {
			t.Fatalf("challenge %s", r.Body)
		}
		if e.balance(t, "buyer") != 10_000_000 {
			t.Fatal("not refunded price and fee")
		}
		if v := must(e.svc.Get(ctx, id))(t); v.Status != market.ListingPulled {
			t.Fatalf("listing %s", v.Status)
		}
		e.ck.Add(2 * time.Hour)
		if e.balance(t, "seller") != 0 {
			t.Fatal("seller paid after an upheld challenge")
		}
		e.zero(t)
	})
	t.Run("PassingReplayGoesToOperator", func(t *testing.T) {
		e := newEnv(t)
		must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
		id := e.publishSquares(t, "seller", "table of squares")
		must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		r := must(e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"3"`)}, idem.Request{}))(t)
		var out struct{ Challenge market.Challenge }
		json.Unmarshal(r.Body, &out)
		if out.Challenge.Status != market.ChallengeOpen {
			t.Fatalf("challenge %s", r.Body)
		}
		e.ck.Add(2 * time.Hour)
		if e.balance(t, "seller") != 0 {
			t.Fatal("settled while a challenge was open")
		}
		_, err := e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"3"`)}, idem.Request{})
		wantCode(t, err, "already_challenged")
		must(e.svc.Resolve(ctx, principal.Operator(), out.Challenge.ID, market.ResolveRequest{Verdict: "reject", Reason: "table is right"}, idem.Request{}))(t)
		if e.balance(t, "seller") != 2_500_000 {
			t.Fatal("not settled after the operator rejected")
		}
		e.zero(t)
	})
	t.Run("ErrWindowClosed", func(t *testing.T) {
		e := newEnv(t)
		must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
		must(e.svc.Deposit(ctx, anon, "seller", amount("1"), idem.Request{}))(t)
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "t", ProblemStatement: "squares table",
			Artifact: raw(`"x"`), ArtifactType: "dataset", PriceUSD: raw("5")}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		must(e.svc.Buy(ctx, anon, p.Listing.ListingID, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		e.ck.Add(72 * time.Hour)
		_, err := e.svc.Challenge(ctx, anon, p.Listing.ListingID, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"bad"`)}, idem.Request{})
		wantCode(t, err, "challenge_window_closed")
		e.zero(t)
	})
	t.Run("Level2UpheldForfeitsBond", func(t *testing.T) {
		e := newEnv(t)
		must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
		must(e.svc.Deposit(ctx, anon, "seller", amount("1"), idem.Request{}))(t)
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "t", ProblemStatement: "squares table",
			Artifact: raw(`"x"`), ArtifactType: "dataset", PriceUSD: raw("1")}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		lid := p.Listing.ListingID
		must(e.svc.Buy(ctx, anon, lid, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		must(e.svc.Deactivate(ctx, anon, lid, market.DeactivateRequest{Agent: "seller"}, idem.Request{}))(t)
		if e.balance(t, "seller") != 500_000 {
			t.Fatal("bond returned with a window open")
		}
		r = must(e.svc.Challenge(ctx, anon, lid, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"wrong"`)}, idem.Request{}))(t)
		var out struct{ Challenge market.Challenge }
		json.Unmarshal(r.Body, &out)
		must(e.svc.Resolve(ctx, principal.Operator(), out.Challenge.ID, market.ResolveRequest{Verdict: "uphold"}, idem.Request{}))(t)
		if got := e.balance(t, "buyer"); got != 10_000_000+500_000 {
			t.Fatalf("buyer %s: want refund plus bond", got)
		}
		if got := must(e.svc.AgentProfile(ctx, "seller"))(t); got.ChallengesLost != 1 || got.StakeForfeitedUSD != 500_000 {
			t.Fatalf("profile %+v", got)
		}
		e.zero(t)
	})
}

// TestService_Level3: level 3 counts distinct independent buyers whose
// replays passed on the artifact they received; the market's own samples,
// the seller's other agents (as far as ids tell), house agents of a house
// seller and repeated replays by one buyer do not count.
func TestService_Level3(t *testing.T) {
	ctx := context.Background()
	buy := func(t *testing.T, e *env, id string, agents ...string) {
		t.Helper()
		for _, a := range agents {
			must(e.svc.Deposit(ctx, anon, a, amount("10"), idem.Request{}))(t)
			must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: a}, idem.Request{}))(t)
		}
	}
	replay := func(t *testing.T, e *env, id, agent string) market.Replayed {
		t.Helper()
		return must(e.svc.Replay(ctx, anon, id, market.ReplayRequest{Agent: agent}))(t)
	}
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		id := e.publishSquares(t, "seller", "table of squares")
		buy(t, e, id, "b1", "b2", "b3")
		for i, b := range []string{"b1", "b2", "b3"} {
			r := replay(t, e, id, b)
			// The publication replay memoised the outcome: every buyer's
			// replay is a memo hit, and says so.
			if !r.Pass || !r.Confirmed || !r.MemoHit || r.ConfirmedBuyers != i+1 || r.Promoted != (i == 2) {
				t.Fatalf("replay by %s: %+v", b, r)
			}
			var rc struct {
				CredentialSubject map[string]any `json:"credentialSubject"`
			}
			json.Unmarshal(r.Receipt, &rc)
			if rc.CredentialSubject["memo_hit"] != true || rc.CredentialSubject["confirmed"] != true {
				t.Fatalf("receipt %s", r.Receipt)
			}
		}
		v := must(e.svc.Get(ctx, id))(t)
		if v.Level != 3 || v.ConfirmedBuyers != 3 {
			t.Fatalf("level %d with %d buyers", v.Level, v.ConfirmedBuyers)
		}
		if st := must(e.svc.Stats(ctx))(t); st.BuyerConfirmations != 3 || st.ListingsByLevel["3"] != 1 {
			t.Fatalf("stats %+v", st)
		}
		e.zero(t)
	})
	t.Run("ErrSellersSecondAgent", func(t *testing.T) {
		// The attack: a second agent of the seller buys and asks for three
		// replays. By agent id it is one buyer, so it confirms once.
		e := newEnv(t)
		id := e.publishSquares(t, "acme", "table of squares")
		buy(t, e, id, "acme-2")
		for i := range 3 {
			if r := replay(t, e, id, "acme-2"); r.Confirmed != (i == 0) || r.ConfirmedBuyers != 1 || r.Level != 1 {
				t.Fatalf("replay %d: %+v", i, r)
			}
		}
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 || v.ConfirmedBuyers != 1 || v.ReplaysPassed != 3 {
			t.Fatalf("level %d, %d buyers, %d passes", v.Level, v.ConfirmedBuyers, v.ReplaysPassed)
		}
	})
	t.Run("ErrSamplesAreNotBuyers", func(t *testing.T) {
		e := newEnv(t)
		id := e.publishSquares(t, "seller", "table of squares")
		for range 3 {
			must(e.svc.Tick(ctx, market.TickRequest{Samples: 1}))(t)
		}
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 || v.ReplaysPassed != 3 || v.ConfirmedBuyers != 0 {
			t.Fatalf("level %d after %d samples, %d buyers", v.Level, v.ReplaysPassed, v.ConfirmedBuyers)
		}
	})
	t.Run("ErrHouseBuyersOfHouseSeller", func(t *testing.T) {
		e := newEnv(t)
		id := e.publishSquares(t, "g17-mathema", "table of squares")
		buy(t, e, id, "g17-a", "g17-b", "g17-c")
		for _, b := range []string{"g17-a", "g17-b", "g17-c"} {
			if r := replay(t, e, id, b); r.Confirmed || !strings.Contains(r.NotCounted, "house") {
				t.Fatalf("house replay by %s: %+v", b, r)
			}
		}
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 || v.ConfirmedBuyers != 0 {
			t.Fatalf("level %d with %d buyers", v.Level, v.ConfirmedBuyers)
		}
	})
	t.Run("ErrNotABuyer", func(t *testing.T) {
		e := newEnv(t)
		id := e.publishSquares(t, "seller", "table of squares")
		_, err := e.svc.Replay(ctx, anon, id, market.ReplayRequest{Agent: "stranger"})
		wantCode(t, err, "purchase_not_found")
		_, err = e.svc.Replay(ctx, anon, id, market.ReplayRequest{Agent: "seller"})
		wantCode(t, err, "purchase_not_found")
	})
	t.Run("LegacyLevel3", func(t *testing.T) {
		// A listing made level 3 by the old rule (any three passes) is
		// shown as level 1 until buyers confirm it.
		e := newEnv(t)
		id := e.publishSquares(t, "seller", "table of squares")
		market.ForceLevel(t, e.svc, id, 3)
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 {
			t.Fatalf("legacy level %d", v.Level)
		}
		if st := must(e.svc.Stats(ctx))(t); st.ListingsByLevel["3"] != 0 {
			t.Fatalf("stats %+v", st.ListingsByLevel)
		}
	})
	t.Run("IdentitySeam", func(t *testing.T) {
		// With an identity behind agent ids (what authentication will
		// give), the seller's three sock puppets count as the seller.
		e := newEnv(t)
		keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: e.ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
		if err != nil {
			t.Fatal(err)
		}
		owner := func(_ context.Context, agent string) string { return strings.SplitN(agent, "~", 2)[0] }
		svc, err := market.NewWithRunner(market.Config{Store: e.svc.Store(), Signer: keys, Now: e.ck.Now, Identity: owner}, runnerOf(t))
		if err != nil {
			t.Fatal(err)
		}
		e.svc = svc
		id := e.publishSquares(t, "mallory", "table of squares")
		buy(t, e, id, "mallory~1", "mallory~2", "mallory~3", "alice~laptop", "alice~phone")
		for _, b := range []string{"mallory~1", "mallory~2", "mallory~3", "alice~laptop", "alice~phone"} {
			replay(t, e, id, b)
		}
		if v := must(e.svc.Get(ctx, id))(t); v.Level != 1 || v.ConfirmedBuyers != 1 {
			t.Fatalf("level %d with %d buyers: want alice once", v.Level, v.ConfirmedBuyers)
		}
	})
}

// firstOf is a Source that tries each of its Sources in turn.
type firstOf []checkers.Source

func (f firstOf) Checker(sum string) ([]byte, error) {
	for _, src := range f[:len(f)-1] {
		if b, err := src.Checker(sum); !errors.Is(err, checkers.ErrNotFound) {
			return b, err
		}
	}
	return f[len(f)-1].Checker(sum)
}

// runnerOf is a real memoising runner over the fixture checkers.
func runnerOf(tb testing.TB) *checkers.Runner {
	tb.Helper()
	ctx := context.Background()
	sb, err := wasm.NewSandbox(ctx, wasm.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(ctx) })
	dir, err := checkers.OpenDir("../../fixtures/checkers")
	if err != nil {
		tb.Fatal(err)
	}
	return checkers.NewRunner(sb, dir, checkers.WithMemo(checkers.NewMemo(checkers.MemoConfig{})))
}

func TestService_Idempotency(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	k := idem.Request{Key: "k1", Fingerprint: "f1"}
	a := must(e.svc.Deposit(ctx, anon, "buyer", amount("5"), k))(t)
	b := must(e.svc.Deposit(ctx, anon, "buyer", amount("5"), k))(t)
	if string(a.Body) != string(b.Body) || !b.Replayed || e.balance(t, "buyer") != 5_000_000 {
		t.Fatalf("replay %s %s", a.Body, b.Body)
	}
	_, err := e.svc.Deposit(ctx, anon, "buyer", amount("6"), idem.Request{Key: "k1", Fingerprint: "f2"})
	wantCode(t, err, "idempotency_conflict")
	e.zero(t)
}

// TestService_IdempotencyScoped: a key lives in the scope of its
// operation and its actor (idem.New), so another agent who used the
// owner's key first neither makes the owner's request answer
// idempotency_conflict nor gets its answer.
func TestService_IdempotencyScoped(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	k := func(op, actor, content string) idem.Request {
		r, err := idem.New(op, actor, "shared-key", []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The squatter uses the key first, on the owner's kind of request.
	must(e.svc.Deposit(ctx, anon, "squatter", amount("1"), k("deposit", "squatter", "1")))(t)
	r := must(e.svc.Deposit(ctx, anon, "owner", amount("20"), k("deposit", "owner", "20")))(t)
	if r.Replayed || e.balance(t, "owner") != 20_000_000 || e.balance(t, "squatter") != 1_000_000 {
		t.Fatalf("owner's deposit %s replayed=%v", r.Body, r.Replayed)
	}
	// The squatter's own retry still replays its own answer.
	if r := must(e.svc.Deposit(ctx, anon, "squatter", amount("1"), k("deposit", "squatter", "1")))(t); !r.Replayed || e.balance(t, "squatter") != 1_000_000 {
		t.Fatalf("squatter's retry %s replayed=%v", r.Body, r.Replayed)
	}
	// The same key on another operation of the same agent is another key.
	id := e.publishSquares(t, "seller", "table of squares")
	must(e.svc.Deposit(ctx, anon, "squatter", amount("5"), idem.Request{}))(t)
	must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "squatter"}, k("buy", "squatter", "b")))(t)
	b := must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "owner"}, k("buy", "owner", "b")))(t)
	if b.Replayed || !b.Created {
		t.Fatalf("owner's purchase %s", b.Body)
	}
	// Within one actor and operation a key still conflicts.
	_, err := e.svc.Deposit(ctx, anon, "owner", amount("3"), k("deposit", "owner", "3"))
	wantCode(t, err, "idempotency_conflict")
	if e.balance(t, "owner") != 20_000_000-2_575_000 {
		t.Fatalf("owner %s", e.balance(t, "owner"))
	}
	e.zero(t)
}

func TestService_Concurrent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	id := e.publishSquares(t, "seller", "table of squares")
	const n = 20
	// One buyer, twenty concurrent purchases: one wins.
	must(e.svc.Deposit(ctx, anon, "buyer", amount("100"), idem.Request{}))(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}); err == nil {
				wins.Add(1)
			} else if fault.CodeOf(err) != "already_purchased" {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d purchases won", wins.Load())
	}
	// A wallet with money for one purchase, many listings: no overdraft.
	must(e.svc.Deposit(ctx, anon, "thin", amount("2.575"), idem.Request{}))(t)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.publishSquares(t, fmt.Sprintf("s%d", i), "table of squares")
	}
	wins.Store(0)
	for _, lid := range ids {
		wg.Go(func() {
			if _, err := e.svc.Buy(ctx, anon, lid, market.PurchaseRequest{Agent: "thin"}, idem.Request{}); err == nil {
				wins.Add(1)
			} else if fault.CodeOf(err) != "insufficient_funds" {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || e.balance(t, "thin") != 0 {
		t.Fatalf("%d purchases from a wallet for one", wins.Load())
	}
	// Concurrent settlement: many readers after the window, one settlement.
	e.ck.Add(time.Hour)
	for range n {
		wg.Go(func() {
			if _, err := e.svc.WalletOf(ctx, "seller"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := e.balance(t, "seller"); got != 2_500_000 {
		t.Fatalf("seller %s: want one settlement", got)
	}
	e.zero(t)
}
