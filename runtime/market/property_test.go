package market_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/store"
)

var (
	propSeed = flag.Uint64("market.seed", 1, "first seed of the property tests (TestService_Property, TestX402_Property, TestX402_Crash)")
	propRuns = flag.Int("market.runs", 4, "sequences each property test runs")
	propOps  = flag.Int("market.ops", 120, "operations per sequence")
)

// TestService_Property runs random sequences of deposits, publications,
// purchases, challenges, resolutions, clock moves with ticks and
// withdrawals, by random agents with random amounts, and checks after
// every operation that the ledger sums to zero, that no wallet and no hold
// is negative, and that every failure is a coded error, not an internal
// one. A failure names its seed: rerun it with -market.seed=N
// -market.runs=1.
func TestService_Property(t *testing.T) {
	for run := range *propRuns {
		seed := *propSeed + uint64(run)
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { propertyRun(t, seed, *propOps) })
	}
}

func propertyRun(t *testing.T, seed uint64, ops int) {
	ctx := context.Background()
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	agents := []string{"a0", "a1", "a2", "g17-house", "a4"}
	var listings, purchases, challenges []string
	var bought [][2]string // listing, buyer
	pick := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return xs[rng.IntN(len(xs))]
	}
	money := func() json.RawMessage { // $0.000001 to $9.99, now and then a bad or an extreme amount
		switch rng.IntN(24) {
		case 0:
			return raw(`"-1"`)
		case 1:
			return raw(`"0.0000001"`)
		case 2:
			return raw(`"1000000000"`) // MaxAmount
		case 3:
			return raw(`"1000000000.000001"`) // MaxAmount + 1 micro-USD
		case 4:
			return raw(`"9007199254.740991"`)
		case 5:
			return raw(`"999999999.999999"`)
		}
		return raw(fmt.Sprintf(`"%d.%06d"`, rng.IntN(10), rng.IntN(1_000_000)))
	}
	check := func(step int, what string, err error) {
		t.Helper()
		if err != nil && fault.KindOf(err) == fault.Internal {
			t.Fatalf("seed %d step %d %s: internal error %v", seed, step, what, err)
		}
		sums, serr := ledger.SumsOf(ctx, e.svc.Store())
		if serr != nil {
			t.Fatal(serr)
		}
		for c, v := range sums {
			if v != 0 {
				t.Fatalf("seed %d step %d %s: ledger sums to %d %s", seed, step, what, v, c)
			}
		}
		for _, a := range agents {
			if b := e.balance(t, a); b < 0 || b > market.MaxTotal {
				t.Fatalf("seed %d step %d %s: wallet %s is %v", seed, step, what, a, b)
			}
		}
		e.exact(t)
		serr = e.svc.Store().View(ctx, func(tx store.Tx) error {
			for _, p := range purchases {
				if b, err := ledger.Balance(tx, "hold:market:"+p, market.Currency); err != nil || b < 0 {
					return fmt.Errorf("hold of purchase %s is %d (%v)", p, b, err)
				}
			}
			for _, l := range listings {
				if b, err := ledger.Balance(tx, "hold:bond:"+l, market.Currency); err != nil || b < 0 {
					return fmt.Errorf("bond of listing %s is %d (%v)", l, b, err)
				}
			}
			return nil
		})
		if serr != nil {
			t.Fatalf("seed %d step %d %s: %v", seed, step, what, serr)
		}
	}
	ok := map[string]int{}
	for step := range ops {
		var (
			what string
			err  error
			r    market.Reply
		)
		switch op := rng.IntN(9); op {
		case 0, 1:
			a := pick(agents)
			what = "deposit " + a
			_, err = e.svc.Deposit(ctx, anon, a, market.AmountRequest{AmountUSD: money()}, idem.Request{})
		case 2:
			a := pick(agents)
			what = "withdraw " + a
			_, err = e.svc.Withdraw(ctx, anon, a, market.AmountRequest{AmountUSD: money()}, idem.Request{})
		case 3:
			a := pick(agents)
			what = "publish " + a
			req := market.PublishRequest{Agent: a, Title: "squares", ProblemStatement: fmt.Sprintf("squares table %d", step),
				Artifact: raw(table), ArtifactType: "dataset", PriceUSD: money()}
			if rng.IntN(2) == 0 {
				req.Checker = &market.CheckerSpec{SHA256: e.squares}
			}
			r, err = e.svc.Publish(ctx, anon, req, idem.Request{})
			if err == nil {
				var p market.Published
				if err := json.Unmarshal(r.Body, &p); err != nil {
					t.Fatal(err)
				}
				listings = append(listings, p.Listing.ListingID)
			}
		case 4:
			a, l := pick(agents), pick(listings)
			what = "buy " + l + " by " + a
			r, err = e.svc.Buy(ctx, anon, l, market.PurchaseRequest{Agent: a}, idem.Request{})
			if err == nil {
				var b market.Bought
				if err := json.Unmarshal(r.Body, &b); err != nil {
					t.Fatal(err)
				}
				purchases = append(purchases, b.Purchase.ID)
				bought = append(bought, [2]string{l, a})
			}
		case 5:
			a, l := pick(agents), pick(listings)
			if len(bought) > 0 && rng.IntN(4) > 0 { // mostly a buyer's own purchase
				b := bought[rng.IntN(len(bought))]
				l, a = b[0], b[1]
			}
			evidence := []string{`"4"`, `"3"`}[rng.IntN(2)]
			what = "challenge " + l + " by " + a + " with " + evidence
			r, err = e.svc.Challenge(ctx, anon, l, market.ChallengeRequest{Agent: a, Evidence: raw(evidence)}, idem.Request{})
			if err == nil {
				var c struct{ Challenge market.Challenge }
				if err := json.Unmarshal(r.Body, &c); err != nil {
					t.Fatal(err)
				}
				challenges = append(challenges, c.Challenge.ID)
			}
		case 6:
			c := pick(challenges)
			verdict := []string{"uphold", "reject"}[rng.IntN(2)]
			what = verdict + " " + c
			_, err = e.svc.Resolve(ctx, principal.Operator(), c, market.ResolveRequest{Verdict: verdict}, idem.Request{})
		case 7:
			d := time.Duration(rng.IntN(100)) * time.Hour / 30
			what = fmt.Sprint("advance ", d, " and tick")
			e.ck.Add(d)
			_, err = e.svc.Tick(ctx, market.TickRequest{Samples: rng.IntN(2)})
		case 8:
			a, l := pick(agents), pick(listings)
			what = "deactivate " + l + " by " + a
			_, err = e.svc.Deactivate(ctx, anon, l, market.DeactivateRequest{Agent: a}, idem.Request{})
		}
		check(step, what, err)
		if err == nil {
			ok[strings.Fields(what)[0]]++
		}
	}
	t.Logf("succeeded: %v; %d listings, %d purchases, %d challenges", ok, len(listings), len(purchases), len(challenges))
	// Close every window: all held money reaches the sellers or comes back.
	e.ck.Add(73 * time.Hour)
	_, err := e.svc.Tick(ctx, market.TickRequest{})
	check(ops, "final tick", err)
}

