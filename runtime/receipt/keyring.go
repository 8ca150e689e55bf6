package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Where a Keyring keeps its keys, below the data directory.
const (
	KeysDir   = "keys"
	KeysFile  = "ed25519.json"
	keyFormat = "assay-keys/v1"
)

// Keyring errors.
var (
	// ErrNoKeys means the data directory holds no keys yet.
	ErrNoKeys = errors.New("receipt: no keys in the data directory")
	// ErrClock means the clock reads earlier than the current key's
	// not_before, so what it would sign could not verify.
	ErrClock = errors.New("receipt: clock is before the current key's not_before")
	// ErrKeyFileMode means the keys file is readable or writable by others.
	ErrKeyFileMode = errors.New("receipt: keys file must not be accessible to group or others (chmod 600)")
)

// Key is one published court key: what /.well-known/assay-keys lists and
// what `assay verify --keys` pins. A key signs receipts issued from
// NotBefore through NotAfter, both included; a nil NotAfter means it still
// signs. A Key with a zero NotBefore and nil NotAfter has no window.
type Key struct {
	PublicKey string     `json:"public_key"` // standard base64 of the raw 32 bytes
	DID       string     `json:"did"`        // did:key
	NotBefore time.Time  `json:"not_before,omitzero"`
	NotAfter  *time.Time `json:"not_after"`
}

// KeySet is the published JSON form of a key list: {"keys": [...]}.
type KeySet struct {
	Keys []Key `json:"keys"`
}

// KeyringConfig configures OpenKeyring. Every field is required.
type KeyringConfig struct {
	// Dir is the data directory; keys live in Dir/keys/ed25519.json.
	Dir string
	// Now is the clock that dates receipts and key windows.
	Now func() time.Time
	// Rand supplies key seeds and generated receipt ids; crypto/rand.Reader
	// in production, a seeded reader in tests.
	Rand io.Reader
}

// Keyring holds the court's Ed25519 keys: every key it ever signed with,
// the newest last. Only the newest signs. It is safe for concurrent use.
type Keyring struct {
	path string
	now  func() time.Time

	randMu sync.Mutex
	rand   io.Reader

	mu   sync.RWMutex
	keys []ringKey // oldest first; the last one signs

	// logged: the receipts Sign makes are recorded for the transparency
	// log by Put (LogReceipts).
	logged atomic.Bool
}

type ringKey struct {
	priv      ed25519.PrivateKey
	signing   *signingKey // priv, prepared to sign
	notBefore time.Time
	notAfter  *time.Time
}

// storedKey is one key as the keys file holds it.
type storedKey struct {
	Seed      string     `json:"seed"`
	PublicKey string     `json:"public_key"`
	NotBefore time.Time  `json:"not_before"`
	NotAfter  *time.Time `json:"not_after"`
}

type keyFile struct {
	Format string      `json:"format"`
	Keys   []storedKey `json:"keys"`
}

// OpenKeyring loads the keys in cfg.Dir, creating the directory (0700) and
// a first key (file mode 0600) when there are none.
//
// # Errors
//
// ErrKeyFileMode when the keys file is open to group or others; an error
// naming the file when it is unreadable or inconsistent.
func OpenKeyring(cfg KeyringConfig) (*Keyring, error) {
	if cfg.Dir == "" || cfg.Now == nil || cfg.Rand == nil {
		panic("receipt: KeyringConfig needs Dir, Now and Rand")
	}
	k := &Keyring{path: filepath.Join(cfg.Dir, KeysDir, KeysFile), now: cfg.Now, rand: cfg.Rand}
	keys, err := loadKeys(k.path)
	if errors.Is(err, ErrNoKeys) {
		keys, err = k.create()
	}
	if err != nil {
		return nil, err
	}
	k.keys = keys
	return k, nil
}

// ReadKeys returns the published list of the keys in the data directory dir
// without opening it for signing. It returns ErrNoKeys when there are none.
func ReadKeys(dir string) ([]Key, error) {
	keys, err := loadKeys(filepath.Join(dir, KeysDir, KeysFile))
	if err != nil {
		return nil, err
	}
	return publish(keys), nil
}

// Keys returns the published list of every key, oldest first.
func (k *Keyring) Keys() []Key {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return publish(k.keys)
}

// Current returns the key that signs now, as /health publishes it.
func (k *Keyring) Current() Key {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return publish(k.keys[len(k.keys)-1:])[0]
}

