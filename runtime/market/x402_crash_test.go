package market_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/rail/x402"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

// crasher is a fault hook that crashes a node in the middle of a call:
// armed at a named point, the call that reaches it stops there for good
// (its goroutine blocks forever, so nothing after the point runs, not
// even deferred calls), and the test is told, as a process killed there
// would leave things.
type crasher struct {
	mu    sync.Mutex
	point string
	hit   chan string
}

func (c *crasher) arm(point string) { c.mu.Lock(); c.point = point; c.mu.Unlock() }

func (c *crasher) hook(point string) {
	c.mu.Lock()
	if c.point != point {
		c.mu.Unlock()
		return
	}
	c.point = ""
	c.mu.Unlock()
	c.hit <- point
	select {}
}

// crashWorld is the chain (the local facilitator on loopback, over a
// badger store of its own, answering /rpc too) and the market's store,
// on which market nodes start and crash one after another. A crash
// abandons the node and its handle of the store, which is closed and
// opened again (open) for the next node: only what was committed
// survives, as after a process was killed.
type crashWorld struct {
	db, chain store.Store
	open      func() (store.Store, error)
	ck        *clock
	fac       *x402.Client
	chainURL  string // "" runs the rail without a chain: the facilitator is asked again
	op        *ecdsa.PrivateKey
	keys      *receipt.Keyring
	runner    *checkers.Runner
	squares   string
	ids       atomic.Uint64
	svc       *market.Service
	crash     *crasher
	lose      atomic.Bool
}

func newCrashWorld(tb testing.TB, open func() (store.Store, error), withChain bool) *crashWorld {
	tb.Helper()
	chain, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { chain.Close() })
	db, err := open()
	if err != nil {
		tb.Fatal(err)
	}
	w := &crashWorld{db: db, chain: chain, open: open, ck: &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}}
	tb.Cleanup(func() { w.db.Close() }) // the last node's handle
	f, err := x402.NewFacilitator(x402.FacilitatorConfig{Store: chain, Now: w.ck.Now})
	if err != nil {
		tb.Fatal(err)
	}
	// While lose is set, the facilitator settles and its answer is lost:
	// the connection closes before a byte of it is sent.
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/settle" || !w.lose.Load() {
			f.ServeHTTP(rw, r)
			return
		}
		f.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := rw.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	tb.Cleanup(srv.Close)
	w.fac = &x402.Client{URL: srv.URL}
	if withChain {
		w.chainURL = srv.URL + "/rpc"
	}
	w.op, _ = x402.ParseKey("5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")
	w.keys, err = receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: w.ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		tb.Fatal(err)
	}
	w.runner = runnerOf(tb)
	b, err := os.ReadFile("../../fixtures/checkers/squares.wasm")
	if err != nil {
		tb.Fatal(err)
	}
	w.squares = checkers.SHA256(b)
	w.start(tb)
	return w
}

// start starts a node on the world's store, as a restart does: a rail
// and a market of their own (new owners for their leases).
func (w *crashWorld) start(tb testing.TB) {
	tb.Helper()
	w.crash = &crasher{hit: make(chan string, 1)}
	counters := &rail.Counters{}
	cfg := x402.Config{Store: w.db, Facilitator: w.fac, Operator: w.op, Currency: market.Currency, Now: w.ck.Now, Counters: counters, Fault: w.crash.hook}
	if w.chainURL != "" {
		cfg.Chain = &x402.RPC{URL: w.chainURL}
	}
	r, err := x402.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	w.svc, err = market.New(market.Config{Store: w.db, Signer: w.keys, Runner: w.runner, Rail: r, Now: w.ck.Now,
		NewID: func() string { return fmt.Sprintf("%016x", w.ids.Add(1)) }, Rand: func(int) int { return 0 },
		Intents: rail.PaymentsConfig{Exclusive: true, Counters: counters, Fault: w.crash.hook}})
	if err != nil {
		tb.Fatal(err)
	}
}

// run runs f on the node, and answers the point where the node crashed,
// or "" when f returned.
func (w *crashWorld) run(f func()) string {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return ""
	case p := <-w.crash.hit:
		return p
	}
}

