package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Result is the answer of a verification, as `assay verify` prints it and
// the /verify route returns it.
type Result struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

// Verifier checks receipts. With pinned keys it accepts only receipts
// signed by one of them inside the key's window; without, it checks
// integrity only and says so.
type Verifier struct {
	pin    bool           // keys were given: only they are trusted
	pinned map[string]Key // by raw public key bytes
}

// NewVerifier returns a Verifier pinned to keys; none means integrity only.
// A key that does not parse pins nothing, so it cannot widen what verifies.
func NewVerifier(keys []Key) *Verifier {
	v := &Verifier{pin: len(keys) > 0, pinned: make(map[string]Key, len(keys))}
	for _, k := range keys {
		pub, err := ParsePublicKey(k.PublicKey)
		if err != nil && k.DID != "" {
			pub, err = ParseDIDKey(k.DID)
		}
		if err == nil {
			v.pinned[string(pub)] = k
		}
	}
	return v
}

// ParseKeys reads a pinned key list: the published {"keys": [...]} form
// (what `assay keys list` prints and /.well-known/assay-keys serves), a bare
// array of keys, or one key object.
func ParseKeys(data []byte) ([]Key, error) {
	data = bytes.TrimSpace(data)
	var keys []Key
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &keys); err != nil {
			return nil, fmt.Errorf("receipt: keys: %w", err)
		}
	default:
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, fmt.Errorf("receipt: keys: %w", err)
		}
		if _, ok := probe["keys"]; ok {
			var set KeySet
			if err := json.Unmarshal(data, &set); err != nil {
				return nil, fmt.Errorf("receipt: keys: %w", err)
			}
			keys = set.Keys
		} else {
			var k Key
			if err := json.Unmarshal(data, &k); err != nil {
				return nil, fmt.Errorf("receipt: keys: %w", err)
			}
			keys = []Key{k}
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("receipt: keys: the list is empty")
	}
	for i, k := range keys {
		pub, err := ParsePublicKey(k.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("receipt: keys: key %d: %w", i, err)
		}
		if k.DID != "" && k.DID != DIDKey(pub) {
			return nil, fmt.Errorf("receipt: keys: key %d: did %q is not the did:key of public_key", i, k.DID)
		}
		keys[i].PublicKey = base64.StdEncoding.EncodeToString(pub)
		keys[i].DID = DIDKey(pub)
	}
	return keys, nil
}

// ParseKey reads one pinned key given as base64, did:key or multibase. It
// has no validity window.
func ParseKey(s string) (Key, error) {
	pub, err := ParsePublicKey(s)
	if err != nil {
		return Key{}, err
	}
	return Key{PublicKey: base64.StdEncoding.EncodeToString(pub), DID: DIDKey(pub)}, nil
}

// Verify checks one receipt given as JSON, bare or wrapped as
// {"receipt": …} (or {"receipt": …, "log": …}, a receipt with its
// transparency log proof, which Verify leaves to the log's verifier), in
// the Suite form or the Data Integrity form.
func (v *Verifier) Verify(data []byte) Result {
	// Fast path: a bare receipt in the Suite form decodes strictly at once.
	if r, err := decodeReceipt(data); err == nil && r.Proof.Type == Suite && r.CredentialSubject != nil {
		return v.verifyReceipt(r)
	}
	raw, doc, err := unwrap(data)
	if err != nil {
		return invalid(err.Error())
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(doc["proof"], &head); err != nil {
		return invalid("not a receipt: proof is not an object")
	}
	switch head.Type {
	case Suite:
		r, err := decodeReceipt(raw)
		if err != nil {
			return invalid(err.Error())
		}
		return v.verifyReceipt(r)
	case ProofTypeDI:
		pub, created, err := verifyDataIntegrity(doc)
		if err != nil {
			return invalid(strings.TrimPrefix(err.Error(), "receipt: "))
		}
		if created.IsZero() {
			return v.trust(pub, nil, "data integrity proof")
		}
		return v.trust(pub, &created, "data integrity proof")
	case "Ed25519Signature2020":
		return invalid("proof type Ed25519Signature2020 is not supported: that suite needs RDF canonicalisation, which this receipt's issuer did not do; Assay receipts use " + Suite)
	case "":
		return invalid("not a receipt: proof has no type")
	default:
		return invalid(fmt.Sprintf("proof type %q is not supported (want %s or %s/%s)", head.Type, Suite, ProofTypeDI, CryptosuiteEdDSAJCS))
	}
}

// Parse decodes a receipt in the Suite form, bare or wrapped as
// {"receipt": …}, without verifying it.
func Parse(data []byte) (Receipt, error) {
	raw, _, err := unwrap(data)
	if err != nil {
		return Receipt{}, errors.New("receipt: " + err.Error())
	}
	r, err := decodeReceipt(raw)
	if err != nil {
		return Receipt{}, errors.New("receipt: " + err.Error())
	}
	return r, nil
}

func invalid(reason string) Result { return Result{Valid: false, Reason: reason} }

// unwrap returns the receipt object in data, as bytes and as members.
func unwrap(data []byte) ([]byte, map[string]json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		return nil, nil, errors.New("not a receipt: not a JSON object")
	}
	if inner, ok := doc["receipt"]; ok && doc["proof"] == nil && doc["credentialSubject"] == nil {
		_, logged := doc["log"]
		if len(doc) != 1 && (len(doc) != 2 || !logged) {
			return nil, nil, errors.New(`not a receipt: the {"receipt": …} wrapper has other members than "log"`)
		}
		data, doc = inner, nil
		if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
			return nil, nil, errors.New("not a receipt: receipt is not a JSON object")
		}
	}
	if doc["credentialSubject"] == nil {
		return nil, nil, errors.New("not a receipt: no credentialSubject")
	}
	if doc["proof"] == nil {
		return nil, nil, errors.New("not a receipt: no proof")
	}
	return data, doc, nil
}

