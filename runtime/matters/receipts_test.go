package matters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// TestService_Receipts: a Matter's receipts live in the receipt
// repository (receipt/<id>, the signed bytes); those of Matters written
// before it, under matters/receipt/<matter>/<seq:04d> with HTML escaping,
// stay readable and are served as they were signed.
func TestService_Receipts(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	c := decodeChanged(t, must(e.Open(ctx, e.req, openReq("r1"))))
	rid := c.Receipt.ShortID()
	var stored []byte
	err := e.db.View(ctx, func(tx store.Tx) error {
		var err error
		stored, err = receipt.Get(tx, rid)
		return err
	})
	if err != nil {
		t.Fatalf("the repository has no %s: %v", rid, err)
	}
	if res := e.keys.Verifier().Verify(stored); !res.Valid {
		t.Fatalf("stored receipt: %s", res.Reason)
	}

	t.Run("Legacy", func(t *testing.T) {
		// Move the receipt where the service kept it before, the way it
		// wrote it (store.SetJSON: json.Marshal, HTML-escaped).
		var r receipt.Receipt
		if err := json.Unmarshal(stored, &r); err != nil {
			t.Fatal(err)
		}
		err := e.db.Update(ctx, func(tx store.Tx) error {
			if err := tx.Delete("receipt/" + rid); err != nil {
				return err
			}
			return store.SetJSON(tx, "matters/receipt/"+c.Matter.ID+"/0000", r)
		})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := e.Receipts(ctx, e.req, c.Matter.ID)
		if err != nil || len(rs) != 1 {
			t.Fatalf("receipts %v %v", rs, err)
		}
		got, err := receipt.Marshal(rs[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, stored) {
			t.Fatalf("legacy receipt served as\n%s\nwant\n%s", got, stored)
		}
	})
}
