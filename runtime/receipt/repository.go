package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
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
func Put(tx store.Tx, r Receipt, at time.Time, parties ...string) (json.RawMessage, error) {
	id := r.ShortID()
	body, err := Marshal(r)
	if err != nil {
		return nil, err
	}
	if err := tx.Set(keyByID+id, body); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range parties {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if err := tx.Set(fmt.Sprintf("%s%020d-%s", agentPrefix(p), at.UnixNano(), id), []byte(id)); err != nil {
			return nil, err
		}
	}
	return body, nil
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
}

// ByAgent returns the newest limit receipts (1 to MaxAgentReceipts) that
// did was a party to, and how many there are.
func ByAgent(tx store.Tx, did string, limit int) (AgentReceipts, error) {
	limit = max(1, min(limit, MaxAgentReceipts))
	out := AgentReceipts{Agent: did, Receipts: []json.RawMessage{}}
	err := tx.Scan(agentPrefix(did), true, func(_ string, v []byte) error {
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