// exact fails unless the money the market says it holds is exactly what
// came in on the rail less what went out, and every account of the
// market's currency is within [0, MaxTotal] (the rail's within
// [-MaxTotal, 0]).
func (e *env) exact(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	st := must(e.svc.Stats(ctx))(tb)
	if st.MoneyInMarketUSD < 0 || st.MoneyInMarketUSD > market.MaxTotal {
		tb.Fatalf("money in market %s", st.MoneyInMarketUSD)
	}
	err := e.svc.Store().View(ctx, func(tx store.Tx) error {
		bal := map[string]int64{}
		err := ledger.Legs(tx, func(leg ledger.Leg) error {
			if leg.Currency == market.Currency {
				bal[leg.Account] += leg.Amount
			}
			return nil
		})
		if err != nil {
			return err
		}
		rail := e.svc.Rail().Account()
		if got := market.USD(-bal[rail]); got != st.MoneyInMarketUSD {
			return fmt.Errorf("the rail's account says $%s came in, the market says it holds $%s", got, st.MoneyInMarketUSD)
		}
		for a, b := range bal {
			if a != rail && (b < 0 || market.USD(b) > market.MaxTotal) {
				return fmt.Errorf("account %s holds %d", a, b)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestService_ExtremeAmounts: amounts at and past every bound. The
// deposits that overflowed a wallet are refused, a posting past a bound
// changes nothing, and the ledger stays exact and sums to zero.
func TestService_ExtremeAmounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	t.Run("ErrOverflowingDeposits", func(t *testing.T) {
		// The attack: 1,025 deposits of $9,007,199,254.740991 made a
		// balance wrap to a negative number.
		for range 1025 {
			_, err := e.svc.Deposit(ctx, anon, "whale", amount(`"9007199254.740991"`), idem.Request{})
			wantCode(t, err, "amount_too_large")
		}
		if b := e.balance(t, "whale"); b != 0 {
			t.Fatalf("whale %s", b)
		}
		for _, a := range []string{`"1000000000.000001"`, `"99999999999999999999"`, `"9223372036854.775807"`, `"9223372036854.775808"`} {
			_, err := e.svc.Deposit(ctx, anon, "whale", amount(a), idem.Request{})
			wantCode(t, err, "amount_too_large")
		}
		e.unchanged(t)
	})
	t.Run("ErrWalletLimit", func(t *testing.T) {
		for range 5 {
			must(e.svc.Deposit(ctx, anon, "whale", amount(`"1000000000"`), idem.Request{}))(t)
		}
		_, err := e.svc.Deposit(ctx, anon, "whale", amount(`"0.000001"`), idem.Request{})
		wantCode(t, err, "wallet_limit_exceeded")
		if b := e.balance(t, "whale"); b != market.MaxWallet {
			t.Fatalf("whale %s", b)
		}
		e.zero(t)
		e.exact(t)
	})
	t.Run("Trade", func(t *testing.T) {
		// A listing at the largest price: price + fee, the bond and the
		// settlement are exact.
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "whale", Title: "t", ProblemStatement: "squares table costly",
			Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw(`"1000000000"`), EstRecomputeUSD: raw(`"1000000000"`)}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		if p.Listing.Bond != market.MaxAmount/5 {
			t.Fatalf("bond %s", p.Listing.Bond)
		}
		_, err := e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "whale", Title: "t", ProblemStatement: "squares table costly",
			Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw(`"1000000000.000001"`)}, idem.Request{})
		wantCode(t, err, "amount_too_large")
		for range 2 {
			must(e.svc.Deposit(ctx, anon, "buyer", amount(`"1000000000"`), idem.Request{}))(t)
		}
		b := must(e.svc.Buy(ctx, anon, p.Listing.ListingID, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		var bought market.Bought
		json.Unmarshal(b.Body, &bought)
		if bought.TotalUSD != market.MaxAmount+market.MaxAmount*3/100 {
			t.Fatalf("total %s", bought.TotalUSD)
		}
		e.exact(t)
		e.ck.Add(73 * time.Hour)
		// The seller's wallet passes MaxWallet by what it earned: earnings
		// are never refused, and stay under MaxTotal.
		if got := e.balance(t, "whale"); got != market.MaxWallet-market.MaxAmount/5+market.MaxAmount {
			t.Fatalf("seller %s", got)
		}
		_, err = e.svc.Deposit(ctx, anon, "whale", amount("1"), idem.Request{})
		wantCode(t, err, "wallet_limit_exceeded")
		_, err = e.svc.Withdraw(ctx, anon, "whale", amount(`"1000000000.000001"`), idem.Request{})
		wantCode(t, err, "amount_too_large")
		must(e.svc.Withdraw(ctx, anon, "whale", amount(`"1000000000"`), idem.Request{}))(t)
		e.zero(t)
		e.exact(t)
	})
	t.Run("ErrMarketLimit", func(t *testing.T) {
		// Fill the market to MaxTotal, $5,000,000,000 a wallet.
		st := must(e.svc.Stats(ctx))(t)
		left := market.MaxTotal - st.MoneyInMarketUSD
		for w := 0; left > 0; w++ {
			for range 5 {
				if left == 0 {
					break
				}
				a := min(left, market.MaxAmount)
				must(e.svc.Deposit(ctx, anon, fmt.Sprintf("fill-%d", w), amount(`"`+a.String()+`"`), idem.Request{}))(t)
				left -= a
			}
		}
		if st := must(e.svc.Stats(ctx))(t); st.MoneyInMarketUSD != market.MaxTotal {
			t.Fatalf("market holds %s", st.MoneyInMarketUSD)
		}
		_, err := e.svc.Deposit(ctx, anon, "one-more", amount(`"0.000001"`), idem.Request{})
		wantCode(t, err, "market_limit_exceeded")
		if b := e.balance(t, "one-more"); b != 0 {
			t.Fatalf("one-more %s", b)
		}
		// A withdrawal makes room again.
		must(e.svc.Withdraw(ctx, anon, "fill-0", amount("1"), idem.Request{}))(t)
		must(e.svc.Deposit(ctx, anon, "one-more", amount("1"), idem.Request{}))(t)
		_, err = e.svc.Deposit(ctx, anon, "one-more", amount(`"0.000001"`), idem.Request{})
		wantCode(t, err, "market_limit_exceeded")
		e.zero(t)
		e.exact(t)
	})
}

// TestService_BoundsConcurrent: concurrent deposits at a bound: exactly
// as many succeed as fit, for one wallet and for the whole market.
func TestService_BoundsConcurrent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	race := func(n int, agent func(i int) string, want string) int {
		t.Helper()
		var wg sync.WaitGroup
		var wins atomic.Int32
		for i := range n {
			wg.Go(func() {
				_, err := e.svc.Deposit(ctx, anon, agent(i), amount(`"1000000000"`), idem.Request{})
				switch {
				case err == nil:
					wins.Add(1)
				case fault.CodeOf(err) != want:
					t.Errorf("deposit %d: %v, want %s", i, err, want)
				}
			})
		}
		wg.Wait()
		return int(wins.Load())
	}
	// One wallet holding $4e9: of 8 concurrent $1e9 deposits, one fits.
	for range 4 {
		must(e.svc.Deposit(ctx, anon, "whale", amount(`"1000000000"`), idem.Request{}))(t)
	}
	if n := race(8, func(int) string { return "whale" }, "wallet_limit_exceeded"); n != 1 || e.balance(t, "whale") != market.MaxWallet {
		t.Fatalf("%d deposits won; whale %s", n, e.balance(t, "whale"))
	}
	// The market $3e9 short of its bound: of 8 concurrent $1e9 deposits
	// into 8 wallets, three fit.
	for w := 0; ; w++ {
		st := must(e.svc.Stats(ctx))(t)
		left := market.MaxTotal - 3*market.MaxAmount - st.MoneyInMarketUSD
		if left == 0 {
			break
		}
		for range 5 {
			a := min(left, market.MaxAmount)
			if a == 0 {
				break
			}
			must(e.svc.Deposit(ctx, anon, fmt.Sprintf("fill-%d", w), amount(`"`+a.String()+`"`), idem.Request{}))(t)
			left -= a
		}
	}
	if n := race(8, func(i int) string { return fmt.Sprintf("late-%d", i) }, "market_limit_exceeded"); n != 3 {
		t.Fatalf("%d deposits won, want 3", n)
	}
	if st := must(e.svc.Stats(ctx))(t); st.MoneyInMarketUSD != market.MaxTotal {
		t.Fatalf("market holds %s", st.MoneyInMarketUSD)
	}
	e.zero(t)
	e.exact(t)
}