// decodeReceipt reads the Suite form strictly: a member the receipt format
// does not have is not covered by the signature, so it is refused.
func decodeReceipt(raw []byte) (Receipt, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Receipt
	if err := dec.Decode(&r); err != nil {
		return Receipt{}, fmt.Errorf("not a receipt of this format (fields outside it are not signed): %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return r, nil
}

// verifyReceipt checks a Suite receipt: integrity first (hash, signature),
// then that the envelope matches what was signed, then the key.
func (v *Verifier) verifyReceipt(r Receipt) Result {
	p := r.Proof
	pub, err := base64.StdEncoding.Strict().DecodeString(p.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return invalid("proof.publicKey is not standard base64 of a 32-byte Ed25519 key")
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(p.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return invalid("proof.signature is not standard base64 of a 64-byte Ed25519 signature")
	}
	canon, err := CanonicalJSON(r.CredentialSubject)
	if err != nil {
		return invalid("credentialSubject cannot be canonicalised: " + strings.TrimPrefix(err.Error(), "receipt: "))
	}
	sum := sha256.Sum256(canon)
	if hex.EncodeToString(sum[:]) != p.SubjectHash {
		return invalid("proof.subjectHash does not match the SHA-256 of the canonical credentialSubject: the subject or the hash was changed")
	}
	if !ed25519.Verify(pub, canon, sig) {
		return invalid("proof.signature does not verify over the canonical credentialSubject with proof.publicKey")
	}

	// The subject is authentic; the envelope must say what it says.
	var bound struct {
		Receipt *Binding `json:"receipt"`
	}
	if err := json.Unmarshal(canon, &bound); err != nil || bound.Receipt == nil {
		return invalid(`credentialSubject has no "receipt" binding, so id, type and dates are not signed`)
	}
	b := bound.Receipt
	switch {
	case len(r.Context) != 2 || r.Context[0] != ContextVC1 || r.Context[1] != ContextAssay:
		return invalid(fmt.Sprintf("@context must be [%q, %q]", ContextVC1, ContextAssay))
	case len(r.Type) != 2 || r.Type[0] != "VerifiableCredential" || r.Type[1] != b.Type:
		return invalid(fmt.Sprintf("type must be [\"VerifiableCredential\", %q] as signed", b.Type))
	case r.ID != IDPrefix+b.ID:
		return invalid(fmt.Sprintf("id must be %q as signed", IDPrefix+b.ID))
	case r.IssuanceDate != b.Issued:
		return invalid(fmt.Sprintf("issuanceDate must be %q as signed", b.Issued))
	case p.Created != b.Issued:
		return invalid(fmt.Sprintf("proof.created must be %q as signed", b.Issued))
	case r.Issuer != DIDKey(pub):
		return invalid("issuer is not the did:key of proof.publicKey")
	case p.VerificationMethod != VerificationMethod(pub):
		return invalid("proof.verificationMethod is not the did:key of proof.publicKey")
	}
	issued, err := time.Parse(time.RFC3339, b.Issued)
	if err != nil {
		return invalid(fmt.Sprintf("issue time %q is not a date-time", b.Issued))
	}
	return v.trust(pub, &issued, "receipt")
}

// trust decides whether an intact receipt signed by pub at issued is the
// court's.
func (v *Verifier) trust(pub []byte, issued *time.Time, what string) Result {
	did := DIDKey(pub)
	if !v.pin {
		return Result{Valid: true, Reason: fmt.Sprintf("integrity only: the %s is intact and signed by %s, but no court key was pinned, so nothing shows that key is the court's (pin the court's published keys to check that)", what, did)}
	}
	k, ok := v.pinned[string(pub)]
	if !ok {
		return invalid(fmt.Sprintf("signed by %s, which is not one of the pinned court keys", did))
	}
	if k.NotBefore.IsZero() && k.NotAfter == nil {
		return Result{Valid: true, Reason: fmt.Sprintf("signed by pinned key %s", did)}
	}
	if issued == nil {
		return invalid(fmt.Sprintf("the %s has no issue time to check against the key's window", what))
	}
	if issued.Before(k.NotBefore) {
		return invalid(fmt.Sprintf("issued %s, before key %s began signing at %s", issued.UTC().Format(timeLayout), did, k.NotBefore.UTC().Format(timeLayout)))
	}
	if k.NotAfter != nil && issued.After(*k.NotAfter) {
		return invalid(fmt.Sprintf("issued %s, after key %s stopped signing at %s", issued.UTC().Format(timeLayout), did, k.NotAfter.UTC().Format(timeLayout)))
	}
	state := "current"
	if k.NotAfter != nil {
		state = "retired " + k.NotAfter.UTC().Format(timeLayout)
	}
	return Result{Valid: true, Reason: fmt.Sprintf("signed by pinned court key %s (%s) within its window", did, state)}
}
