package matters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/store"
)

// TestExchange_Property runs random quorum Matters (sizes, stakes,
// no-shows, silent commitments, split and agreeing verdicts), settles or
// appeals the judged ones (the court's jury voting at random) and observes
// some outcomes; it holds every wallet to what a model of the rules says
// it should hold, every finished Matter's hold to zero, and the ledger to
// balanced.
func TestExchange_Property(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyRun(t, seed) })
	}
}

func propertyRun(t *testing.T, seed uint64) {
	e := mustXEnv(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 99))
	pool := []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	lineages := []string{"acme/atlas", "globex/gamma", "initech/iris", "acme/atlas", "", "globex/gamma"}
	for i, id := range pool {
		e.solver(t, id, lineages[i])
	}
	want := map[string]int64{"rita": e.wallet(t, "rita")}
	for _, id := range pool {
		want[id] = e.wallet(t, id)
	}
	decisions := []string{"approve", "approve", "deny", "escalate"}
	seen := map[string]int{} // how the matters ended
	for round := range 40 {
		n := 1 + rng.IntN(5)
		mAgree := n/2 + 1
		var pay, bond int64
		q := matters.QuorumSpec{Solvers: n, Agree: mAgree, AgreeOn: []string{"decision"}}
		if rng.IntN(3) > 0 {
			pay, bond = xpay, xbond
			q.PayUSDC, q.BondUSDC = "1", "2"
		}
		r, err := e.OpenQuorum(ctx, e.req, matters.QuorumOpenRequest{OpenRequest: matters.OpenRequest{ActionDigest: digest,
			Question: fmt.Sprintf("round %d: pay?", round), StakesUSDC: "10", Deadline: e.clock.Now().Add(time.Hour).Format(time.RFC3339),
			RiskClass: "spend", VerdictSchema: xschema, IdempotencyKey: e.key()}, Quorum: q})
		if err != nil {
			t.Fatal(err)
		}
		id := decodeChanged(t, r).Matter.ID
		want["rita"] -= pay * int64(n)
		seats := rng.Perm(len(pool))[:n]
		type seatPlan struct {
			id      string
			commits bool
			reveals bool
			verdict json.RawMessage
		}
		plan := make([]seatPlan, n)
		committers := 0
		for i, si := range seats {
			p := seatPlan{id: pool[si], commits: rng.IntN(5) > 0}
			p.reveals = p.commits && rng.IntN(10) > 0
			p.verdict = verdictOf(decisions[rng.IntN(len(decisions))], float64(rng.IntN(11))/10)
			plan[i] = p
			e.seat(t, id, p.id)
			want[p.id] -= bond
			if p.commits {
				committers++
			}
		}
		for _, p := range plan {
			if p.commits {
				e.commit(t, id, p.id, p.verdict)
			}
		}
		if committers < n {
			e.clock.Advance(time.Hour)
		}
		expired := committers < mAgree
		for _, p := range plan {
			if !p.reveals || expired {
				continue
			}
			if _, err := e.reveal(id, p.id, p.verdict); err != nil {
				t.Fatalf("round %d reveal: %v", round, err)
			}
		}
		m := e.matter(t, id)
		if m.Status == matters.StatusOpen {
			e.clock.Advance(time.Hour + time.Minute)
			m = e.matter(t, id)
		}
		// the model: group the reveals by decision
		counts := map[string]int{}
		for _, p := range plan {
			if p.reveals && !expired {
				counts[decisionOf(p.verdict)]++
			}
		}
		best, top := "", 0
		for d, c := range counts {
			if c > top {
				best, top = d, c
			}
		}
		judged := !expired && top >= mAgree
		switch {
		case expired && m.Status != matters.StatusExpired,
			!expired && judged && m.Status != matters.StatusJudged,
			!expired && !judged && m.Status != matters.StatusNoConsensus:
			t.Fatalf("round %d: status %s; committers %d of %d (M %d), top group %d", round, m.Status, committers, n, mAgree, top)
		}
		overturned, upheld := false, false
		if judged {
			switch rng.IntN(3) {
			case 0:
				must(e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()}))
			default:
				vote := []string{"pass", "fail"}[rng.IntN(2)]
				e.jury.vote.Store(vote)
				r := must(e.Appeal(ctx, e.req, matters.AppealRequest{MatterID: id, Reason: "contested", FeeUSDC: "0.25", ActionDigest: digest, IdempotencyKey: e.key()}))
				st := decodeChanged(t, r).Matter.Status
				overturned, upheld = vote == "fail", vote == "pass"
				if (overturned && st != matters.StatusOverturned) || (upheld && st != matters.StatusUpheld) {
					t.Fatalf("round %d: jury %s, status %s", round, vote, st)
				}
			}
		}
		author := ""
		for _, p := range plan {
			majority := judged && p.reveals && decisionOf(p.verdict) == best
			if majority && author == "" {
				author = p.id
			}
			if majority && !overturned {
				want[p.id] += pay
			}
			forfeit := (expired && !p.commits) || (!expired && !p.reveals) || (overturned && majority)
			if forfeit {
				want["rita"] += bond
			} else {
				want[p.id] += bond
			}
		}
		paid := int64(0)
		for _, p := range plan {
			if judged && !overturned && p.reveals && decisionOf(p.verdict) == best {
				paid++
			}
		}
		want["rita"] += pay * (int64(n) - paid)
		if upheld {
			// the fee, taken from the appellant's wallet, to the author
			want["rita"] -= 250_000
			want[author] += 250_000
		}
		seen[string(e.matter(t, id).Status)]++
		if m.Exchange.Aggregate != nil && rng.IntN(2) == 0 {
			must(e.Observe(ctx, e.req, matters.ObserveRequest{MatterID: id, Outcome: verdictOf(decisions[rng.IntN(3)], 1), IdempotencyKey: e.key()}))
		}
		if got := e.balance(t, "hold:matters:"+id); got != 0 {
			t.Fatalf("round %d: hold %d after the matter ended", round, got)
		}
		for acct, w := range want {
			if got := e.wallet(t, acct); got != w {
				t.Fatalf("round %d: %s holds %d, the model says %d", round, acct, got, w)
			}
		}
	}
	for _, end := range []string{"settled", "upheld", "overturned", "no_consensus", "expired"} {
		if seen[end] == 0 {
			t.Errorf("no matter ended %s: %v", end, seen)
		}
	}
	t.Logf("ends: %v", seen)
	audit(t, e)
	// Nothing was minted: what the wallets and holds hold is what the
	// rail paid in (the test's deposits); the court took every appeal fee
	// from the appellant's wallet.
	if err := e.db.View(ctx, func(tx store.Tx) error {
		sums, err := ledger.Sums(tx)
		if err != nil || sums[matters.Currency] != 0 {
			return fmt.Errorf("sums %v: %v", sums, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func decisionOf(v json.RawMessage) string {
	var d struct{ Decision string }
	_ = json.Unmarshal(v, &d)
	return d.Decision
}
