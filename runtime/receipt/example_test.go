package receipt_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/assayhq/assay/runtime/receipt"
)

// A court opens its keyring, signs a verdict, and anyone holding the
// published keys verifies it.
func Example() {
	dir, _ := os.MkdirTemp("", "assay")
	defer os.RemoveAll(dir)
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	court, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: dir, Now: now, Rand: rand.Reader})
	if err != nil {
		panic(err)
	}
	r, err := court.Sign(receipt.KindVerdict, "lex-1d32e6667c804456-v1", map[string]any{
		"contract_id": "lex-1d32e6667c804456",
		"verdict":     "refund",
		"payout":      map[string]int{"did:nanda:buyer": 50},
	})
	if err != nil {
		panic(err)
	}
	data, _ := json.Marshal(r)

	published, _ := json.Marshal(receipt.KeySet{Keys: court.Keys()}) // /.well-known/assay-keys
	keys, _ := receipt.ParseKeys(published)
	res := receipt.NewVerifier(keys).Verify(data)
	fmt.Println(r.ID, res.Valid)

	res = receipt.NewVerifier(nil).Verify(data)
	fmt.Println(res.Valid, res.Reason[:14])
	// Output:
	// urn:assay:receipt:lex-1d32e6667c804456-v1 true
	// true integrity only
}
