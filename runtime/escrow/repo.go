package escrow

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// The court's repository: every key the court reads and writes, and how
// its records are encoded, are here and nowhere else. RATIONALE.md says
// why the layout is what it is; storage/doc.go lists the keys.
const (
	keyContract     = "escrow/contract/"      // <id> -> the contract's record
	keyDelivery     = "escrow/delivery/"      // <id> -> a delivery too big to keep in the record
	keyAdjudication = "escrow/adjudication/"  // <id> -> legacy: a dispute's adjudication, before the record held it
	keyActivity     = "escrow/activity/"      // <seq:020d>-<node> -> Event
	keyReputation   = "escrow/reputation/"    // <did>/<role>/<shard:02d> -> counts
	keyNegative     = "escrow/negative/"      // <did> -> "1": the agent lost a decision
	keyNegativeMark = "escrow/meta/negatives" // -> "1": every agent with a negative has its key
)

// maxInlineDelivery is the most bytes of deliverable and evidence a
// contract's record holds itself; a bigger delivery has a key of its own,
// so that the decision that follows it does not write it again.
const maxInlineDelivery = 4096

// repShards is how many counters one agent's reputation in one role is
// split into, so that concurrent disputes of one seller rarely conflict.
const repShards = 16

// holdAccount is the ledger account that holds a contract's escrow.
func holdAccount(contract string) string { return "hold:escrow:" + contract }

func contractKey(id string) string     { return keyContract + id }
func deliveryKey(id string) string     { return keyDelivery + id }
func adjudicationKey(id string) string { return keyAdjudication + id }

func activityKey(seq uint64, node string) string {
	var n [20]byte
	digits := strconv.AppendUint(n[:0], seq, 10)
	k := make([]byte, 0, len(keyActivity)+21+len(node))
	k = append(k, keyActivity...)
	for range 20 - len(digits) {
		k = append(k, '0')
	}
	k = append(append(append(k, digits...), '-'), node...)
	return string(k)
}

func reputationPrefix(did string) string { return keyReputation + url.PathEscape(did) + "/" }

func negativeKey(did string) string { return keyNegative + url.PathEscape(did) }

func reputationKey(did string, r role, contract string) string {
	h := fnv.New32a()
	h.Write([]byte(contract))
	shard := h.Sum32() % repShards
	return reputationPrefix(did) + string(r) + "/" + string([]byte{'0' + byte(shard/10), '0' + byte(shard%10)})
}

// The read-ahead of each mutation: what its transaction reads, named
// before it runs, so that a store whose reads are round trips reads it in
// one (store.Tx.GetMany).

// createReads names what a creation reads: the checkers its criteria name
// (checkers.InfoKey) and the seller's mark.
func createReads(refs []checkers.Ref, seller string) []string {
	keys := make([]string, 0, len(refs)+1)
	for _, ref := range refs {
		keys = append(keys, checkers.InfoKey(ref.SHA256))
	}
	return append(keys, negativeKey(seller))
}

// checkCreate reads what createReads names: the index in refs of a
// checker that is not stored (-1: none), and whether the seller carries a
// mark (it has lost a decision).
func checkCreate(tx store.Tx, refs []checkers.Ref, seller string) (missing int, marked bool, err error) {
	vals, err := tx.GetMany(createReads(refs, seller)...)
	if err != nil {
		return -1, false, err
	}
	for i := range refs {
		if vals[i] == nil {
			return i, false, nil
		}
	}
	return -1, vals[len(refs)] != nil, nil
}

// fundReads names what a funding by t reads.
func fundReads(id string, t ledger.Transfer) []string {
	return append([]string{contractKey(id)}, ledger.ReadKeys(t)...)
}

// deliverReads names what a delivery reads.
func deliverReads(id string) []string { return []string{contractKey(id)} }

// decisionReads names what a transaction deciding contract id as d reads,
// for the read-ahead: the contract, and when seen (a copy of it of any
// age, or nil) names its parties and currency, which never change, the
// keys that finalize reads: the payout's in the ledger and the reputation
// counters the decision moves.
func decisionReads(id string, seen *record, d decision) []string {
	keys := []string{contractKey(id)}
	if seen == nil {
		return keys
	}
	c := &seen.Contract
	to := payee(c, d.verdict)
	if to == "" {
		return keys // escalated, or not decided: no payout, no reputation
	}
	keys = append(keys, ledger.ReadKeys(payoutTransfer(c, to, c.Price, d.verdict, clock{}))...)
	for _, o := range outcomes(c, d) {
		keys = append(keys, reputationKey(o.did, o.role, id))
	}
	return keys
}

