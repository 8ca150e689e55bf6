package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mr-tron/base58"
)

// Names of the W3C Data Integrity form.
const (
	ContextVC2          = "https://www.w3.org/ns/credentials/v2"
	ProofTypeDI         = "DataIntegrityProof"
	CryptosuiteEdDSAJCS = "eddsa-jcs-2022"
	PurposeAssertion    = "assertionMethod"
)

// ErrDataIntegrity reports a Data Integrity credential that does not verify.
var ErrDataIntegrity = errors.New("receipt: data integrity proof")

// DataIntegrityProof is the proof options of an eddsa-jcs-2022 proof: a
// proof without its proofValue. Context, when set, must be the secured
// document's @context; SignDataIntegrity copies it from the document when
// empty, as the specification says.
type DataIntegrityProof struct {
	Type               string          `json:"type"`
	Cryptosuite        string          `json:"cryptosuite"`
	Created            string          `json:"created,omitempty"`
	VerificationMethod string          `json:"verificationMethod"`
	ProofPurpose       string          `json:"proofPurpose"`
	Context            json.RawMessage `json:"@context,omitempty"`
}

// SignDataIntegrity secures the JSON object doc with an eddsa-jcs-2022
// DataIntegrityProof made with priv, following W3C vc-di-eddsa section 3.3
// (Add Proof, Transformation, Hashing, Proof Configuration, Proof
// Serialization): the signature is Ed25519 over SHA-256 of the canonical
// proof configuration followed by SHA-256 of the canonical document. It
// returns the secured document in canonical form.
func SignDataIntegrity(doc []byte, opts DataIntegrityProof, priv ed25519.PrivateKey) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("receipt: document: %w", err)
	}
	if _, ok := m["proof"]; ok {
		return nil, errors.New("receipt: document already has a proof")
	}
	if ctx, ok := m["@context"]; ok && len(opts.Context) == 0 {
		opts.Context = ctx
	}
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	hashData, err := diHashData(m, opts)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(priv, hashData)
	proof, err := json.Marshal(struct {
		DataIntegrityProof
		ProofValue string `json:"proofValue"`
	}{opts, "z" + base58.Encode(sig)})
	if err != nil {
		return nil, fmt.Errorf("receipt: proof: %w", err)
	}
	m["proof"] = proof
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("receipt: secured document: %w", err)
	}
	return CanonicalJSON(out)
}

// checkOptions is the Transformation and Proof Configuration steps' checks
// of eddsa-jcs-2022.
func checkOptions(opts DataIntegrityProof) error {
	if opts.Type != ProofTypeDI || opts.Cryptosuite != CryptosuiteEdDSAJCS {
		return fmt.Errorf("%w: proof must be %s with cryptosuite %s", ErrDataIntegrity, ProofTypeDI, CryptosuiteEdDSAJCS)
	}
	if opts.Created != "" {
		if _, err := time.Parse(time.RFC3339, opts.Created); err != nil {
			return fmt.Errorf("%w: created %q is not a date-time", ErrDataIntegrity, opts.Created)
		}
	}
	return nil
}

// diHashData is the hashing step of eddsa-jcs-2022: SHA-256 of the
// canonical proof configuration, then SHA-256 of the canonical document
// (without its proof).
func diHashData(doc map[string]json.RawMessage, config any) ([]byte, error) {
	canonConfig, err := Canonical(config)
	if err != nil {
		return nil, err
	}
	canonDoc, err := Canonical(doc)
	if err != nil {
		return nil, err
	}
	proofHash := sha256.Sum256(canonConfig)
	docHash := sha256.Sum256(canonDoc)
	return append(proofHash[:], docHash[:]...), nil
}

// VerifyDataIntegrity verifies an eddsa-jcs-2022 secured document as W3C
// vc-di-eddsa section 3.3.2 says and returns the key it was signed with (from
// the did:key verification method) and the proof's created time (zero when
// absent). It checks integrity only: whether the key is trusted is the
// caller's question.
func VerifyDataIntegrity(secured []byte) (ed25519.PublicKey, time.Time, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(secured, &m); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: not a JSON object: %v", ErrDataIntegrity, err)
	}
	return verifyDataIntegrity(m)
}

// unsupportedProofFields are proof options this verifier does not enforce,
// so it refuses proofs that carry them rather than ignore them.
var unsupportedProofFields = []string{"expires", "domain", "challenge", "nonce", "previousProof"}

func verifyDataIntegrity(m map[string]json.RawMessage) (ed25519.PublicKey, time.Time, error) {
	var zero time.Time
	rawProof, ok := m["proof"]
	if !ok {
		return nil, zero, fmt.Errorf("%w: no proof", ErrDataIntegrity)
	}
	delete(m, "proof")
	var config map[string]json.RawMessage
	if err := json.Unmarshal(rawProof, &config); err != nil {
		return nil, zero, fmt.Errorf("%w: proof is not a single JSON object", ErrDataIntegrity)
	}
	for _, f := range unsupportedProofFields {
		if _, ok := config[f]; ok {
			return nil, zero, fmt.Errorf("%w: proof option %q is not supported", ErrDataIntegrity, f)
		}
	}
	var p struct {
		DataIntegrityProof
		ProofValue string `json:"proofValue"`
	}
	if err := json.Unmarshal(rawProof, &p); err != nil {
		return nil, zero, fmt.Errorf("%w: proof: %v", ErrDataIntegrity, err)
	}
	delete(config, "proofValue")
	if err := checkOptions(p.DataIntegrityProof); err != nil {
		return nil, zero, err
	}
	if p.ProofPurpose != PurposeAssertion {
		return nil, zero, fmt.Errorf("%w: proofPurpose %q, want %s", ErrDataIntegrity, p.ProofPurpose, PurposeAssertion)
	}
	if len(p.ProofValue) < 2 || p.ProofValue[0] != 'z' {
		return nil, zero, fmt.Errorf("%w: proofValue is not multibase base58btc", ErrDataIntegrity)
	}
	sig, err := base58.Decode(p.ProofValue[1:])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, zero, fmt.Errorf("%w: proofValue is not a 64-byte signature", ErrDataIntegrity)
	}
	if len(p.Context) > 0 {
		var proofCtx, docCtx []json.RawMessage
		if err := json.Unmarshal(p.Context, &proofCtx); err != nil {
			return nil, zero, fmt.Errorf("%w: proof @context is not an array", ErrDataIntegrity)
		}
		if err := json.Unmarshal(m["@context"], &docCtx); err != nil || len(docCtx) < len(proofCtx) {
			return nil, zero, fmt.Errorf("%w: document @context does not start with the proof's", ErrDataIntegrity)
		}
		for i := range proofCtx {
			if !bytes.Equal(proofCtx[i], docCtx[i]) {
				return nil, zero, fmt.Errorf("%w: document @context does not start with the proof's", ErrDataIntegrity)
			}
		}
		m["@context"] = p.Context
	}
	pub, err := ParseDIDKey(p.VerificationMethod)
	if err != nil {
		return nil, zero, fmt.Errorf("%w: verificationMethod: %v", ErrDataIntegrity, err)
	}
	var created time.Time
	if p.Created != "" {
		created, _ = time.Parse(time.RFC3339, p.Created) // checkOptions parsed it
	}
	hashData, err := diHashData(m, config)
	if err != nil {
		return nil, zero, err
	}
	if !ed25519.Verify(pub, hashData, sig) {
		return nil, zero, fmt.Errorf("%w: signature does not verify with %s", ErrDataIntegrity, p.VerificationMethod)
	}
	return pub, created, nil
}
