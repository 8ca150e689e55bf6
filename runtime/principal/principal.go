// Package principal is who may act in Assay's services, and how a request
// proves it. There are three kinds of principal:
//
//   - a registered key: an Ed25519 public key an operator registered under a
//     key id, with a tenant, roles, scopes and a revocation time. It signs
//     requests (RFC 9421) with its key id as keyid, and acts as the agent
//     whose id is its key id.
//   - a did:key: an agent whose id is a did:key of an Ed25519 key proves it
//     by signing with that key, keyid being the did:key itself. Nothing is
//     registered: the id is the public key.
//   - an API key: a random secret an operator issues for one agent id,
//     for clients that can only send a bearer header. The secret is shown
//     once; the store keeps its SHA-256. It can be revoked.
//
// Every signature's nonce is recorded here, once, whatever the kind, so
// that a replayed request is refused by every service alike. The package
// keeps its records in a store.Store, so either store (badger or
// PostgreSQL) holds them.
package principal

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Roles and scopes of registered principals. The judgment service reads
// all of them; the market and the court need ScopeWrite for a mutation.
const (
	RoleRequester = "requester"
	RoleSolver    = "solver"
	RoleOperator  = "operator"

	ScopeRead    = "economic:read"
	ScopePrivate = "economic:private"
	ScopeWrite   = "economic:write"
)

var (
	validRoles  = []string{RoleRequester, RoleSolver, RoleOperator}
	validScopes = []string{ScopeRead, ScopePrivate, ScopeWrite}
)

// Error codes.
const (
	ECodeInvalidPrincipal  = "invalid_principal"
	ECodePrincipalExists   = "principal_exists"
	ECodePrincipalNotFound = "principal_not_found"
	ECodeNonceReplayed     = "nonce_replayed"
	ECodeInvalidAPIKey     = "invalid_api_key"
	ECodeAPIKeyNotFound    = "api_key_not_found"
)

// Key prefixes; storage/doc.go lists them. The registered keys and nonces
// keep the prefixes the judgment service gave them, so that stores written
// before this package read the same.
const (
	keyPrincipal = "matters/principal/" // <key id, escaped> -> Principal
	keyNonce     = "matters/nonce/"     // <key id, escaped>/<nonce, escaped> -> created (RFC 3339)
	keyNonceAt   = "matters/nonce-at/"  // <created unix seconds:020d>/<nonce key suffix> -> "" (nonces by age, for pruning)
	keyAPIKey    = "principal/apikey/"  // <api key id> -> APIKey
)

