package ledger_test

import (
	"context"
	"testing"

	"github.com/assayhq/assay/runtime/ledger"
)

// TestAgentAccount: the court's payouts and the market's wallet are one
// account per agent, named as before ("agent:<did>"), so balances written
// by either service stay where they were.
func TestAgentAccount(t *testing.T) {
	for did, want := range map[string]string{
		"did:nanda:seller": "agent:did:nanda:seller",
		"g17-seed":         "agent:g17-seed",
	} {
		if got := ledger.AgentAccount(did); got != want {
			t.Errorf("AgentAccount(%q) = %q, want %q", did, got, want)
		}
	}
	db := openStore(t)
	for _, tr := range []ledger.Transfer{
		{ID: "court.payout", From: "hold:escrow:c1", To: ledger.AgentAccount("did:a"), Amount: 7, Currency: "credits"},
		{ID: "market.deposit", From: "rail:dev", To: ledger.AgentAccount("did:a"), Amount: 5, Currency: "usd_micro"},
	} {
		if err := post(t, db, tr); err != nil {
			t.Fatal(err)
		}
	}
	if b := balance(t, db, "agent:did:a"); b != 7 {
		t.Errorf("agent:did:a holds %d credits, want 7", b)
	}
}

func TestSumsOf(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	t.Run("Empty", func(t *testing.T) {
		sums, err := ledger.SumsOf(ctx, db)
		if err != nil || len(sums) != 0 {
			t.Fatalf("SumsOf = %v %v, want none", sums, err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		for _, tr := range []ledger.Transfer{
			{ID: "a", From: "rail:dev", To: ledger.AgentAccount("did:a"), Amount: 40, Currency: "credits"},
			{ID: "b", From: "rail:dev", To: ledger.AgentAccount("did:b"), Amount: 3, Currency: "usd_micro"},
		} {
			if err := post(t, db, tr); err != nil {
				t.Fatal(err)
			}
		}
		sums, err := ledger.SumsOf(ctx, db)
		if err != nil || len(sums) != 2 || sums["credits"] != 0 || sums["usd_micro"] != 0 {
			t.Fatalf("SumsOf = %v %v, want two currencies summing to zero", sums, err)
		}
	})
}
