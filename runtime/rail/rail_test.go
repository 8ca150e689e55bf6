package rail_test

import (
	"context"
	"testing"

	"github.com/assayhq/assay/runtime/rail"
)

func TestDev(t *testing.T) {
	ctx := context.Background()
	var r rail.Rail = rail.Dev{}
	t.Run("OK", func(t *testing.T) {
		a, err := r.Collect(ctx, rail.Payment{ID: "p1", Agent: "a", Amount: 5, Currency: "usd"})
		if err != nil || a == "" {
			t.Fatalf("collect %q %v", a, err)
		}
		b, _ := r.Collect(ctx, rail.Payment{ID: "p1", Agent: "a", Amount: 5, Currency: "usd"})
		if a != b {
			t.Fatalf("a retried collect answered %q then %q", a, b)
		}
		if ref, err := r.Refund(ctx, a, 5); err != nil || ref == "" || ref == a {
			t.Fatalf("refund %q %v", ref, err)
		}
		if ref, err := r.Payout(ctx, rail.Payment{ID: "w1", Amount: 1}); err != nil || ref == "" {
			t.Fatalf("payout %q %v", ref, err)
		}
	})
	t.Run("ErrAmount", func(t *testing.T) {
		if _, err := r.Collect(ctx, rail.Payment{ID: "p", Amount: 0}); err == nil {
			t.Fatal("collected nothing")
		}
		if _, err := r.Refund(ctx, "x", -1); err == nil {
			t.Fatal("refunded a negative amount")
		}
	})
	if rail.HeaderPaymentRequired != "PAYMENT-REQUIRED" || rail.StatusPaymentRequired != 402 {
		t.Fatal("x402 constants")
	}
}