// Principal is a registered signing key: who may call, in which tenant,
// with which roles and scopes.
type Principal struct {
	KeyID     string    `json:"key_id"`
	PublicKey string    `json:"public_key"` // standard base64 of the raw 32-byte Ed25519 key
	Tenant    string    `json:"tenant_id"`
	Roles     []string  `json:"roles"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Active reports whether p is not revoked.
func (p Principal) Active() bool { return p.RevokedAt.IsZero() }

// Has reports whether p holds role.
func (p Principal) Has(role string) bool { return slices.Contains(p.Roles, role) }

// Can reports whether p holds scope.
func (p Principal) Can(scope string) bool { return slices.Contains(p.Scopes, scope) }

func invalidPrincipal(format string, args ...any) error {
	return fault.New(fault.Invalid, ECodeInvalidPrincipal, format, args...)
}

// Validate checks p's fields: ids of package ident's grammar, a key id
// that is not a did:key (a did:key needs no registration) and holds no
// quotes or backslashes (it is written into a signature's keyid), an
// Ed25519 public key, known roles and scopes.
//
// # Errors
//
// invalid_principal (400).
func (p Principal) Validate() error {
	if err := validID("key_id", p.KeyID); err != nil {
		return err
	}
	if err := checkNFC("key_id", p.KeyID); err != nil {
		return err
	}
	if strings.ContainsAny(p.KeyID, "\"\\") {
		return invalidPrincipal("key_id must not hold quotes or backslashes")
	}
	if IsDIDKey(p.KeyID) {
		return invalidPrincipal("key_id must not be a did:key: a did:key agent signs with its own key and needs no registration")
	}
	if _, err := receipt.ParsePublicKey(p.PublicKey); err != nil {
		return invalidPrincipal("public_key must be the base64 of a raw 32-byte Ed25519 key")
	}
	if err := validID("tenant", p.Tenant); err != nil {
		return err
	}
	if len(p.Roles) == 0 || len(p.Scopes) == 0 {
		return invalidPrincipal("a principal needs at least one role and one scope")
	}
	for _, r := range p.Roles {
		if !slices.Contains(validRoles, r) {
			return invalidPrincipal("unknown role %q: use %s", r, strings.Join(validRoles, ", "))
		}
	}
	for _, sc := range p.Scopes {
		if !slices.Contains(validScopes, sc) {
			return invalidPrincipal("unknown scope %q: use %s", sc, strings.Join(validScopes, ", "))
		}
	}
	return nil
}

func validID(field, v string) error {
	if v == "" {
		return invalidPrincipal("%s is required and must not be empty", field)
	}
	if err := ident.ID(field, ECodeInvalidPrincipal, v); err != nil {
		return err
	}
	return nil
}

// IsDIDKey reports whether id is a did:key identifier (of any key type;
// DIDKeyPublic says whether it is an Ed25519 one).
func IsDIDKey(id string) bool { return strings.HasPrefix(id, "did:key:") }

// DIDKeyPublic returns the Ed25519 public key a did:key agent id names.
// A fragment (did:key:z…#z…, a verification method) is allowed when it
// names the same key.
func DIDKeyPublic(id string) (ed25519.PublicKey, error) {
	did, frag, _ := strings.Cut(id, "#")
	pub, err := receipt.ParseDIDKey(did)
	if err != nil {
		return nil, err
	}
	if frag != "" && "did:key:"+frag != did {
		return nil, fmt.Errorf("principal: %s: the fragment names another key", id)
	}
	return pub, nil
}

// DIDKeyAgent is the agent id of a did:key keyid: the DID without a
// verification method fragment.
func DIDKeyAgent(keyID string) string {
	did, _, _ := strings.Cut(keyID, "#")
	return did
}

// APIKey is an issued bearer key, as stored: the secret itself is never
// kept, only its SHA-256.
type APIKey struct {
	ID        string    `json:"api_key_id"`
	Agent     string    `json:"agent"`
	Hash      string    `json:"sha256"` // hex SHA-256 of the whole token
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Active reports whether k is not revoked.
func (k APIKey) Active() bool { return k.RevokedAt.IsZero() }

// TokenPrefix starts every API key's token: assay_ak_<id>_<secret>, id 12
// hex digits, secret 64 (256 random bits).
const TokenPrefix = "assay_ak_"

// ParseToken splits a token into its key id and reports whether it has
// the shape of an API key's.
func ParseToken(token string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 12 || len(secret) != 64 || !isHex(id) || !isHex(secret) {
		return "", false
	}
	return id, true
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Registry keeps the principals, API keys and used nonces in a store.
// It is safe for concurrent use.
type Registry struct {
	st  store.Store
	now func() time.Time
	// pruning is held by the one UseNonce that prunes stale nonces.
	pruning sync.Mutex
}

// New returns a Registry over st; now is its clock (time.Now when nil).
func New(st store.Store, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{st: st, now: now}
}

// Now reads the registry's clock: signatures' freshness is checked
// against it.
func (r *Registry) Now() time.Time { return r.now() }

func principalKey(keyID string) string { return keyPrincipal + url.PathEscape(keyID) }
func apiKeyKey(id string) string       { return keyAPIKey + url.PathEscape(id) }

// Get reads a principal, revoked or not, in tx.
//
// # Errors
//
// principal_not_found (404).
func Get(tx store.Tx, keyID string) (Principal, error) {
	var p Principal
	err := store.GetJSON(tx, principalKey(keyID), &p)
	if errors.Is(err, store.ErrNotFound) {
		return p, fault.New(fault.NotFound, ECodePrincipalNotFound, "no principal %q", keyID)
	}
	return p, err
}

// Add registers p. A revoked key id is never reused, and no id is
// registered that can be taken for one registered already (Canonical).
//
// # Errors
//
// invalid_principal (400: also a key id not in Unicode NFC);
// principal_exists, principal_confusable (409).
func (r *Registry) Add(ctx context.Context, p Principal) (Principal, error) {
	if err := p.Validate(); err != nil {
		return Principal{}, err
	}
	p.CreatedAt = r.now().UTC()
	p.RevokedAt = time.Time{}
	err := r.st.Update(ctx, func(tx store.Tx) error {
		if _, err := Get(tx, p.KeyID); err == nil {
			return fault.New(fault.Conflict, ECodePrincipalExists, "principal %q exists; revoke it and add another key id", p.KeyID)
		} else if fault.CodeOf(err) != ECodePrincipalNotFound {
			return err
		}
		if err := unconfusable(tx, p.KeyID); err != nil {
			return err
		}
		return store.SetJSON(tx, principalKey(p.KeyID), p)
	})
	return p, err
}

// Principal returns a principal, revoked or not.
//
// # Errors
//
// principal_not_found (404).
func (r *Registry) Principal(ctx context.Context, keyID string) (Principal, error) {
	var p Principal
	err := r.st.View(ctx, func(tx store.Tx) error {
		var err error
		p, err = Get(tx, keyID)
		return err
	})
	return p, err
}

// Principals lists every principal by key id.
func (r *Registry) Principals(ctx context.Context) ([]Principal, error) {
	var out []Principal
	err := r.st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		return tx.Scan(keyPrincipal, false, func(_ string, v []byte) error {
			var p Principal
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// Revoke revokes a principal: its signatures are refused from now.
//
// # Errors
//
// principal_not_found (404).
func (r *Registry) Revoke(ctx context.Context, keyID string) (Principal, error) {
	var p Principal
	err := r.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if p, err = Get(tx, keyID); err != nil {
			return err
		}
		if p.RevokedAt.IsZero() {
			p.RevokedAt = r.now().UTC()
		}
		return store.SetJSON(tx, principalKey(keyID), p)
	})
	return p, err
}

// IssueAPIKey issues a bearer key for agent and returns its record and
// its token, which is shown this once: only its SHA-256 is kept.
//
// # Errors
//
// invalid_api_key (400) for an agent id outside package ident's grammar
// or not in Unicode NFC; principal_confusable (409) for an agent that can
// be taken for another registered id.
func (r *Registry) IssueAPIKey(ctx context.Context, agent string) (APIKey, string, error) {
	if err := ident.ID("agent", ECodeInvalidAPIKey, agent); err != nil {
		return APIKey{}, "", err
	}
	if !norm.NFC.IsNormalString(agent) {
		return APIKey{}, "", fault.New(fault.Invalid, ECodeInvalidAPIKey, "agent must be in Unicode NFC (composed) form")
	}
	var raw [38]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return APIKey{}, "", err
	}
	id, secret := hex.EncodeToString(raw[:6]), hex.EncodeToString(raw[6:])
	token := TokenPrefix + id + "_" + secret
	k := APIKey{ID: id, Agent: agent, Hash: hashHex(token), CreatedAt: r.now().UTC()}
	err := r.st.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(apiKeyKey(id)); err == nil {
			return fmt.Errorf("principal: api key id %s drawn twice", id)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := unconfusable(tx, agent); err != nil {
			return err
		}
		return store.SetJSON(tx, apiKeyKey(id), k)
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return k, token, nil
}

func getAPIKey(tx store.Tx, id string) (APIKey, error) {
	var k APIKey
	err := store.GetJSON(tx, apiKeyKey(id), &k)
	if errors.Is(err, store.ErrNotFound) {
		return k, fault.New(fault.NotFound, ECodeAPIKeyNotFound, "no api key %q", id)
	}
	return k, err
}

// APIKeys lists every issued API key by id (their hashes, never secrets).
func (r *Registry) APIKeys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	err := r.st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		return tx.Scan(keyAPIKey, false, func(_ string, v []byte) error {
			var k APIKey
			if err := json.Unmarshal(v, &k); err != nil {
				return err
			}
			out = append(out, k)
			return nil
		})
	})
	return out, err
}

// RevokeAPIKey revokes an API key: it is refused from now.
//
// # Errors
//
// api_key_not_found (404).
func (r *Registry) RevokeAPIKey(ctx context.Context, id string) (APIKey, error) {
	var k APIKey
	err := r.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if k, err = getAPIKey(tx, id); err != nil {
			return err
		}
		if k.RevokedAt.IsZero() {
			k.RevokedAt = r.now().UTC()
		}
		return store.SetJSON(tx, apiKeyKey(id), k)
	})
	return k, err
}

// APIKeyOf returns the active API key whose token this is, comparing
// hashes in constant time. ok is false for a token that is not an API
// key's, an unknown one, a revoked one or a wrong secret: the caller is
// told no more than that.
func (r *Registry) APIKeyOf(ctx context.Context, token string) (k APIKey, ok bool, err error) {
	id, shaped := ParseToken(token)
	if !shaped {
		return APIKey{}, false, nil
	}
	err = r.st.View(ctx, func(tx store.Tx) error {
		k, err = getAPIKey(tx, id)
		return err
	})
	if fault.CodeOf(err) == ECodeAPIKeyNotFound {
		return APIKey{}, false, nil
	} else if err != nil {
		return APIKey{}, false, err
	}
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hashHex(token))) != 1 || !k.Active() {
		return APIKey{}, false, nil
	}
	return k, true, nil
}