// recover restarts the node after a crash, on the store closed and
// opened again, and resolves what the crash left: at start-up (Recover),
// or, as a node that shares the store must, by a tick once the dead
// attempt's lease has run out.
func (w *crashWorld) recover(tb testing.TB, atStart bool) {
	tb.Helper()
	ctx := context.Background()
	if err := w.db.Close(); err != nil {
		tb.Fatalf("closing the crashed node's store: %v", err)
	}
	db, err := w.open()
	if err != nil {
		tb.Fatalf("opening the store again after a crash: %v", err)
	}
	w.db = db
	w.start(tb)
	if atStart {
		if _, err := w.svc.Recover(ctx); err != nil {
			tb.Fatalf("recover: %v", err)
		}
	} else {
		w.ck.Add(rail.DefaultLease + time.Second)
	}
	if _, err := w.svc.Tick(ctx, market.TickRequest{}); err != nil {
		tb.Fatalf("the tick after a restart: %v", err)
	}
}

func (w *crashWorld) chainBalance(tb testing.TB, address string) int64 {
	tb.Helper()
	b, err := w.fac.BalanceOf(context.Background(), address)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	fmt.Sscan(b.Balance, &n)
	return n
}

// settledUp checks what must hold once nothing is unresolved: both
// ledgers sum to zero; each payer's charge at the facilitator (what it
// was funded less what it holds) is exactly what the market's ledger
// credited from it (the rail's postings that name it: payments in less
// refunds paid back, less payouts to the agents it paid for); no
// settlement is credited twice; and the operator
// holds at the facilitator exactly the money the market holds.
func (w *crashWorld) settledUp(tb testing.TB, what string, funded map[string]int64, payerOf map[string]string) {
	tb.Helper()
	ctx := context.Background()
	for name, st := range map[string]store.Store{"market": w.db, "facilitator": w.chain} {
		sums, err := ledger.SumsOf(ctx, st)
		if err != nil {
			tb.Fatal(err)
		}
		for c, v := range sums {
			if v != 0 {
				tb.Fatalf("%s: the %s ledger sums to %d %s", what, name, v, c)
			}
		}
	}
	if n, err := rail.CountUnresolved(ctx, w.db, x402.Name); err != nil || n != 0 {
		open, _ := rail.Unresolved(ctx, w.db, x402.Name, 0)
		var list []string
		for _, in := range open {
			list = append(list, fmt.Sprintf("%s %s %s (%s)", in.Kind, in.ID, in.State, in.Error))
		}
		tb.Fatalf("%s: %d intents unresolved (%v): %s", what, n, err, strings.Join(list, "; "))
	}
	var acct ledger.Account
	err := w.db.View(ctx, func(tx store.Tx) error {
		for _, owed := range []string{"market/payback/", "market/payout/"} {
			if err := tx.Scan(owed, false, func(k string, _ []byte) error { return fmt.Errorf("%s still owed", k) }); err != nil {
				return err
			}
		}
		var err error
		acct, err = ledger.Get(tx, x402.Account)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	credited := map[string]int64{}
	seen := map[string]string{}
	for _, leg := range acct.Entries {
		memo := strings.ToLower(leg.Memo)
		if leg.Amount < 0 {
			i := strings.Index(memo, x402.RefPrefix+"0x")
			ref := memo[i : i+len(x402.RefPrefix)+66]
			if prev, ok := seen[ref]; ok {
				tb.Fatalf("%s: settlement %s credited twice: %s and %s", what, ref, prev, leg.Transfer)
			}
			seen[ref] = leg.Transfer
		}
		for payer := range funded {
			if strings.Contains(memo, strings.ToLower(payer)) {
				credited[payer] -= leg.Amount
			}
		}
		// A payout names its agent; it is paid to the address the agent
		// paid from.
		for agent, payer := range payerOf {
			if strings.Contains(memo, " payout ") && strings.HasSuffix(memo, " to "+agent) {
				credited[payer] -= leg.Amount
			}
		}
	}
	for payer, n := range funded {
		if charged := n - w.chainBalance(tb, payer); charged != credited[payer] {
			tb.Fatalf("%s: payer %s was charged %d at the facilitator and credited %d in the ledger", what, payer, charged, credited[payer])
		}
	}
	if held, in := w.chainBalance(tb, crypto.PubkeyToAddress(w.op.PublicKey).Hex()), -acct.Balances[market.Currency]; held != in {
		tb.Fatalf("%s: the operator holds %d at the facilitator and the market %d", what, held, in)
	}
	w.transfersMatch(tb, what, acct)
}

// txOf is the transaction a reference (x402:0x…) or a memo that holds
// one names, lower-cased; "" when there is none.
func txOf(s string) string {
	s = strings.ToLower(s)
	i := strings.Index(s, x402.RefPrefix+"0x")
	if i < 0 || len(s) < i+len(x402.RefPrefix)+66 {
		return ""
	}
	return s[i+len(x402.RefPrefix) : i+len(x402.RefPrefix)+66]
}

// transfersMatch checks the settled-up market against the facilitator
// transfer by transfer, with the rail's intents between them: every
// transfer the operator received at the facilitator is one collection
// that is done (credited once in the market's ledger, for its amount) or
// refunded; every transfer the operator sent is the refund of such a
// collection, a refund of a purchase (its refund_ref, one per purchase)
// or a payout (named once in the ledger); and nothing else moved. So no
// payment is credited twice and no refund is sent twice.
func (w *crashWorld) transfersMatch(tb testing.TB, what string, rl ledger.Account) {
	tb.Helper()
	ctx := context.Background()
	// At the facilitator: what the operator received and sent, by
	// transaction.
	received, sent := map[string]int64{}, map[string]int64{}
	err := w.chain.View(ctx, func(tx store.Tx) error {
		op, err := ledger.Get(tx, x402.AddressAccount(crypto.PubkeyToAddress(w.op.PublicKey).Hex()))
		if err != nil {
			return err
		}
		for _, leg := range op.Entries {
			if leg.Amount > 0 {
				received[strings.ToLower(leg.Transfer)] += leg.Amount
			} else {
				sent[strings.ToLower(leg.Transfer)] -= leg.Amount
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	// The rail's intents: what they say moved in and out.
	in, out := map[string]int64{}, map[string]int64{}
	done := map[string]int64{} // collections completed: credited
	refunded := map[string]string{}
	var payouts []string
	err = w.db.View(ctx, func(tx store.Tx) error {
		for _, prefix := range []string{"rail/x402/nonce/", "rail/x402/out/"} {
			err := tx.Scan(prefix, false, func(k string, v []byte) error {
				var it rail.Intent
				if err := json.Unmarshal(v, &it); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				ref := txOf(it.Ref)
				switch {
				case it.Kind == rail.IntentCollect && it.State == rail.StateDone:
					in[ref] += it.Amount
					done[ref] += it.Amount
				case it.Kind == rail.IntentCollect && it.State == rail.StateRefunded:
					in[ref] += it.Amount
					out[txOf(it.RefundRef)] += it.Amount
				case it.State == rail.StateDone: // a refund or a payout
					out[ref] += it.Amount
					if it.Kind == rail.IntentRefund {
						// Its purpose names the payment it refunds
						// (refund/<payment_ref>/<amount>): one refund a payment.
						paid := txOf(it.Purpose.Key)
						if prev, ok := refunded[paid]; ok {
							return fmt.Errorf("payment %s refunded twice: %s and %s", paid, prev, it.Ref)
						}
						refunded[paid] = ref
					} else {
						payouts = append(payouts, ref)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		// Each purchase refunded on the rail names its refund.
		return tx.Scan("market/purchase/", false, func(_ string, v []byte) error {
			var p market.Purchase
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			if p.Rail == x402.Name && p.Status == market.PurchaseRefunded && refunded[txOf(p.PaymentRef)] != txOf(p.RefundRef) {
				return fmt.Errorf("purchase %s has refund_ref %q and the rail refunded its payment as %q", p.ID, p.RefundRef, refunded[txOf(p.PaymentRef)])
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	// The market's ledger: each completed collection credited once, for
	// its amount; each payout named once.
	credits, named := map[string]int64{}, map[string]int{}
	for _, leg := range rl.Entries {
		ref := txOf(leg.Memo)
		switch {
		case leg.Amount < 0:
			credits[ref] -= leg.Amount
		case strings.Contains(leg.Memo, " payout "):
			named[ref]++
		}
	}
	for _, ref := range payouts {
		if named[ref] != 1 {
			tb.Fatalf("%s: payout %s is named %d times in the ledger", what, ref, named[ref])
		}
	}
	for name, pair := range map[string][2]map[string]int64{
		"received at the facilitator / collected by the rail":       {received, in},
		"sent from the operator / refunded or paid out by the rail": {sent, out},
		"credited in the ledger / collections completed":            {credits, done},
	} {
		if !maps.Equal(pair[0], pair[1]) {
			tb.Fatalf("%s: %s differ:\n%v\n%v", what, name, pair[0], pair[1])
		}
	}
}

// The collection's points, and the refund's.
var (
	collectPoints = []string{rail.FaultBeforeIntent, rail.FaultAfterIntent, rail.FaultAfterVerify, rail.FaultAfterSettle, rail.FaultAfterCommit}
	refundPoints  = []string{rail.FaultRefundAfterIntent, rail.FaultRefundAfterSettle}
)

// TestX402_Crash is the property of payments across a crash: random
// sequences of deposits and purchases paid over x402, withdrawals paid
// out on the rail, challenges (upheld ones refund on the rail), payments
// sent again, ticks, and crashes of the node at every named point of a
// payment and of a refund (rail.FaultPoints, through the fault hooks
// that ASSAY_TEST_CRASH uses in the binary), against the local
// facilitator's simulated balances. A crash abandons the node mid-call
// and closes its store; a new node opens the store again and resolves
// what it finds (at start-up, or by a tick once the dead attempt's lease
// ran out). After every step nothing is unresolved, every payer's charge
// at the facilitator equals what the ledger credited from it, every
// transfer at the facilitator is one the market recorded once (no
// payment credited twice, no refund sent twice), and both ledgers sum
// to zero. A payment sent again answers its first result. On badger on
// disk and, with ASSAY_TEST_POSTGRES, PostgreSQL; with the chain's
// JSON-RPC, and without (the facilitator asked again). A failure names
// its seed: rerun it with -market.seed=N -market.runs=1; longer runs
// with -market.runs and -market.ops.
func TestX402_Crash(t *testing.T) {
	for run := range *propRuns {
		seed := *propSeed + uint64(run)
		withChain := run%2 == 0
		t.Run(fmt.Sprintf("badger/seed=%d/chain=%v", seed, withChain), func(t *testing.T) {
			t.Parallel() // each sequence owns its stores, its facilitator and its clock
			dir := t.TempDir()
			// A small memtable: every open allocates a whole one.
			open := func() (store.Store, error) { return storage.Open(dir, storage.Options{MemTableSize: 1 << 20}) }
			crashRun(t, newCrashWorld(t, open, withChain), seed, *propOps)
		})
	}
	if os.Getenv(pgtest.Env) == "" {
		t.Log("PostgreSQL skipped: set " + pgtest.Env)
		return
	}
	for run := range max(2, *propRuns/2) {
		seed := *propSeed + uint64(run)
		t.Run(fmt.Sprintf("postgres/seed=%d/chain=%v", seed, run%2 == 0), func(t *testing.T) {
			t.Parallel()
			url := pgtest.URL(t)
			open := func() (store.Store, error) { return postgres.Open(context.Background(), url, postgres.Options{}) }
			crashRun(t, newCrashWorld(t, open, run%2 == 0), seed, *propOps)
		})
	}
}

// sent is a payment a request presented, and what it answered.
type sent struct {
	deposit        bool
	agent, listing string
	amount         market.AmountRequest
	pay            market.Pay
	first          []byte // the first answer's body; nil when it crashed or failed
}

func crashRun(t *testing.T, w *crashWorld, seed uint64, ops int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var payers []*ecdsa.PrivateKey
	funded := map[string]int64{}
	for i := range 3 {
		k, _ := crypto.ToECDSA(crypto.Keccak256([]byte(fmt.Sprint("crash payer", i))))
		payers = append(payers, k)
		a := crypto.PubkeyToAddress(k.PublicKey).Hex()
		if _, err := w.fac.Fund(ctx, a, 200_000_000); err != nil {
			t.Fatal(err)
		}
		funded[a] = 200_000_000
	}
	agents := []string{"b0", "b1", "b2"}
	payerOf := map[string]string{}
	for i, a := range agents {
		payerOf[a] = crypto.PubkeyToAddress(payers[i].PublicKey).Hex()
	}
	var listings []string
	var bought [][2]string
	var payments []*sent
	nonce := 0
	crashes := map[string]int{}
	sign := func(err error, k *ecdsa.PrivateKey) market.Pay {
		var pr *rail.PaymentRequired
		if !errors.As(err, &pr) {
			t.Fatalf("seed %d: want a payment required, got %v", seed, err)
		}
		req := pr.Required.(x402.Required)
		nonce++
		var n [32]byte
		copy(n[:], crypto.Keccak256([]byte(fmt.Sprint(t.Name(), nonce))))
		p, perr := x402.NewPayment(k, req.Accepts[0], 0, w.ck.Now().Unix()+req.Accepts[0].MaxTimeoutSeconds, n)
		if perr != nil {
			t.Fatal(perr)
		}
		h, _ := x402.Encode(p)
		return market.Pay{Proof: h, Resource: req.Resource.URL}
	}
	// armLeast arms a crash at the one of points crashed at least so far
	// (from a random start), so that a short run reaches them all.
	armLeast := func(points []string) {
		start := rng.IntN(len(points))
		least := points[start]
		for i := range points {
			if p := points[(start+i)%len(points)]; crashes[p] < crashes[least] {
				least = p
			}
		}
		w.crash.arm(least)
	}
	// maybeCrash arms a crash at one of points, one call in three, or
	// else, one call in six, loses the facilitator's next answer to
	// /settle.
	maybeCrash := func(points []string) {
		switch rng.IntN(6) {
		case 0, 1:
			armLeast(points)
		case 2:
			w.lose.Store(true)
		}
	}
	lost, lostNow, withdrawals := 0, false, 0
	// call runs f on the node; after a crash it restarts a node and
	// resolves, and checks that everything is settled up. An answer lost
	// leaves the payment pending: a tick resolves it.
	call := func(step int, what string, f func()) bool {
		p := w.run(f)
		w.crash.arm("")
		lostNow = w.lose.Swap(false)
		if lostNow {
			lost++
			if _, err := w.svc.Tick(ctx, market.TickRequest{}); err != nil {
				t.Fatalf("seed %d step %d: the tick after a lost answer: %v", seed, step, err)
			}
		}
		if p == "" {
			return true
		}
		crashes[p]++
		w.recover(t, rng.IntN(2) == 0)
		w.settledUp(t, fmt.Sprintf("seed %d step %d: %s crashed at %s, then resolved", seed, step, what, p), funded, payerOf)
		return false
	}
	for step := range ops {
		switch op := rng.IntN(17); {
		case op <= 1 || len(listings) < 2:
			req := market.PublishRequest{Agent: "s9", Title: "t", ProblemStatement: fmt.Sprint("problem ", step), Artifact: raw(table),
				ArtifactType: "dataset", PriceUSD: raw(fmt.Sprintf(`"%d.%02d"`, rng.IntN(3), 1+rng.IntN(99))), Checker: &market.CheckerSpec{SHA256: w.squares}}
			r, err := w.svc.Publish(ctx, anon, req, idem.Request{})
			if err != nil {
				t.Fatalf("seed %d step %d: publish: %v", seed, step, err)
			}
			var p market.Published
			json.Unmarshal(r.Body, &p)
			listings = append(listings, p.Listing.ListingID)
		case op <= 7: // a purchase paid over x402
			i := rng.IntN(len(agents))
			buyer, listing := agents[i], listings[rng.IntN(len(listings))]
			if slices.Contains(bought, [2]string{listing, buyer}) {
				continue
			}
			_, err := w.svc.Buy(ctx, anon, listing, market.PurchaseRequest{Agent: buyer}, idem.Request{})
			if !errors.As(err, new(*rail.PaymentRequired)) {
				if err != nil && fault.KindOf(err) == fault.Internal {
					t.Fatalf("seed %d step %d: buy unpaid: %v", seed, step, err)
				}
				if err == nil {
					bought = append(bought, [2]string{listing, buyer})
				}
				continue
			}
			s := &sent{agent: buyer, listing: listing, pay: sign(err, payers[i])}
			payments = append(payments, s)
			maybeCrash(collectPoints)
			var r idem.Reply
			if call(step, "a purchase", func() {
				r, err = w.svc.Buy(ctx, anon, listing, market.PurchaseRequest{Agent: buyer, Pay: s.pay}, idem.Request{})
			}) {
				switch {
				case err == nil:
					s.first = r.Body
				case !lostNow || fault.CodeOf(err) != rail.ECodePaymentPending:
					t.Fatalf("seed %d step %d: buy paid: %v", seed, step, err)
				}
			}
			bought = append(bought, [2]string{listing, buyer})
		case op <= 9: // a deposit paid over x402
			i := rng.IntN(len(agents))
			s := &sent{deposit: true, agent: agents[i], amount: market.AmountRequest{AmountUSD: raw(fmt.Sprintf(`"0.%02d"`, 1+rng.IntN(99)))}}
			_, err := w.svc.Deposit(ctx, anon, s.agent, s.amount, idem.Request{})
			s.amount.Pay = sign(err, payers[i])
			payments = append(payments, s)
			maybeCrash(collectPoints)
			var r idem.Reply
			if call(step, "a deposit", func() { r, err = w.svc.Deposit(ctx, anon, s.agent, s.amount, idem.Request{}) }) {
				switch {
				case err == nil:
					s.first = r.Body
				case !lostNow || fault.CodeOf(err) != rail.ECodePaymentPending:
					t.Fatalf("seed %d step %d: deposit: %v", seed, step, err)
				}
			}
		case op == 10: // a withdrawal, paid out to the address the agent paid from
			agent := agents[rng.IntN(len(agents))]
			wl, err := w.svc.WalletOf(ctx, agent)
			if err != nil {
				t.Fatal(err)
			}
			if wl.Balance == 0 {
				continue
			}
			if rng.IntN(3) == 0 {
				w.lose.Store(true)
			}
			withdrawals++
			call(step, "a withdrawal", func() {
				_, err = w.svc.Withdraw(ctx, anon, agent, market.AmountRequest{AmountUSD: raw(fmt.Sprintf(`"%s"`, market.USD(1+rng.Int64N(int64(wl.Balance)))))}, idem.Request{})
			})
			if err != nil && !(lostNow && fault.CodeOf(err) == rail.ECodePaymentPending) {
				t.Fatalf("seed %d step %d: withdraw: %v", seed, step, err)
			}
		case op <= 12: // a challenge: "4" fails the squares checker (upheld: a refund on the rail), "3" passes it (rejected)
			if len(bought) == 0 {
				continue
			}
			b := bought[rng.IntN(len(bought))]
			evidence := `"4"`
			switch rng.IntN(4) {
			case 0:
				evidence = `"3"`
			case 1, 2:
				armLeast(refundPoints)
			}
			var err error
			call(step, "a challenge", func() {
				_, err = w.svc.Challenge(ctx, anon, b[0], market.ChallengeRequest{Agent: b[1], Evidence: raw(evidence)}, idem.Request{})
			})
			if err != nil && fault.KindOf(err) == fault.Internal {
				t.Fatalf("seed %d step %d: challenge: %v", seed, step, err)
			}
		case op <= 14: // a payment sent again answers its first result, and moves nothing
			if len(payments) == 0 {
				continue
			}
			s := payments[rng.IntN(len(payments))]
			before := map[string]int64{}
			for a := range funded {
				before[a] = w.chainBalance(t, a)
			}
			var r idem.Reply
			var err error
			if s.deposit {
				a := s.amount
				r, err = w.svc.Deposit(ctx, anon, s.agent, a, idem.Request{})
			} else {
				r, err = w.svc.Buy(ctx, anon, s.listing, market.PurchaseRequest{Agent: s.agent, Pay: s.pay}, idem.Request{})
			}
			if s.first != nil {
				if err != nil || !r.Replayed || string(r.Body) != string(s.first) {
					t.Fatalf("seed %d step %d: a payment sent again answered %v (replayed %v), not its first result", seed, step, err, r.Replayed)
				}
				for a, n := range before {
					if w.chainBalance(t, a) != n {
						t.Fatalf("seed %d step %d: a payment sent again moved money", seed, step)
					}
				}
			} else if err != nil && fault.KindOf(err) == fault.Internal {
				t.Fatalf("seed %d step %d: a payment whose first request crashed, sent again: %v", seed, step, err)
			}
			if s.first == nil && err == nil && strings.Contains(string(r.Body), `"payment":{`) {
				s.first = r.Body // paid by this payment, not from the wallet
			}
			// Sent for another purpose, it is refused.
			if !s.deposit && s.first != nil && len(listings) > 1 {
				other := listings[0]
				if other == s.listing {
					other = listings[1]
				}
				if _, err := w.svc.Buy(ctx, anon, other, market.PurchaseRequest{Agent: s.agent, Pay: s.pay}, idem.Request{}); err != nil &&
					fault.CodeOf(err) != x402.CodePaymentReplayed && fault.CodeOf(err) != market.ECodeAlreadyPurchased {
					t.Fatalf("seed %d step %d: a payment sent for another listing: %v, want payment_replayed", seed, step, err)
				}
			}
		default: // time passes, windows close, a tick runs
			w.ck.Add(time.Duration(rng.IntN(40)) * time.Minute)
			if _, err := w.svc.Tick(ctx, market.TickRequest{}); err != nil {
				t.Fatalf("seed %d step %d: tick: %v", seed, step, err)
			}
		}
		w.settledUp(t, fmt.Sprintf("seed %d step %d", seed, step), funded, payerOf)
	}
	t.Logf("seed %d: %d payments, %d withdrawals, crashes by point %v, %d answers lost", seed, len(payments), withdrawals, crashes, lost)
}