// record is all the court keeps of one contract under its key: the
// contract, its delivery and the adjudication of its dispute. Each
// mutation of a case reads it once and writes it once.
type record struct {
	Contract
	// delivery is the deliverable and evidence as delivered; nil before.
	delivery *delivery
	// apart: the delivery is kept under a key of its own (it is larger
	// than maxInlineDelivery), and delivery is nil until loadDelivery.
	apart bool
	// adjudication is what a dispute was decided from; nil before, and
	// for a record stored before records held it (under a key of its own,
	// loadAdjudication).
	adjudication *adjudication
}

// storedRecord is a record's encoding: a CBOR map with small integer keys
// (RFC 8949), hashes as bytes, times as seconds and nanoseconds.
type storedRecord struct {
	ID           string   `cbor:"1,keyasint"`
	Buyer        string   `cbor:"2,keyasint"`
	Seller       string   `cbor:"3,keyasint"`
	Price        int64    `cbor:"4,keyasint"`
	Currency     string   `cbor:"5,keyasint"`
	DeadlineTick int64    `cbor:"6,keyasint"`
	DeliverBy    *stamp   `cbor:"7,keyasint,omitempty"`
	ReviewWindow string   `cbor:"8,keyasint,omitempty"`
	Acceptance   []byte   `cbor:"9,keyasint"`
	Status       string   `cbor:"10,keyasint"`
	ContractHash []byte   `cbor:"11,keyasint"`
	EvidenceHash []byte   `cbor:"12,keyasint,omitempty"`
	Verdict      string   `cbor:"13,keyasint,omitempty"`
	Tier         string   `cbor:"14,keyasint,omitempty"`
	Receipts     []string `cbor:"15,keyasint,omitempty"`
	CreatedAt    *stamp   `cbor:"16,keyasint,omitempty"`
	FundedAt     *stamp   `cbor:"17,keyasint,omitempty"`
	DeliveredAt  *stamp   `cbor:"18,keyasint,omitempty"`
	ResolvedAt   *stamp   `cbor:"19,keyasint,omitempty"`
	Deliverable  []byte   `cbor:"20,keyasint,omitempty"`
	Evidence     []byte   `cbor:"21,keyasint,omitempty"`
	Apart        bool     `cbor:"22,keyasint,omitempty"`
	Adjudication []byte   `cbor:"23,keyasint,omitempty"` // its JSON
}

// stamp is a time as Unix seconds and nanoseconds.
type stamp struct {
	_ struct{} `cbor:",toarray"`
	S int64
	N int64
}

func toStamp(t time.Time) *stamp {
	if t.IsZero() {
		return nil
	}
	return &stamp{S: t.Unix(), N: int64(t.Nanosecond())}
}

func (s *stamp) time() time.Time {
	if s == nil {
		return time.Time{}
	}
	return time.Unix(s.S, s.N).UTC()
}

// hexBytes is a SHA-256's hex as its 32 bytes; any other string is kept
// as it is, so that it reads back the same.
func hexBytes(s string) []byte {
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 && hex.EncodeToString(b) == s {
		return b
	}
	return []byte(s)
}

func fromHexBytes(b []byte) string {
	if len(b) == 32 {
		return hex.EncodeToString(b)
	}
	return string(b)
}

var recordEnc = func() cbor.EncMode {
	m, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return m
}()

