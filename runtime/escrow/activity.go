package escrow

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/runtime/store/jsonw"
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
		return tx.Scan(keyActivity, true, func(_ string, v []byte) error {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
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
	e.Seq = ck.seq
	e.TS = float64(ck.now.UnixMicro()) / 1e6
	return store.SetJSON(tx, activityKey(ck.seq, ck.node), e)
}

// AppendJSON implements store.JSONAppender: every mutation writes an
// event.
func (e Event) AppendJSON(b []byte) ([]byte, bool) {
	o := jsonw.NewObject(b)
	o.Uint("seq", e.Seq)
	o.Float("ts", e.TS)
	o.String("event", e.Event)
	o.String("contract_id", e.ContractID)
	o.String("status", string(e.Status))
	o.StringOmitEmpty("buyer", e.Buyer)
	o.StringOmitEmpty("seller", e.Seller)
	o.IntOmitEmpty("price", e.Price)
	o.StringOmitEmpty("currency", e.Currency)
	o.StringOmitEmpty("evidence_hash", e.EvidenceHash)
	o.StringOmitEmpty("verdict", e.Verdict)
	o.StringOmitEmpty("tier", e.Tier)
	o.IntMapOmitEmpty("payout", e.Payout)
	o.StringOmitEmpty("receipt_id", e.ReceiptID)
	return o.Bytes()
}
