package escrow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/runtime/store/jsonw"
)

// maxCachedContracts bounds the contracts a Service keeps decoded.
const maxCachedContracts = 1 << 14

// contractCache keeps, per contract id, the bytes last read or written
// under its key and the contract they decode to, so that the mutations of
// a case (each of which reads the contract its predecessor wrote) do not
// decode the same JSON again and again. An entry serves a read only when
// the stored bytes are equal to its own, so it is never stale: another
// node's write, a transaction that did not commit, a restore from backup
// all show as other bytes, which are decoded. Resolved contracts, whose
// reads are rare, leave the cache.
type contractCache struct {
	mu sync.Mutex
	m  map[string]cachedContract
}

type cachedContract struct {
	raw []byte
	c   Contract
}

// get returns a copy of the contract that raw, the bytes stored under
// id's key, decodes to, when the cache holds them.
func (cc *contractCache) get(id string, raw []byte) (*Contract, bool) {
	cc.mu.Lock()
	e, ok := cc.m[id]
	cc.mu.Unlock()
	if !ok || !bytes.Equal(e.raw, raw) {
		return nil, false
	}
	return e.c.clone(), true
}

// peek returns a copy of the contract the cache holds under id, whatever
// the store now holds (nil when it holds none): for what never changes
// once a contract is made (its parties, price and currency).
func (cc *contractCache) peek(id string) *Contract {
	cc.mu.Lock()
	e, ok := cc.m[id]
	cc.mu.Unlock()
	if !ok {
		return nil
	}
	return e.c.clone()
}

// put records that raw decodes to c (copied).
func (cc *contractCache) put(id string, raw []byte, c *Contract) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c.Status == StatusResolved {
		delete(cc.m, id)
		return
	}
	if cc.m == nil {
		cc.m = make(map[string]cachedContract)
	}
	if _, ok := cc.m[id]; !ok && len(cc.m) >= maxCachedContracts {
		for k := range cc.m { // an arbitrary one: cases abandoned half way
			delete(cc.m, k)
			break
		}
	}
	cc.m[id] = cachedContract{raw: raw, c: *c.clone()}
}

// clone copies c and the slices it holds.
func (c *Contract) clone() *Contract {
	d := *c
	d.Acceptance = bytes.Clone(c.Acceptance)
	d.Receipts = slices.Clone(c.Receipts)
	return &d
}

func (s *Service) loadContract(tx store.Tx, id string) (*Contract, error) {
	raw, err := tx.Get(contractKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(id)
	} else if err != nil {
		return nil, err
	}
	return s.decodeContract(id, raw)
}

// decodeContract decodes raw, the bytes stored under id's key (nil: none),
// from the cache when it holds them.
func (s *Service) decodeContract(id string, raw []byte) (*Contract, error) {
	if raw == nil {
		return nil, notFound(id)
	}
	key := contractKey(id)
	if c, ok := s.contracts.get(id, raw); ok {
		return c, nil
	}
	var c Contract
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key, err)
	}
	s.contracts.put(id, bytes.Clone(raw), &c) // a store may reuse what it returned
	return &c, nil
}

// putContract writes c under its key, encoded once, and caches it.
func (s *Service) putContract(tx store.Tx, c *Contract) error {
	raw, ok := c.AppendJSON(make([]byte, 0, 512+len(c.Acceptance)))
	if !ok {
		var err error
		if raw, err = json.Marshal(c); err != nil {
			return fmt.Errorf("store: encode %s: %w", contractKey(c.ID), err)
		}
	}
	if err := tx.Set(contractKey(c.ID), raw); err != nil {
		return err
	}
	s.contracts.put(c.ID, raw, c)
	return nil
}

// AppendJSON implements store.JSONAppender: a contract is written at
// every step of its case.
func (c *Contract) AppendJSON(b []byte) ([]byte, bool) {
	o := jsonw.NewObject(b)
	o.String("contract_id", c.ID)
	o.String("buyer", c.Buyer)
	o.String("seller", c.Seller)
	o.Int("price", c.Price)
	o.String("currency", c.Currency)
	o.Int("deadline_tick", c.DeadlineTick)
	o.TimeOmitZero("deliver_by", c.DeliverBy)
	o.StringOmitEmpty("review_window", c.ReviewWindow)
	o.Raw("acceptance", c.Acceptance)
	o.String("status", string(c.Status))
	o.String("contract_hash", c.ContractHash)
	o.StringOmitEmpty("evidence_hash", c.EvidenceHash)
	o.StringOmitEmpty("verdict", c.Verdict)
	o.StringOmitEmpty("tier", c.Tier)
	o.StringsOmitEmpty("receipts", c.Receipts)
	o.Time("created_at", c.CreatedAt)
	o.TimeOmitZero("funded_at", c.FundedAt)
	o.TimeOmitZero("delivered_at", c.DeliveredAt)
	o.TimeOmitZero("resolved_at", c.ResolvedAt)
	return o.Bytes()
}
