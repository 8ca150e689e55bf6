package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func openStore(tb testing.TB) store.Store {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// post posts t in its own transaction. Post's error is returned, but the
// transaction commits whatever Post wrote, so that a test sees that a
// refused transfer wrote nothing by itself.
func post(tb testing.TB, db store.Store, t ledger.Transfer) error {
	tb.Helper()
	var perr error
	if err := db.Update(context.Background(), func(tx store.Tx) error {
		perr = ledger.Post(tx, t)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return perr
}

func check(tb testing.TB, db store.Store) ledger.Audit {
	tb.Helper()
	var a ledger.Audit
	if err := db.View(context.Background(), func(tx store.Tx) error {
		var err error
		a, err = ledger.Check(tx)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return a
}

func balance(tb testing.TB, db store.Store, account string) int64 {
	tb.Helper()
	var b int64
	if err := db.View(context.Background(), func(tx store.Tx) error {
		var err error
		b, err = ledger.Balance(tx, account, "credits")
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return b
}

// keys counts every key the ledger holds.
func keys(tb testing.TB, db store.Store) int {
	tb.Helper()
	n := 0
	if err := db.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan("ledger/", false, func(string, []byte) error { n++; return nil })
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		a, b int64
		ok   bool
	}{
		{1, 2, true}, {-1, -2, true}, {math.MaxInt64, 0, true}, {math.MaxInt64, -1, true},
		{math.MaxInt64, 1, false}, {math.MinInt64, -1, false}, {math.MinInt64, math.MaxInt64, true},
		{math.MaxInt64, math.MaxInt64, false}, {math.MinInt64, math.MinInt64, false}, {1 << 62, 1 << 62, false},
	} {
		s, ok := ledger.Add(tc.a, tc.b)
		exact := new(big.Int).Add(big.NewInt(tc.a), big.NewInt(tc.b))
		if ok != tc.ok || ok && exact.Int64() != s {
			t.Errorf("Add(%d, %d) = %d, %v; want ok %v", tc.a, tc.b, s, ok, tc.ok)
		}
	}
}

func TestPost(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := openStore(t)
		for i, tr := range []ledger.Transfer{
			{ID: "fund", From: "rail:dev", To: "hold:escrow:c1", Amount: ledger.MaxAmount, Currency: "credits"},
			{ID: "payout", From: "hold:escrow:c1", To: "agent:did:nanda:seller", Amount: ledger.MaxAmount, Currency: "credits"},
		} {
			if err := post(t, db, tr); err != nil {
				t.Fatalf("transfer %d: %v", i, err)
			}
		}
		if b := balance(t, db, "agent:did:nanda:seller"); b != ledger.MaxAmount {
			t.Errorf("seller holds %d, want %d", b, int64(ledger.MaxAmount))
		}
		if b := balance(t, db, "rail:dev"); b != -ledger.MaxAmount {
			t.Errorf("rail holds %d, want %d", b, -int64(ledger.MaxAmount))
		}
		if a := check(t, db); !a.Balanced || a.Sums["credits"] != 0 {
			t.Errorf("Check = %+v, want balanced", a)
		}
	})
	for _, tc := range []struct {
		name   string
		amount int64
	}{{"ErrZero", 0}, {"ErrNegative", -1}, {"ErrOverMax", ledger.MaxAmount + 1}, {"ErrMaxInt64", math.MaxInt64}, {"ErrMinInt64", math.MinInt64}} {
		t.Run(tc.name, func(t *testing.T) {
			db := openStore(t)
			err := post(t, db, ledger.Transfer{ID: "x", From: "rail:dev", To: "agent:a", Amount: tc.amount, Currency: "credits"})
			if fault.CodeOf(err) != "invalid_amount" || fault.KindOf(err) != fault.Invalid {
				t.Fatalf("Post of %d = %v, want invalid_amount", tc.amount, err)
			}
			if !strings.Contains(fault.MessageOf(err), fmt.Sprint(int64(ledger.MaxAmount))) {
				t.Errorf("message %q does not state the bound", fault.MessageOf(err))
			}
			if n := keys(t, db); n != 0 {
				t.Errorf("a refused transfer wrote %d keys", n)
			}
		})
	}
	t.Run("ErrPostedTwice", func(t *testing.T) {
		db := openStore(t)
		tr := ledger.Transfer{ID: "x", From: "rail:dev", To: "agent:a", Amount: 5, Currency: "credits"}
		if err := post(t, db, tr); err != nil {
			t.Fatal(err)
		}
		before := keys(t, db)
		if err := post(t, db, tr); err == nil {
			t.Fatal("a transfer was posted twice")
		}
		if after := keys(t, db); after != before || balance(t, db, "agent:a") != 5 {
			t.Errorf("the second post changed the ledger: %d keys, was %d", after, before)
		}
	})
}

// TestPost_ErrBalanceLimit replays the overflow that was reported: 1,025
// deposits of 2^53-1 into one wallet once wrapped its balance around to a
// negative number while the ledger still summed to zero. Now the deposits
// past the bound are refused, nothing of them is written, and the balance
// stays exact.
func TestPost_ErrBalanceLimit(t *testing.T) {
	db := openStore(t)
	accepted, refused := new(big.Int), 0
	for i := range 1025 {
		err := post(t, db, ledger.Transfer{ID: fmt.Sprintf("dep-%d", i), From: "rail:dev", To: "agent:whale", Amount: ledger.MaxAmount, Currency: "credits"})
		switch {
		case err == nil:
			accepted.Add(accepted, big.NewInt(ledger.MaxAmount))
		case fault.CodeOf(err) == ledger.ECodeBalanceLimit && fault.KindOf(err) == fault.Conflict:
			refused++
		default:
			t.Fatalf("deposit %d: %v", i, err)
		}
	}
	if refused == 0 {
		t.Fatal("1,025 deposits of 2^53-1 were all accepted")
	}
	if !accepted.IsInt64() || accepted.Int64() > ledger.MaxBalance {
		t.Fatalf("accepted %s, past the bound", accepted)
	}
	if b := balance(t, db, "agent:whale"); b != accepted.Int64() || b <= 0 {
		t.Errorf("wallet holds %d, want %s", b, accepted)
	}
	if b := balance(t, db, "rail:dev"); b != -accepted.Int64() {
		t.Errorf("rail holds %d, want -%s", b, accepted)
	}
	if a := check(t, db); !a.Balanced || a.Sums["credits"] != 0 || len(a.OutOfBounds) != 0 {
		t.Errorf("Check = %+v, want balanced", a)
	}
	// The bound leaves room: most of the deposits up to MaxBalance were
	// taken (at least half: a counter fills only when its share is used).
	if min := new(big.Int).Div(big.NewInt(ledger.MaxBalance), big.NewInt(2)); accepted.Cmp(min) < 0 {
		t.Errorf("only %s was accepted before the bound refused deposits", accepted)
	}
	t.Logf("accepted %d deposits (%s), refused %d", 1025-refused, accepted, refused)
}

// TestCheck_OutOfBounds writes legs the way a ledger without bounds did:
// 1,025 deposits of 2^53-1 that wrap an int64 balance around. The legs
// still sum to zero in int64 arithmetic; Check is exact and says the
// ledger is not sound, and Get refuses to report a wrapped balance.
func TestCheck_OutOfBounds(t *testing.T) {
	db := openStore(t)
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for i := range 1025 {
			for j, leg := range []ledger.Leg{
				{Transfer: fmt.Sprintf("dep-%d", i), Account: "rail:dev", Counter: "agent:whale", Amount: -ledger.MaxAmount, Currency: "credits"},
				{Transfer: fmt.Sprintf("dep-%d", i), Account: "agent:whale", Counter: "rail:dev", Amount: ledger.MaxAmount, Currency: "credits"},
			} {
				b, _ := json.Marshal(leg)
				if err := tx.Set(fmt.Sprintf("ledger/entry/%s/%s/%d", url.PathEscape(leg.Account), leg.Transfer, j), b); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := check(t, db)
	if a.Balanced || len(a.OutOfBounds) == 0 {
		t.Fatalf("Check = %+v, want not balanced with what is out of bounds", a)
	}
	want := new(big.Int).Mul(big.NewInt(1025), big.NewInt(ledger.MaxAmount))
	if !strings.Contains(strings.Join(a.OutOfBounds, "\n"), "account agent:whale holds "+want.String()+" credits") {
		t.Errorf("OutOfBounds = %q, want the wallet's exact balance", a.OutOfBounds)
	}
	err = db.View(context.Background(), func(tx store.Tx) error { _, err := ledger.Get(tx, "agent:whale"); return err })
	if fault.CodeOf(err) != "ledger_out_of_bounds" {
		t.Errorf("Get of the wrapped wallet = %v, want ledger_out_of_bounds", err)
	}
}

// TestPost_Property posts random transfers of extreme amounts (1, 2^53-1
// and near it, and random ones) among a few accounts and checks, against
// an exact model, that every accepted transfer moved exactly its amount,
// every refused one moved nothing and said why, no balance ever passes
// MaxBalance, and the ledger is balanced throughout.
func TestPost_Property(t *testing.T) {
	db := openStore(t)
	accounts := []string{"rail:dev", "agent:a", "agent:b", "hold:h"}
	model := map[string]*big.Int{}
	for _, a := range accounts {
		model[a] = new(big.Int)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	amounts := []int64{1, 2, ledger.MaxAmount, ledger.MaxAmount - 1, ledger.MaxAmount + 1, 0, -1, math.MaxInt64, math.MinInt64}
	steps := 4000
	if testing.Short() {
		steps = 1000
	}
	var limits int
	for i := range steps {
		from, to := accounts[rng.IntN(len(accounts))], accounts[rng.IntN(len(accounts))]
		if from == to {
			continue
		}
		// Mostly from the rail, so that balances reach their bounds.
		if rng.IntN(4) > 0 {
			from = "rail:dev"
			if to == from {
				to = "agent:a"
			}
		}
		amount := amounts[rng.IntN(len(amounts))]
		if rng.IntN(3) == 0 {
			amount = rng.Int64N(ledger.MaxAmount) + 1
		}
		err := post(t, db, ledger.Transfer{ID: fmt.Sprintf("t%d", i), From: from, To: to, Amount: amount, Currency: "credits"})
		switch {
		case amount <= 0 || amount > ledger.MaxAmount:
			if fault.CodeOf(err) != "invalid_amount" {
				t.Fatalf("step %d: amount %d: %v, want invalid_amount", i, amount, err)
			}
		case err == nil:
			model[from].Sub(model[from], big.NewInt(amount))
			model[to].Add(model[to], big.NewInt(amount))
		case fault.CodeOf(err) == ledger.ECodeBalanceLimit:
			limits++
		default:
			t.Fatalf("step %d: %v", i, err)
		}
		if i%250 == 0 || i == steps-1 {
			for _, a := range accounts {
				if got := balance(t, db, a); got != model[a].Int64() || model[a].CmpAbs(big.NewInt(ledger.MaxBalance)) > 0 {
					t.Fatalf("step %d: %s holds %d, model %s", i, a, got, model[a])
				}
			}
			if a := check(t, db); !a.Balanced {
				t.Fatalf("step %d: Check = %+v", i, a)
			}
		}
	}
	if limits == 0 {
		t.Errorf("no transfer in %d reached a balance bound: the test does not exercise it", steps)
	}
	t.Logf("%d transfers refused at the balance bound; rail holds %s", limits, model["rail:dev"])
}

// TestPost_Hammer posts from many goroutines at once through one rail and
// into one agent, as the court's funds and refunds do: the bound's
// counters must not make such transfers contend until the store gives up,
// and every transfer lands exactly.
func TestPost_Hammer(t *testing.T) {
	db := openStore(t)
	const workers, each = 128, 20
	var (
		wg    sync.WaitGroup
		calls atomic.Int64 // Update runs fn again after a conflict
	)
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				errs <- db.Update(context.Background(), func(tx store.Tx) error {
					calls.Add(1)
					if err := ledger.Post(tx, ledger.Transfer{ID: id + ".fund", From: "rail:dev", To: "hold:" + id, Amount: 7, Currency: "credits"}); err != nil {
						return err
					}
					if err := ledger.Post(tx, ledger.Transfer{ID: id + ".refund", From: "hold:" + id, To: "agent:buyer", Amount: 7, Currency: "credits"}); err != nil {
						return err
					}
					// The rest of a court's transaction: a receipt signed,
					// records written.
					time.Sleep(time.Millisecond)
					return nil
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Without the counters no two of these transfers touch a key in
	// common; with them, few may (about 14% were retried here with 512
	// counters, 320% with 16).
	retries := calls.Load() - workers*each
	t.Logf("%d retries for %d transactions", retries, workers*each)
	if retries > workers*each/2 {
		t.Errorf("%d retries for %d transactions: the bound's counters make transfers contend", retries, workers*each)
	}
	if b := balance(t, db, "agent:buyer"); b != 7*workers*each {
		t.Errorf("buyer holds %d, want %d", b, 7*workers*each)
	}
	if a := check(t, db); !a.Balanced {
		t.Errorf("Check = %+v", a)
	}
}

// TestLock: debits of one account that each check its balance first,
// made concurrently by transactions that write no key in common but the
// lock (as a market purchase and a judgment bond from one wallet are),
// never spend more than the account holds; without Lock the same
// debits overdraw it.
func TestLock(t *testing.T) {
	for _, locked := range []bool{true, false} {
		t.Run(fmt.Sprintf("locked=%v", locked), func(t *testing.T) {
			db := openStore(t)
			if err := post(t, db, ledger.Transfer{ID: "fund", From: "rail:dev", To: "agent:payer", Amount: 10, Currency: "credits"}); err != nil {
				t.Fatal(err)
			}
			const debits = 16
			var wg sync.WaitGroup
			var taken atomic.Int64
			start := make(chan struct{})
			for i := range debits {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					var ok bool
					err := db.Update(context.Background(), func(tx store.Tx) error {
						ok = false
						if locked {
							if err := ledger.Lock(tx, "agent:payer"); err != nil {
								return err
							}
						}
						bal, err := ledger.Balance(tx, "agent:payer", "credits")
						if err != nil || bal < 10 {
							return err
						}
						// The rest of a service's transaction, so that
						// the debits overlap.
						time.Sleep(2 * time.Millisecond)
						ok = true
						return ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("debit-%d", i), From: "agent:payer", To: fmt.Sprintf("hold:%d", i), Amount: 10, Currency: "credits"})
					})
					if err != nil {
						t.Error(err)
					}
					if ok {
						taken.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			b := balance(t, db, "agent:payer")
			switch {
			case locked && (taken.Load() != 1 || b != 0):
				t.Fatalf("with Lock: %d debits of the whole balance taken, balance %d; want 1 and 0", taken.Load(), b)
			case !locked && b >= 0:
				t.Logf("without Lock no debit overdrew this time (%d taken)", taken.Load())
			}
		})
	}
}
