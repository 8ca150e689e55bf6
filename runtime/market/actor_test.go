package market_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

// anon is the caller that proved nothing: the open market's agents.
var anon principal.Actor

// TestService_SignatureMissing: a signed market refuses a request that
// proved nothing with signature_missing, saying how to sign and that a
// market for local use can run open; an open market takes the body's
// agent at its word.
func TestService_SignatureMissing(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []principal.Mode{principal.Signed, principal.Open} {
		svc, err := market.New(market.Config{Store: db, Signer: keys, Auth: mode})
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Deposit(ctx, anon, "did:example:bob-"+string(mode), market.AmountRequest{AmountUSD: json.RawMessage(`"5"`)}, idem.Request{})
		if mode == principal.Open {
			if err != nil {
				t.Errorf("an open market refused a deposit: %v", err)
			}
			continue
		}
		if fault.CodeOf(err) != principal.ECodeSignatureMissing || fault.KindOf(err) != fault.Unauthorized {
			t.Fatalf("an unsigned deposit in a signed market: %v", err)
		}
		msg := fault.MessageOf(err)
		for _, want := range []string{"RFC 9421", "assay sign", "Authorization: Bearer", "--market-auth open", "make run ARGS='--market-auth open'"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the refusal does not say %q: %s", want, msg)
			}
		}
	}
}
