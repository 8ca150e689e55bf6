package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/mr-tron/base58"
)

// ed25519PubCodec is the multicodec prefix of an Ed25519 public key
// (0xed as an unsigned varint).
var ed25519PubCodec = [2]byte{0xed, 0x01}

// ErrBadKey reports a public key that is not a 32-byte Ed25519 key in one of
// the accepted encodings.
var ErrBadKey = errors.New("receipt: not an ed25519 public key")

// Multibase returns pub as a multibase base58btc string of its multicodec
// form: "z6Mk…".
func Multibase(pub ed25519.PublicKey) string {
	b := make([]byte, 0, 2+ed25519.PublicKeySize)
	b = append(b, ed25519PubCodec[:]...)
	b = append(b, pub...)
	return "z" + base58.Encode(b)
}

// DIDKey returns the did:key identifier of pub: "did:key:z6Mk…".
func DIDKey(pub ed25519.PublicKey) string {
	return "did:key:" + Multibase(pub)
}

// VerificationMethod returns the did:key verification method of pub, the
// DID followed by its own key as fragment: "did:key:z6Mk…#z6Mk…".
func VerificationMethod(pub ed25519.PublicKey) string {
	mb := Multibase(pub)
	return "did:key:" + mb + "#" + mb
}

// ParseMultibase decodes a multibase base58btc Ed25519 public key ("z6Mk…").
func ParseMultibase(s string) (ed25519.PublicKey, error) {
	if !strings.HasPrefix(s, "z") {
		return nil, fmt.Errorf("%w: multibase %q is not base58btc", ErrBadKey, s)
	}
	b, err := base58.Decode(s[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	if len(b) != 2+ed25519.PublicKeySize || b[0] != ed25519PubCodec[0] || b[1] != ed25519PubCodec[1] {
		return nil, fmt.Errorf("%w: multicodec is not a 32-byte ed25519-pub", ErrBadKey)
	}
	return ed25519.PublicKey(b[2:]), nil
}

// ParseDIDKey decodes a did:key of an Ed25519 key, with or without a
// fragment. A fragment must name the same key.
func ParseDIDKey(s string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(s, "did:key:")
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a did:key", ErrBadKey, s)
	}
	id, frag, hasFrag := strings.Cut(rest, "#")
	if hasFrag && frag != id {
		return nil, fmt.Errorf("%w: fragment of %q names another key", ErrBadKey, s)
	}
	return ParseMultibase(id)
}

// ParsePublicKey accepts an Ed25519 public key as standard base64 of the
// raw 32 bytes (as /health and proof.publicKey carry it), as a did:key, or as
// a multibase "z6Mk…" string.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "did:key:"):
		return ParseDIDKey(s)
	case strings.HasPrefix(s, "z") && !strings.HasSuffix(s, "="):
		// Base64 of 32 bytes always ends in "="; multibase never does.
		return ParseMultibase(s)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not base64", ErrBadKey, s)
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrBadKey, len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}
