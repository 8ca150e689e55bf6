package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// The receipt repository: every service stores the receipts it signs here,
// in one key space (storage/doc.go lists it), so that GET /receipts/{id}
// finds any of them.
const (
	keyByID    = "receipt/"          // <id> -> the receipt, its signed bytes unescaped
	keyByAgent = "receipt-by-agent/" // <party, escaped>/<unixnano:020d>-<id> -> id
)

// MaxAgentReceipts bounds one page of ByAgent.
const MaxAgentReceipts = 1000

// ID derives a receipt id from what the receipt is about: the first 8
// bytes of the SHA-256 of parts joined by "/", in hex. A service names the
// thing and the purpose ("<contract>", "final"; "market", <purchase>,
// "purchase"; "matters", <matter>, "<seq>"), so that every retry of the
// transaction that signs a receipt signs it under the same id.
func ID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return hex.EncodeToString(sum[:8])
}

// Marshal is json.Marshal without HTML escaping: a receipt, or an answer
// that carries one, keeps in credentialSubject the very bytes that were
// signed, where json.Marshal would write <, > and & as \u003c, \u003e
// and \u0026 and a verifier hashing the served subject would disagree.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Put stores r under its id and indexes it under each of its parties (an
// empty or repeated party is skipped), newest last by at, the signing
// service's clock (receipts carry whole seconds; the index orders receipts
// signed within one second too). It returns the stored bytes, which are
// what the service answers with.
//
// A receipt signed by a Keyring whose log is on (Keyring.LogReceipts) is
// also recorded for the transparency log, in the same transaction: its
// Entry under a key of its own (PendingPrefix), which no other
// transaction writes, so that a receipt is durable in the log's queue
// exactly when it is durable at all, and concurrent mutations do not
// conflict over the log. The key orders it by when the keyring signed
// it (not by at, a service's clock, which a test may move), the clock the
// log looks for recent entries by.
func Put(tx store.Tx, r Receipt, at time.Time, parties ...string) (json.RawMessage, error) {
	id := r.ShortID()
	body, err := marshalReceipt(r)
	if err != nil {
		return nil, err
	}
	if err := tx.Set(keyByID+id, body); err != nil {
		return nil, err
	}
	if r.logged {
		if err := tx.Set(pendingKey(r.signed, id), EntryOf(r).Marshal()); err != nil {
			return nil, err
		}
	}
	var stamp [20]byte
	nano := strconv.AppendInt(stamp[:0], at.UnixNano(), 10)
	for i, p := range parties {
		if p == "" || slices.Contains(parties[:i], p) {
			continue
		}
		// <party>/<unixnano:020d>-<id>
		k := make([]byte, 0, len(keyByAgent)+len(p)+len(id)+24)
		k = append(k, agentPrefix(p)...)
		for range 20 - len(nano) {
			k = append(k, '0')
		}
		k = append(append(append(k, nano...), '-'), id...)
		if err := tx.Set(string(k), []byte(id)); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// marshalReceipt is Marshal(r), written field by field: every field but
// the subject is plain ASCII that needs no escape, and the subject, as
// encoding/json would, is copied compacted (as it stands when it is
// canonical, as Sign makes it). A receipt with a field that
// is not plain goes through Marshal.
func marshalReceipt(r Receipt) ([]byte, error) {
	strs := []string{r.ID, r.Issuer, r.IssuanceDate, r.Proof.Type, r.Proof.Created, r.Proof.VerificationMethod,
		r.Proof.SubjectHash, r.Proof.PublicKey, r.Proof.Signature}
	strs = append(append(strs, r.Context...), r.Type...)
	if r.Context == nil || r.Type == nil || len(r.CredentialSubject) == 0 || slices.ContainsFunc(strs, notPlain) {
		return Marshal(r)
	}
	b := bytes.NewBuffer(make([]byte, 0, len(r.CredentialSubject)+600))
	list := func(name string, vs []string) {
		b.WriteString(name)
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			b.WriteString(v)
			b.WriteByte('"')
		}
		b.WriteByte(']')
	}
	field := func(name, v string) {
		b.WriteString(name)
		b.WriteString(v)
		b.WriteByte('"')
	}
	list(`{"@context":[`, r.Context)
	list(`,"type":[`, r.Type)
	field(`,"id":"`, r.ID)
	field(`,"issuer":"`, r.Issuer)
	field(`,"issuanceDate":"`, r.IssuanceDate)
	b.WriteString(`,"credentialSubject":`)
	if isCanonical(r.CredentialSubject) {
		b.Write(r.CredentialSubject) // compact already, as Sign made it
	} else if err := json.Compact(b, r.CredentialSubject); err != nil {
		return Marshal(r) // the error encoding/json gives it
	}
	field(`,"proof":{"type":"`, r.Proof.Type)
	field(`,"created":"`, r.Proof.Created)
	field(`,"verificationMethod":"`, r.Proof.VerificationMethod)
	field(`,"subjectHash":"`, r.Proof.SubjectHash)
	field(`,"publicKey":"`, r.Proof.PublicKey)
	field(`,"signature":"`, r.Proof.Signature)
	b.WriteString("}}")
	return b.Bytes(), nil
}

// notPlain reports whether s holds a byte encoding/json would escape (or
// might: anything outside printable ASCII).
func notPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

func agentPrefix(did string) string { return keyByAgent + url.PathEscape(did) + "/" }

// Get returns the stored bytes of a receipt by its id, with or without
// IDPrefix.
//
// # Errors
//
// receipt_not_found (404) when there is none.
//
// # Notes
//
// Receipts that the market stored before this repository kept its byte
// policy have <, > and & escaped in credentialSubject; Get returns them
// repaired (Repair), so every receipt is served as it was signed.
func Get(tx store.Tx, id string) (json.RawMessage, error) {
	id = strings.TrimPrefix(id, IDPrefix)
	b, err := tx.Get(keyByID + id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, "receipt_not_found", "no receipt %s", id)
	} else if err != nil {
		return nil, err
	}
	return Repair(b)
}

