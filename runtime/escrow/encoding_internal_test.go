package escrow

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/assayhq/assay/runtime/store/jsonw/jsonwtest"
)

// TestAppendJSON: contracts, events and reputation counts are stored in
// the bytes encoding/json writes for them.
func TestAppendJSON(t *testing.T) {
	v := jsonwtest.Values{R: rand.New(rand.NewPCG(3, 4))}
	for range 5000 {
		jsonwtest.Check(t, &Contract{ID: v.String(), Buyer: v.String(), Seller: v.String(), Price: v.Int(), Currency: v.String(),
			DeadlineTick: v.Int(), DeliverBy: v.Time(), ReviewWindow: v.String(), Acceptance: v.Raw(), Status: Status(v.String()),
			ContractHash: v.String(), EvidenceHash: v.String(), Verdict: v.String(), Tier: v.String(), Receipts: v.Strings(),
			CreatedAt: v.Time(), FundedAt: v.Time(), DeliveredAt: v.Time(), ResolvedAt: v.Time()})
		jsonwtest.Check(t, Event{Seq: uint64(v.R.Int64()), TS: v.Float(), Event: v.String(), ContractID: v.String(), Status: Status(v.String()),
			Buyer: v.String(), Seller: v.String(), Price: v.Int(), Currency: v.String(), EvidenceHash: v.String(), Verdict: v.String(),
			Tier: v.String(), Payout: v.IntMap(), ReceiptID: v.String()})
		jsonwtest.Check(t, counts{Positive: v.Int(), Negative: v.Int()})
	}
	// What a case stores is written by hand, not by encoding/json.
	c := mustWrite(t, &Contract{ID: "esc-1", Buyer: "did:a", Seller: "did:b", Price: 5, Currency: "credits",
		Acceptance: []byte(`{"assertions":[]}`), Status: StatusCreated, ContractHash: "ab", Receipts: []string{"r1"}})
	e := mustWrite(t, Event{Seq: 7, TS: 1764614400.123456, Event: "accept", ContractID: "esc-1", Status: StatusResolved, Payout: map[string]int64{"did:b": 5}})
	mustWrite(t, counts{Positive: 1})
	jsonwtest.Check(t, c)
	jsonwtest.Check(t, e)
}

func mustWrite[T interface{ AppendJSON([]byte) ([]byte, bool) }](t *testing.T, v T) T {
	t.Helper()
	if _, ok := v.AppendJSON(nil); !ok {
		t.Fatalf("%T %+v: written by encoding/json", v, v)
	}
	return v
}

// TestReputationKey: the shards' keys are those written with fmt before.
func TestReputationKey(t *testing.T) {
	for i := range 500 {
		did, contract := fmt.Sprintf("did:x:%d/é", i), fmt.Sprintf("esc-%016x", i*7919)
		h := fnv.New32a()
		h.Write([]byte(contract))
		want := fmt.Sprintf("%s%s/%02d", reputationPrefix(did), roleSeller, h.Sum32()%repShards)
		if got := reputationKey(did, roleSeller, contract); got != want {
			t.Fatalf("reputationKey = %q, want %q", got, want)
		}
	}
}