func (r *record) encode() ([]byte, error) {
	c := &r.Contract
	st := storedRecord{ID: c.ID, Buyer: c.Buyer, Seller: c.Seller, Price: c.Price, Currency: c.Currency,
		DeadlineTick: c.DeadlineTick, DeliverBy: toStamp(c.DeliverBy), ReviewWindow: c.ReviewWindow,
		Acceptance: c.Acceptance, Status: string(c.Status), ContractHash: hexBytes(c.ContractHash),
		Verdict: c.Verdict, Tier: c.Tier, Receipts: c.Receipts, CreatedAt: toStamp(c.CreatedAt),
		FundedAt: toStamp(c.FundedAt), DeliveredAt: toStamp(c.DeliveredAt), ResolvedAt: toStamp(c.ResolvedAt), Apart: r.apart}
	if c.EvidenceHash != "" {
		st.EvidenceHash = hexBytes(c.EvidenceHash)
	}
	if r.delivery != nil && !r.apart {
		st.Deliverable, st.Evidence = r.delivery.Deliverable, r.delivery.Evidence
	}
	if r.adjudication != nil {
		b, err := json.Marshal(r.adjudication)
		if err != nil {
			return nil, fmt.Errorf("escrow: encode the adjudication of %s: %w", c.ID, err)
		}
		st.Adjudication = b
	}
	b, err := recordEnc.Marshal(&st)
	if err != nil {
		return nil, fmt.Errorf("escrow: encode contract %s: %w", c.ID, err)
	}
	return b, nil
}

// decodeRecord decodes what is stored under id's key: a CBOR record, or a
// contract's JSON as stored before records held their delivery and
// adjudication (legacy).
func decodeRecord(id string, raw []byte) (*record, error) {
	if len(raw) > 0 && raw[0] == '{' {
		r := &record{}
		if err := json.Unmarshal(raw, &r.Contract); err != nil {
			return nil, fmt.Errorf("escrow: decode contract %s: %w", id, err)
		}
		// Its delivery, if it has one, is under its own key, where it
		// stays.
		r.apart = r.Status != StatusCreated && r.Status != StatusFunded
		return r, nil
	}
	var st storedRecord
	if err := cbor.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("escrow: decode contract %s: %w", id, err)
	}
	r := &record{Contract: Contract{ID: st.ID, Buyer: st.Buyer, Seller: st.Seller, Price: st.Price, Currency: st.Currency,
		DeadlineTick: st.DeadlineTick, DeliverBy: st.DeliverBy.time(), ReviewWindow: st.ReviewWindow,
		Acceptance: st.Acceptance, Status: Status(st.Status), ContractHash: fromHexBytes(st.ContractHash),
		Verdict: st.Verdict, Tier: st.Tier, Receipts: st.Receipts, CreatedAt: st.CreatedAt.time(),
		FundedAt: st.FundedAt.time(), DeliveredAt: st.DeliveredAt.time(), ResolvedAt: st.ResolvedAt.time()}, apart: st.Apart}
	if len(st.EvidenceHash) > 0 {
		r.EvidenceHash = fromHexBytes(st.EvidenceHash)
	}
	if st.Deliverable != nil {
		r.delivery = &delivery{Deliverable: st.Deliverable, Evidence: st.Evidence}
	}
	if st.Adjudication != nil {
		r.adjudication = new(adjudication)
		if err := json.Unmarshal(st.Adjudication, r.adjudication); err != nil {
			return nil, fmt.Errorf("escrow: decode the adjudication of %s: %w", id, err)
		}
	}
	return r, nil
}

// clone copies r and what it holds that a caller may change.
func (r *record) clone() *record {
	d := *r
	d.Acceptance = bytes.Clone(r.Acceptance)
	d.Receipts = slices.Clone(r.Receipts)
	return &d
}

// contracts is the court's repository of contract records. It keeps,
// per contract id, the bytes last committed or read under its key and
// the record they decode to, so that the mutations of a case (each of
// which reads the record its predecessor wrote) do not decode the same
// bytes again, and a node that committed a step knows the contract's
// state before the next step asks.
type contracts struct {
	mu sync.Mutex
	m  map[string]cachedRecord
}

type cachedRecord struct {
	raw []byte
	r   *record
}

// maxCachedContracts bounds the records a Service keeps decoded.
const maxCachedContracts = 1 << 14

// load reads contract id's record in tx.
//
// # Errors
//
// contract_not_found (404).
func (cs *contracts) load(tx store.Tx, id string) (*record, error) {
	raw, err := tx.Get(contractKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(id)
	} else if err != nil {
		return nil, err
	}
	return cs.decode(id, raw)
}