// Repair returns a stored receipt in the bytes its signer produced: when b
// holds an escaped character (\u00XX), its credentialSubject is put back in
// RFC 8785 form, which is what was signed, and the receipt is marshalled
// without HTML escaping. Bytes without one are returned as they are.
func Repair(b []byte) (json.RawMessage, error) {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b, nil
	}
	var r Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("receipt: stored receipt: %w", err)
	}
	canon, err := CanonicalJSON(r.CredentialSubject)
	if err != nil {
		return nil, fmt.Errorf("receipt: stored receipt's subject: %w", err)
	}
	r.CredentialSubject = canon
	return Marshal(r)
}

// AsSigned reports whether b, a receipt as stored or served, carries its
// credentialSubject in the very bytes that were signed: their SHA-256, taken
// as they stand in b, must be proof.subjectHash. A Verifier canonicalises the
// subject before it hashes, so it accepts an escaped copy too; AsSigned is
// the byte policy's own check, and nil says nothing about the signature.
func AsSigned(b []byte) error {
	var r struct {
		Subject json.RawMessage `json:"credentialSubject"`
		Proof   struct {
			SubjectHash string `json:"subjectHash"`
		} `json:"proof"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("receipt: not a receipt: %w", err)
	}
	if sum := sha256.Sum256(r.Subject); hex.EncodeToString(sum[:]) != r.Proof.SubjectHash {
		return fmt.Errorf("receipt: credentialSubject as it stands hashes to %x, not to proof.subjectHash %s", sum, r.Proof.SubjectHash)
	}
	return nil
}

// AgentReceipts is one page of an agent's receipts, newest first.
type AgentReceipts struct {
	Agent    string            `json:"agent"`
	Count    int               `json:"count"`
	Total    int               `json:"total"`
	Receipts []json.RawMessage `json:"receipts"`
	// More is true when the agent has more receipts than Total, which
	// counts at most MaxAgentReceiptsCounted.
	More bool `json:"more,omitempty"`
}

// MaxAgentReceiptsCounted bounds the index entries one ByAgent examines
// to count an agent's receipts: its work is at most this many entries and
// MaxAgentReceipts receipts, however many the agent has.
const MaxAgentReceiptsCounted = 10_000

// ByAgent returns the newest limit receipts (1 to MaxAgentReceipts) that
// did was a party to, and how many there are, up to
// MaxAgentReceiptsCounted (More says there are more).
func ByAgent(tx store.Tx, did string, limit int) (AgentReceipts, error) {
	limit = max(1, min(limit, MaxAgentReceipts))
	out := AgentReceipts{Agent: did, Receipts: []json.RawMessage{}}
	err := tx.Scan(agentPrefix(did), true, func(_ string, v []byte) error {
		if out.Total == MaxAgentReceiptsCounted {
			out.More = true
			return store.ErrStop
		}
		out.Total++
		if len(out.Receipts) == limit {
			return nil
		}
		b, err := Get(tx, string(v))
		if err != nil {
			return err
		}
		out.Receipts = append(out.Receipts, b)
		return nil
	})
	out.Count = len(out.Receipts)
	return out, err
}
