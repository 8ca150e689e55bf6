package escrow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/assayhq/assay/runtime/store"
)

// Event is one entry of the court's activity log.
type Event struct {
	Seq          uint64           `json:"seq"`
	TS           float64          `json:"ts"` // Unix seconds
	Event        string           `json:"event"`
	ContractID   string           `json:"contract_id"`
	Status       Status           `json:"status"`
	Buyer        string           `json:"buyer,omitempty"`
	Seller       string           `json:"seller,omitempty"`
	Price        int64            `json:"price,omitempty"`
	Currency     string           `json:"currency,omitempty"`
	EvidenceHash string           `json:"evidence_hash,omitempty"`
	Verdict      string           `json:"verdict,omitempty"`
	Tier         string           `json:"tier,omitempty"`
	Payout       map[string]int64 `json:"payout,omitempty"`
	ReceiptID    string           `json:"receipt_id,omitempty"`
}

// Activity is a page of the activity log, newest first.
type Activity struct {
	Count    int     `json:"count"`
	TotalSeq uint64  `json:"total_seq"`
	Events   []Event `json:"events"`
}

// MaxActivity bounds one page of the activity log.
const MaxActivity = 1000

// Activity returns the newest limit events (at most MaxActivity).
func (s *Service) Activity(ctx context.Context, limit int) (Activity, error) {
	limit = max(1, min(limit, MaxActivity))
	a := Activity{Events: []Event{}}
	err := s.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(keyActivity, true, func(k string, v []byte) error {
			e, err := decodeEvent(k, v)
			if err != nil {
				return err
			}
			if a.TotalSeq == 0 {
				a.TotalSeq = e.Seq
			}
			a.Events = append(a.Events, e)
			if len(a.Events) == limit {
				return store.ErrStop
			}
			return nil
		})
	})
	a.Count = len(a.Events)
	return a, err
}

func (s *Service) lastSeq(ctx context.Context) (uint64, error) {
	var last uint64
	err := s.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(keyActivity, true, func(k string, _ []byte) error {
			// <seq>-<node>; before nodes were tagged, <seq> alone.
			seq, _, _ := strings.Cut(strings.TrimPrefix(k, keyActivity), "-")
			n, err := strconv.ParseUint(seq, 10, 64)
			if err != nil {
				return err
			}
			last = n
			return store.ErrStop
		})
	})
	return last, err
}

// clock is what one request takes before its transaction: the time and its
// activity sequence number, the same on every retry, and the node that
// numbered it.
type clock struct {
	now  time.Time
	seq  uint64
	node string
}

func (s *Service) tick() clock { return clock{now: s.now().UTC(), seq: s.seq.Add(1), node: s.node} }

func putEvent(tx store.Tx, ck clock, e Event) error {
	b, err := recordEnc.Marshal(storedEvent{Seq: ck.seq, At: ck.now.UnixMicro(), Event: e.Event, ContractID: e.ContractID,
		Status: string(e.Status), Buyer: e.Buyer, Seller: e.Seller, Price: e.Price, Currency: e.Currency,
		EvidenceHash: e.EvidenceHash, Verdict: e.Verdict, Tier: e.Tier, Payout: e.Payout, ReceiptID: e.ReceiptID})
	if err != nil {
		return fmt.Errorf("escrow: encode event %d: %w", ck.seq, err)
	}
	return tx.Set(activityKey(ck.seq, ck.node), b)
}

// storedEvent is an event's encoding: a CBOR map with small integer
// keys, its time in Unix microseconds.
type storedEvent struct {
	Seq          uint64           `cbor:"1,keyasint"`
	At           int64            `cbor:"2,keyasint"`
	Event        string           `cbor:"3,keyasint"`
	ContractID   string           `cbor:"4,keyasint"`
	Status       string           `cbor:"5,keyasint"`
	Buyer        string           `cbor:"6,keyasint,omitempty"`
	Seller       string           `cbor:"7,keyasint,omitempty"`
	Price        int64            `cbor:"8,keyasint,omitempty"`
	Currency     string           `cbor:"9,keyasint,omitempty"`
	EvidenceHash string           `cbor:"10,keyasint,omitempty"`
	Verdict      string           `cbor:"11,keyasint,omitempty"`
	Tier         string           `cbor:"12,keyasint,omitempty"`
	Payout       map[string]int64 `cbor:"13,keyasint,omitempty"`
	ReceiptID    string           `cbor:"14,keyasint,omitempty"`
}

// decodeEvent decodes the event stored under key: CBOR, or the JSON
// events were stored as before.
func decodeEvent(key string, v []byte) (Event, error) {
	var e Event
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, &e); err != nil {
			return e, fmt.Errorf("escrow: decode %s: %w", key, err)
		}
		return e, nil
	}
	var st storedEvent
	if err := cbor.Unmarshal(v, &st); err != nil {
		return e, fmt.Errorf("escrow: decode %s: %w", key, err)
	}
	return Event{Seq: st.Seq, TS: float64(st.At) / 1e6, Event: st.Event, ContractID: st.ContractID, Status: Status(st.Status),
		Buyer: st.Buyer, Seller: st.Seller, Price: st.Price, Currency: st.Currency, EvidenceHash: st.EvidenceHash,
		Verdict: st.Verdict, Tier: st.Tier, Payout: st.Payout, ReceiptID: st.ReceiptID}, nil
}
