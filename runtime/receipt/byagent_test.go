package receipt_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// TestByAgent_Counted: an agent's receipts are counted up to
// MaxAgentReceiptsCounted, and More says when there are more: a page
// costs a bounded number of records however many receipts the agent has.
func TestByAgent_Counted(t *testing.T) {
	t.Parallel()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: func() time.Time { return now }, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	r, err := keys.Sign("AssayTest", receipt.ID("many"), map[string]string{"note": "one of many"})
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, to int) {
		for i := from; i < to; i += 2000 {
			err := db.Update(ctx, func(tx store.Tx) error {
				for j := i; j < min(i+2000, to); j++ {
					if _, err := receipt.Put(tx, r, now.Add(time.Duration(j)), "did:many"); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	page := func() receipt.AgentReceipts {
		var a receipt.AgentReceipts
		err := db.View(ctx, func(tx store.Tx) error {
			var err error
			a, err = receipt.ByAgent(tx, "did:many", 3)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	put(0, receipt.MaxAgentReceiptsCounted)
	if a := page(); a.Total != receipt.MaxAgentReceiptsCounted || a.More || a.Count != 3 {
		t.Errorf("at the bound: total %d more %v count %d, want %d, false, 3", a.Total, a.More, a.Count, receipt.MaxAgentReceiptsCounted)
	}
	put(receipt.MaxAgentReceiptsCounted, receipt.MaxAgentReceiptsCounted+1)
	if a := page(); a.Total != receipt.MaxAgentReceiptsCounted || !a.More || a.Count != 3 {
		t.Errorf("past the bound: total %d more %v count %d, want %d, true, 3", a.Total, a.More, a.Count, receipt.MaxAgentReceiptsCounted)
	}
}