// Verifier returns a Verifier that accepts receipts signed by this keyring's
// keys, each inside its window: what the server's /verify route uses.
func (k *Keyring) Verifier() *Verifier { return NewVerifier(k.Keys()) }

// Sign signs subject as a receipt of the given kind (e.g. KindVerdict) and id,
// issued now by the current key. An empty id is generated from the
// keyring's random source (16 hex digits).
//
// # Notes
//
// subject must marshal to a JSON object without a top-level "receipt"
// member: Sign adds that member (a Binding) so that the signature covers the
// receipt's id, type and issue time.
//
// # Errors
//
// ErrBadKind, ErrBadID, ErrSubjectObject, ErrReserved, ErrUnsafeInteger,
// ErrClock.
func (k *Keyring) Sign(kind, id string, subject any) (Receipt, error) {
	if id == "" {
		var err error
		if id, err = k.newID(); err != nil {
			return Receipt{}, err
		}
	}
	now := k.now()
	issued := truncate(now)
	k.mu.RLock()
	cur := k.keys[len(k.keys)-1]
	k.mu.RUnlock()
	if issued.Before(cur.notBefore) {
		return Receipt{}, fmt.Errorf("%w: now %s, not_before %s", ErrClock, issued.Format(timeLayout), cur.notBefore.Format(timeLayout))
	}
	r, err := cur.signing.sign(kind, id, issued, subject)
	r.logged, r.signed = k.logged.Load(), now
	return r, err
}

// LogReceipts turns the transparency log on for the receipts Sign makes
// from now on: Put records each one's Entry for the log to integrate. A
// court turns it on once, before it serves.
func (k *Keyring) LogReceipts() { k.logged.Store(true) }

// Rotate makes a new key the signing key. The old key stays listed with
// not_after set to now, so receipts it signed keep verifying. It returns the
// new key.
//
// # Notes
//
// Rotate rewrites the keys file atomically. Another process holding the same
// data directory open keeps its keys in memory until it reopens them.
func (k *Keyring) Rotate() (Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := truncate(k.now())
	cur := k.keys[len(k.keys)-1]
	if now.Before(cur.notBefore) {
		return Key{}, fmt.Errorf("%w: now %s, not_before %s", ErrClock, now.Format(timeLayout), cur.notBefore.Format(timeLayout))
	}
	fresh, err := k.generate(now)
	if err != nil {
		return Key{}, err
	}
	keys := append([]ringKey(nil), k.keys...)
	keys[len(keys)-1].notAfter = &now
	keys = append(keys, fresh)
	if err := writeKeys(k.path, keys, false); err != nil {
		return Key{}, err
	}
	k.keys = keys
	return publish(keys[len(keys)-1:])[0], nil
}

// SignDocument signs msg with the current key, for a document the court
// publishes that is not a receipt (the JWS of its A2A Agent Card): the
// key that signed, as /.well-known/assay-keys publishes it, and the
// Ed25519 signature.
func (k *Keyring) SignDocument(msg []byte) (Key, []byte) {
	k.mu.RLock()
	cur := k.keys[len(k.keys)-1]
	k.mu.RUnlock()
	return publish([]ringKey{cur})[0], ed25519.Sign(cur.priv, msg)
}

// Credential returns r as a W3C VC 2.0 credential secured with an
// eddsa-jcs-2022 DataIntegrityProof by the current key, for generic VC
// tooling. r must be a valid receipt of this keyring, so that Credential
// never lends the court's signature to a forgery.
func (k *Keyring) Credential(r Receipt) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("receipt: marshal: %w", err)
	}
	if res := k.Verifier().Verify(raw); !res.Valid {
		return nil, fmt.Errorf("receipt: not a valid receipt of this court: %s", res.Reason)
	}
	now := truncate(k.now())
	k.mu.RLock()
	cur := k.keys[len(k.keys)-1]
	k.mu.RUnlock()
	pub := cur.priv.Public().(ed25519.PublicKey)
	doc, err := json.Marshal(struct {
		Context           []string        `json:"@context"`
		Type              []string        `json:"type"`
		ID                string          `json:"id"`
		Issuer            string          `json:"issuer"`
		ValidFrom         string          `json:"validFrom"`
		CredentialSubject json.RawMessage `json:"credentialSubject"`
	}{[]string{ContextVC2}, r.Type, r.ID, DIDKey(pub), r.IssuanceDate, r.CredentialSubject})
	if err != nil {
		return nil, fmt.Errorf("receipt: marshal credential: %w", err)
	}
	return SignDataIntegrity(doc, DataIntegrityProof{
		Type:               ProofTypeDI,
		Cryptosuite:        CryptosuiteEdDSAJCS,
		Created:            now.Format(timeLayout),
		VerificationMethod: VerificationMethod(pub),
		ProofPurpose:       PurposeAssertion,
	}, cur.priv)
}