// decode decodes raw, the bytes stored under id's key, from the cache when
// it holds them.
func (cs *contracts) decode(id string, raw []byte) (*record, error) {
	cs.mu.Lock()
	e, ok := cs.m[id]
	cs.mu.Unlock()
	if ok && bytes.Equal(e.raw, raw) {
		return e.r.clone(), nil
	}
	r, err := decodeRecord(id, raw)
	if err != nil {
		return nil, err
	}
	cs.keep(id, bytes.Clone(raw), r) // a store may reuse what it returned
	return r.clone(), nil
}

// peek returns a copy of the record this node last committed or read for
// id, whatever the store holds now (nil when it has none): for what
// never changes once a contract is made (its parties, price and
// currency), and for checks made again in the transaction.
func (cs *contracts) peek(id string) *record {
	cs.mu.Lock()
	e, ok := cs.m[id]
	cs.mu.Unlock()
	if !ok {
		return nil
	}
	return e.r.clone()
}

// keep records that raw decodes to r. Resolved contracts, whose reads are
// rare, leave the cache.
func (cs *contracts) keep(id string, raw []byte, r *record) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if r.Status == StatusResolved {
		delete(cs.m, id)
		return
	}
	if cs.m == nil {
		cs.m = make(map[string]cachedRecord)
	}
	if _, ok := cs.m[id]; !ok && len(cs.m) >= maxCachedContracts {
		for k := range cs.m { // an arbitrary one: cases abandoned half way
			delete(cs.m, k)
			break
		}
	}
	cs.m[id] = cachedRecord{raw: raw, r: r}
}

// saved is what a transaction wrote of contract records, kept for the
// cache once it commits.
type saved struct{ recs []cachedRecord }

// save writes r under its key in tx: the contract, its delivery (under a
// key of its own when it is large, once) and its adjudication.
func (cs *contracts) save(tx store.Tx, w *saved, r *record) error {
	raw, err := r.encode()
	if err != nil {
		return err
	}
	if err := tx.Set(contractKey(r.ID), raw); err != nil {
		return err
	}
	if w != nil {
		w.recs = append(w.recs, cachedRecord{raw: raw, r: r.clone()})
	}
	return nil
}

// putDelivery stores d as r's delivery: in the record when it is small,
// under a key of its own otherwise.
func (cs *contracts) putDelivery(tx store.Tx, r *record, d delivery) error {
	r.delivery = &d
	if len(d.Deliverable)+len(d.Evidence) <= maxInlineDelivery {
		r.apart = false
		return nil
	}
	r.apart = true
	return tx.Set(deliveryKey(r.ID), d.encode())
}

// committed keeps what a committed transaction wrote.
func (cs *contracts) committed(w *saved) {
	for _, e := range w.recs {
		cs.keep(e.r.ID, e.raw, e.r)
	}
}

// loadDelivery fills r.delivery when it is kept apart from the record.
func (cs *contracts) loadDelivery(tx store.Tx, r *record) error {
	if r.delivery != nil && !r.apart || r.Status == StatusCreated || r.Status == StatusFunded {
		return nil
	}
	b, err := tx.Get(deliveryKey(r.ID))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("escrow: delivered contract %s has no delivery: %w", r.ID, err)
	} else if err != nil {
		return err
	}
	var d delivery
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("escrow: decode the delivery of %s: %w", r.ID, err)
	}
	r.delivery = &d
	return nil
}

// loadAdjudication fills r.adjudication for a legacy record, which kept
// it under a key of its own.
func (cs *contracts) loadAdjudication(tx store.Tx, r *record) error {
	if r.adjudication != nil {
		return nil
	}
	var adj adjudication
	if err := store.GetJSON(tx, adjudicationKey(r.ID), &adj); err != nil {
		return err
	}
	r.adjudication = &adj
	return nil
}

// encode writes d as JSON, both fields as they are: encoding/json would
// escape <, > and & in their strings, and a dispute would hand the
// checkers other bytes than the seller delivered and `assay judge`
// replays.
func (d delivery) encode() []byte {
	ev := d.Evidence
	if len(ev) == 0 {
		ev = []byte("null")
	}
	b := make([]byte, 0, len(d.Deliverable)+len(ev)+30)
	b = append(append(b, `{"deliverable":`...), d.Deliverable...)
	b = append(append(b, `,"evidence":`...), ev...)
	return append(b, '}')
}
