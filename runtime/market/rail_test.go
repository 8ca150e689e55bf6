package market_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
	"math/rand/v2"
)

// flakyRail is the dev rail whose next payouts fail.
type flakyRail struct {
	rail.Dev
	failPayouts atomic.Int32
}

func (r *flakyRail) Payout(ctx context.Context, p rail.Payment) (string, error) {
	if r.failPayouts.Add(-1) >= 0 {
		return "", errors.New("bank says no")
	}
	return r.Dev.Payout(ctx, p)
}

// TestService_Withdraw_payoutFails: a withdrawal whose payout fails puts the
// money back and answers rail_failed; a retry with the same key runs again
// and pays out, instead of replaying a success that never happened.
func TestService_Withdraw_payoutFails(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	fr := &flakyRail{}
	var n atomic.Uint64
	svc, err := market.New(market.Config{Store: db, Signer: keys, Rail: fr, Now: now,
		NewID: func() string { return fmt.Sprintf("%016x", n.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Deposit(ctx, anon, "alice", amount("10"), idem.Request{}); err != nil {
		t.Fatal(err)
	}
	key := idem.Request{Key: "wd-1", Fingerprint: "withdraw 4"}
	fr.failPayouts.Store(1)
	_, err = svc.Withdraw(ctx, anon, "alice", amount("4"), key)
	wantCode(t, err, "rail_failed")
	w, _ := svc.WalletOf(ctx, "alice")
	if w.Balance != market.USD(10_000_000) {
		t.Fatalf("after a failed payout the wallet holds %d micro-USD, want it all back", w.Balance)
	}
	r, err := svc.Withdraw(ctx, anon, "alice", amount("4"), key)
	if err != nil || r.Replayed {
		t.Fatalf("the retry: replayed=%v err=%v, want a fresh withdrawal", r.Replayed, err)
	}
	w, _ = svc.WalletOf(ctx, "alice")
	if w.Balance != market.USD(6_000_000) {
		t.Fatalf("after the retry the wallet holds %d micro-USD, want 6,000,000", w.Balance)
	}
	sums, _ := ledger.SumsOf(ctx, svc.Store())
	for c, v := range sums {
		if v != 0 {
			t.Errorf("ledger sums to %d %s", v, c)
		}
	}
}