func (k *Keyring) newID() (string, error) {
	var b [8]byte
	k.randMu.Lock()
	_, err := io.ReadFull(k.rand, b[:])
	k.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("receipt: receipt id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (k *Keyring) generate(notBefore time.Time) (ringKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	k.randMu.Lock()
	_, err := io.ReadFull(k.rand, seed)
	k.randMu.Unlock()
	if err != nil {
		return ringKey{}, fmt.Errorf("receipt: key seed: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return ringKey{priv: priv, signing: newSigningKey(priv), notBefore: notBefore}, nil
}

// create makes the first key. When another process created one meanwhile,
// it loads that one instead.
func (k *Keyring) create() ([]ringKey, error) {
	first, err := k.generate(truncate(k.now()))
	if err != nil {
		return nil, err
	}
	keys := []ringKey{first}
	if err := writeKeys(k.path, keys, true); errors.Is(err, fs.ErrExist) {
		return loadKeys(k.path)
	} else if err != nil {
		return nil, err
	}
	return keys, nil
}

func truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

func publish(keys []ringKey) []Key {
	out := make([]Key, len(keys))
	for i, rk := range keys {
		pub := rk.priv.Public().(ed25519.PublicKey)
		out[i] = Key{
			PublicKey: base64.StdEncoding.EncodeToString(pub),
			DID:       DIDKey(pub),
			NotBefore: rk.notBefore,
			NotAfter:  rk.notAfter,
		}
	}
	return out
}

func loadKeys(path string) ([]ringKey, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is absent", ErrNoKeys, path)
	} else if err != nil {
		return nil, fmt.Errorf("receipt: keys file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o", ErrKeyFileMode, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("receipt: keys file: %w", err)
	}
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("receipt: keys file %s: %w", path, err)
	}
	if f.Format != keyFormat {
		return nil, fmt.Errorf("receipt: keys file %s: format %q, want %q", path, f.Format, keyFormat)
	}
	if len(f.Keys) == 0 {
		return nil, fmt.Errorf("%w: %s lists none", ErrNoKeys, path)
	}
	keys := make([]ringKey, len(f.Keys))
	for i, sk := range f.Keys {
		bad := func(what string) error {
			return fmt.Errorf("receipt: keys file %s: key %d: %s", path, i, what)
		}
		seed, err := base64.StdEncoding.DecodeString(sk.Seed)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, bad("seed is not base64 of 32 bytes")
		}
		priv := ed25519.NewKeyFromSeed(seed)
		if base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)) != sk.PublicKey {
			return nil, bad("public_key does not match the seed")
		}
		last := i == len(f.Keys)-1
		switch {
		case last && sk.NotAfter != nil:
			return nil, bad("the newest key must not have not_after")
		case !last && sk.NotAfter == nil:
			return nil, bad("a retired key needs not_after")
		case sk.NotAfter != nil && sk.NotAfter.Before(sk.NotBefore):
			return nil, bad("not_after is before not_before")
		case i > 0 && sk.NotBefore.Before(keys[i-1].notBefore):
			return nil, bad("keys are not in order of not_before")
		}
		keys[i] = ringKey{priv: priv, signing: newSigningKey(priv), notBefore: sk.NotBefore.UTC(), notAfter: sk.NotAfter}
	}
	return keys, nil
}

// writeKeys writes the keys file atomically: a temporary file (0600) in the
// same directory, synced, then renamed over the old one, or linked into place
// when exclusive, which fails with fs.ErrExist if the file appeared meanwhile.
func writeKeys(path string, keys []ringKey, exclusive bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("receipt: keys directory: %w", err)
	}
	f := keyFile{Format: keyFormat, Keys: make([]storedKey, len(keys))}
	for i, rk := range keys {
		f.Keys[i] = storedKey{
			Seed:      base64.StdEncoding.EncodeToString(rk.priv.Seed()),
			PublicKey: base64.StdEncoding.EncodeToString(rk.priv.Public().(ed25519.PublicKey)),
			NotBefore: rk.notBefore,
			NotAfter:  rk.notAfter,
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".ed25519-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	if exclusive {
		err = os.Link(tmp.Name(), path)
	} else {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("receipt: keys file: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("receipt: keys directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("receipt: keys directory: %w", err)
	}
	return nil
}
