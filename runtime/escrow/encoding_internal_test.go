package escrow

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
)

// TestRecordEncoding: a record reads back as it was written, whatever it
// holds, and a contract stored as JSON before records held their delivery
// reads as that contract, with its delivery kept apart.
func TestRecordEncoding(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	for i, r := range []*record{
		{Contract: Contract{ID: "esc-1", Buyer: "did:a", Seller: "did:b", Price: 5, Currency: "credits", DeadlineTick: 1000,
			Acceptance: json.RawMessage(`{"assertions":[]}`), Status: StatusCreated, ContractHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			CreatedAt: at}},
		{Contract: Contract{ID: "esc-2", Buyer: "did:a", Seller: "did:b", Price: MaxPrice, Currency: "usd-micro", DeadlineTick: 0,
			DeliverBy: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), ReviewWindow: "72h0m0s",
			Acceptance: json.RawMessage(`{}`), Status: StatusResolved, ContractHash: "not hex", EvidenceHash: "ab",
			Verdict: "release", Tier: "tier0", Receipts: []string{"r1", "r2"}, CreatedAt: at, FundedAt: at.Add(1), DeliveredAt: at.Add(2), ResolvedAt: at.Add(3)},
			delivery:     &delivery{Deliverable: json.RawMessage(`{"html":"<b>&amp;</b>"}`), Evidence: json.RawMessage(`null`)},
			adjudication: &adjudication{Result: &adjudicate.Result{Verdict: "release", Tier: "tier0", Checks: []adjudicate.Check{}}}},
		{Contract: Contract{ID: "esc-3", Status: StatusDelivered, CreatedAt: at}, apart: true},
	} {
		b, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(r.ID, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("record %d reads back as\n%+v\nwant\n%+v", i, got, r)
		}
	}
	old := Contract{ID: "esc-4", Buyer: "did:a", Seller: "did:b", Price: 5, Currency: "credits", Acceptance: json.RawMessage(`{}`),
		Status: StatusDelivered, ContractHash: "ab", CreatedAt: at}
	b, _ := json.Marshal(old)
	got, err := decodeRecord(old.ID, b)
	if err != nil || !reflect.DeepEqual(got.Contract, old) || !got.apart || got.delivery != nil {
		t.Errorf("a legacy contract reads as %+v, %v", got, err)
	}
}

// TestEventEncoding: an event reads back as it was written, and one
// stored as JSON before reads as it was.
func TestEventEncoding(t *testing.T) {
	ck := clock{now: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), seq: 7, node: "n"}
	e := Event{Event: "accept", ContractID: "esc-1", Status: StatusResolved, Verdict: "release", Tier: "buyer-accept",
		Payout: map[string]int64{"did:b": 5}, ReceiptID: "r1"}
	b, err := recordEnc.Marshal(storedEvent{Seq: ck.seq, At: ck.now.UnixMicro(), Event: e.Event, ContractID: e.ContractID,
		Status: string(e.Status), Verdict: e.Verdict, Tier: e.Tier, Payout: e.Payout, ReceiptID: e.ReceiptID})
	if err != nil {
		t.Fatal(err)
	}
	e.Seq, e.TS = 7, float64(ck.now.UnixMicro())/1e6
	if got, err := decodeEvent("k", b); err != nil || !reflect.DeepEqual(got, e) {
		t.Errorf("event reads back as %+v, %v; want %+v", got, err, e)
	}
	old, _ := json.Marshal(e)
	if got, err := decodeEvent("k", old); err != nil || !reflect.DeepEqual(got, e) {
		t.Errorf("a JSON event reads as %+v, %v; want %+v", got, err, e)
	}
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
