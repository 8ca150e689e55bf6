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

// Constants of the receipt format. See the package documentation.
const (
	// ContextVC1 and ContextAssay are a receipt's @context, in that order.
	ContextVC1   = "https://www.w3.org/2018/credentials/v1"
	ContextAssay = "https://github.com/assayhq/assay#receipt-v1"

	// Suite is proof.type of a receipt: Ed25519 over the RFC 8785 form of
	// credentialSubject. It is Assay's own suite, not a W3C one.
	Suite = "AssayEd25519JcsSubject2026"

	// IDPrefix starts every receipt id: "urn:assay:receipt:<id>".
	IDPrefix = "urn:assay:receipt:"

	// KindVerdict is the receipt type of a court's verdict. Services name
	// their other kinds the same way: "Assay" and a noun.
	KindVerdict = "AssayVerdict"

	// BindingMember is the reserved top-level member of every signed
	// credentialSubject that binds the envelope to the signature.
	BindingMember = "receipt"

	// timeLayout is how receipts and key windows write times: UTC, whole
	// seconds.
	timeLayout = "2006-01-02T15:04:05Z"
)

// Errors that Sign returns for bad arguments.
var (
	ErrBadKind       = errors.New("receipt: kind must be a capitalised alphanumeric name like AssayVerdict")
	ErrBadID         = errors.New("receipt: id must be 1 to 128 characters of A-Z a-z 0-9 . _ -")
	ErrSubjectObject = errors.New("receipt: subject must marshal to a JSON object")
	ErrReserved      = errors.New(`receipt: subject must not have a top-level "receipt" member; it is reserved for the binding`)
)

// Receipt is a signed decision in the escrow seed's W3C-VC shape. Marshal it
// with encoding/json; CredentialSubject holds the canonical bytes that were
// signed.
type Receipt struct {
	Context           []string        `json:"@context"`
	Type              []string        `json:"type"`
	ID                string          `json:"id"`
	Issuer            string          `json:"issuer"`
	IssuanceDate      string          `json:"issuanceDate"`
	CredentialSubject json.RawMessage `json:"credentialSubject"`
	Proof             Proof           `json:"proof"`

	// logged: a Keyring whose log is on signed it, so Put records its
	// Entry for the transparency log, under a key ordered by signed (the
	// keyring's clock when it signed, to the nanosecond). supersedes is
	// the id of the receipt it overturns (Superseding). None of them is
	// part of the receipt.
	logged     bool
	signed     time.Time
	supersedes string
}

// Proof is a receipt's proof in the Suite.
type Proof struct {
	Type               string `json:"type"`
	Created            string `json:"created"`
	VerificationMethod string `json:"verificationMethod"`
	SubjectHash        string `json:"subjectHash"` // hex SHA-256 of the canonical subject
	PublicKey          string `json:"publicKey"`   // standard base64 of the raw 32-byte key
	Signature          string `json:"signature"`   // standard base64 of the 64-byte signature
}

// Binding is the envelope that Sign writes into the subject under
// BindingMember, so that the signature covers it.
type Binding struct {
	ID     string `json:"id"`     // the receipt id without IDPrefix
	Type   string `json:"type"`   // the receipt kind, Receipt.Type[1]
	Issued string `json:"issued"` // Receipt.IssuanceDate and Proof.Created
}

// Kind returns the receipt's kind, the second entry of its type.
func (r Receipt) Kind() string {
	if len(r.Type) != 2 {
		return ""
	}
	return r.Type[1]
}

// ShortID returns the receipt id without IDPrefix.
func (r Receipt) ShortID() string { return strings.TrimPrefix(r.ID, IDPrefix) }

// Subject decodes the signed credentialSubject into v.
func (r Receipt) Subject(v any) error { return json.Unmarshal(r.CredentialSubject, v) }

// signingKey is a private key and what every receipt it signs names it
// by, worked out once.
type signingKey struct {
	priv   ed25519.PrivateKey
	issuer string // DIDKey
	method string // VerificationMethod
	pub64  string // standard base64 of the public key
}

func newSigningKey(priv ed25519.PrivateKey) *signingKey {
	pub := priv.Public().(ed25519.PublicKey)
	return &signingKey{priv: priv, issuer: DIDKey(pub), method: VerificationMethod(pub), pub64: base64.StdEncoding.EncodeToString(pub)}
}

// sign builds and signs a receipt. kind and id must be valid; issued is UTC
// in whole seconds.
func sign(priv ed25519.PrivateKey, kind, id string, issued time.Time, subject any) (Receipt, error) {
	return newSigningKey(priv).sign(kind, id, issued, subject)
}

func (k *signingKey) sign(kind, id string, issued time.Time, subject any) (Receipt, error) {
	if !validKind(kind) {
		return Receipt{}, fmt.Errorf("%w: %q", ErrBadKind, kind)
	}
	if !validID(id) {
		return Receipt{}, fmt.Errorf("%w: %q", ErrBadID, id)
	}
	when := issued.UTC().Format(timeLayout)
	binding := Binding{ID: id, Type: kind, Issued: when}
	var (
		canon []byte
		err   error
	)
	if c, ok := subject.(Canonicaler); ok {
		var members []Member
		if members, err = c.CanonicalMembers(); err == nil {
			canon, err = canonicalObject(members, binding)
		}
	} else {
		canon, err = bindSubject(subject, binding)
	}
	if err != nil {
		return Receipt{}, err
	}
	sum := sha256.Sum256(canon)
	return Receipt{
		Context:           []string{ContextVC1, ContextAssay},
		Type:              []string{"VerifiableCredential", kind},
		ID:                IDPrefix + id,
		Issuer:            k.issuer,
		IssuanceDate:      when,
		CredentialSubject: canon,
		Proof: Proof{
			Type:               Suite,
			Created:            when,
			VerificationMethod: k.method,
			SubjectHash:        hex.EncodeToString(sum[:]),
			PublicKey:          k.pub64,
			Signature:          base64.StdEncoding.EncodeToString(ed25519.Sign(k.priv, canon)),
		},
	}, nil
}

// bindSubject marshals subject, adds the binding as its first member and
// returns the canonical bytes.
func bindSubject(subject any, b Binding) ([]byte, error) {
	body, err := json.Marshal(subject)
	if err != nil {
		return nil, fmt.Errorf("receipt: marshal subject: %w", err)
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, ErrSubjectObject
	}
	bind, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("receipt: marshal binding: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + len(bind) + 16)
	buf.WriteString(`{"` + BindingMember + `":`)
	buf.Write(bind)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		buf.WriteByte(',')
	}
	buf.Write(body[1:])
	canon, err := CanonicalJSON(buf.Bytes())
	if err != nil {
		if strings.Contains(err.Error(), `Duplicate key: "`+BindingMember+`"`) {
			return nil, ErrReserved
		}
		return nil, fmt.Errorf("receipt: subject: %w", err)
	}
	return canon, nil
}

func validKind(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' || s == "VerifiableCredential" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func validID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
