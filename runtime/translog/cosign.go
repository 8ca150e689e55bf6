package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// algCosignature is the signed-note key type of an Ed25519 cosignature
// key (C2SP tlog-cosignature, cosignature/v1).
const algCosignature = 0x04

// NewCosignatureVerifier returns the note.Verifier of an Ed25519
// cosignature key given as a signed-note verifier key,
// "<name>+<key hash>+<base64 of 0x04 and the 32-byte key>": it checks
// C2SP tlog-cosignature v1 signatures (an 8-byte timestamp and an Ed25519
// signature over "cosignature/v1\ntime <t>\n" and the checkpoint). It is
// the verifying half of torchwood.CosignatureSigner, which `assay
// witness` signs with.
//
// # Errors
//
// A key that is not of that form, or whose hash does not match.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 || len(parts[1]) != 8 {
		return nil, errors.New("not a verifier key: want name+hash+key")
	}
	name, hash16, key64 := parts[0], parts[1], parts[2]
	hash, err := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if err != nil || err2 != nil || name == "" {
		return nil, errors.New("not a verifier key: want name+hash+key")
	}
	if len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignature {
		return nil, errors.New("not an Ed25519 cosignature key (type 0x04)")
	}
	if uint32(hash) != keyHash(name, key) {
		return nil, errors.New("the key hash does not match the name and key")
	}
	return &cosigVerifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }

// Verify checks sig (timestamp and signature) on the checkpoint msg.
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > 1<<63-1 {
		return false
	}
	c, err := torchwood.ParseCheckpoint(string(msg))
	if err != nil || c.String() != string(msg) {
		return false
	}
	signed := "cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n" + string(msg)
	return ed25519.Verify(v.key, []byte(signed), sig[8:])
}

// keyHash is a signed-note key's id: the first four bytes of the SHA-256
// of its name, a newline, and its type and key.
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}
