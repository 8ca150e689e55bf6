package matters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Principal is a registered signing key: who may call the private API, in
// which tenant, with which roles and scopes.
type Principal struct {
	KeyID     string    `json:"key_id"`
	PublicKey string    `json:"public_key"` // standard base64 of the raw 32-byte Ed25519 key
	Tenant    string    `json:"tenant_id"`
	Roles     []string  `json:"roles"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Principal errors' codes.
const (
	ECodeInvalidPrincipal  = "invalid_principal"
	ECodePrincipalExists   = "principal_exists"
	ECodePrincipalNotFound = "principal_not_found"
	ECodeNonceReplayed     = "nonce_replayed"
)

var (
	validRoles  = []string{RoleRequester, RoleSolver, RoleOperator}
	validScopes = []string{ScopeRead, ScopePrivate, ScopeWrite}
)

// Actor is the principal as the actor of a call.
func (p Principal) actor() Actor {
	return Actor{Tenant: p.Tenant, KeyID: p.KeyID, Roles: p.Roles, Scopes: p.Scopes}
}

// Actor returns the principal as the actor of a call.
func (p Principal) Actor() Actor { return p.actor() }

func (p Principal) validate() error {
	if err := validID("key_id", p.KeyID); err != nil {
		return fault.New(fault.Invalid, ECodeInvalidPrincipal, "%s", fault.MessageOf(err))
	}
	if strings.ContainsAny(p.KeyID, "\"\\") {
		return fault.New(fault.Invalid, ECodeInvalidPrincipal, "key_id must not hold quotes or backslashes")
	}
	if _, err := receipt.ParsePublicKey(p.PublicKey); err != nil {
		return fault.New(fault.Invalid, ECodeInvalidPrincipal, "public_key must be the base64 of a raw 32-byte Ed25519 key")
	}
	if err := validID("tenant", p.Tenant); err != nil {
		return fault.New(fault.Invalid, ECodeInvalidPrincipal, "%s", fault.MessageOf(err))
	}
	if len(p.Roles) == 0 || len(p.Scopes) == 0 {
		return fault.New(fault.Invalid, ECodeInvalidPrincipal, "a principal needs at least one role and one scope")
	}
	for _, r := range p.Roles {
		if !slices.Contains(validRoles, r) {
			return fault.New(fault.Invalid, ECodeInvalidPrincipal, "unknown role %q: use %s", r, strings.Join(validRoles, ", "))
		}
	}
	for _, sc := range p.Scopes {
		if !slices.Contains(validScopes, sc) {
			return fault.New(fault.Invalid, ECodeInvalidPrincipal, "unknown scope %q: use %s", sc, strings.Join(validScopes, ", "))
		}
	}
	return nil
}

func getPrincipal(tx store.Tx, keyID string) (Principal, error) {
	var p Principal
	err := store.GetJSON(tx, principalKey(keyID), &p)
	if errors.Is(err, store.ErrNotFound) {
		return p, fault.New(fault.NotFound, ECodePrincipalNotFound, "no principal %q", keyID)
	}
	return p, err
}

// AddPrincipal registers p. A revoked key id is never reused.
//
// # Errors
//
// invalid_principal (400); principal_exists (409).
func (s *Service) AddPrincipal(ctx context.Context, p Principal) (Principal, error) {
	if err := p.validate(); err != nil {
		return Principal{}, err
	}
	p.CreatedAt = s.now().UTC()
	p.RevokedAt = time.Time{}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		if _, err := getPrincipal(tx, p.KeyID); err == nil {
			return fault.New(fault.Conflict, ECodePrincipalExists, "principal %q exists; revoke it and add another key id", p.KeyID)
		} else if fault.CodeOf(err) != ECodePrincipalNotFound {
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
func (s *Service) Principal(ctx context.Context, keyID string) (Principal, error) {
	var p Principal
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		p, err = getPrincipal(tx, keyID)
		return err
	})
	return p, err
}

// Principals lists every principal by key id.
func (s *Service) Principals(ctx context.Context) ([]Principal, error) {
	var out []Principal
	err := s.st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		return tx.Scan(keyPrincipal, false, func(_ string, v []byte) error {
			var p Principal
			if err := jsonUnmarshal(v, &p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// RevokePrincipal revokes a principal: its signatures are refused from now.
//
// # Errors
//
// principal_not_found (404).
func (s *Service) RevokePrincipal(ctx context.Context, keyID string) (Principal, error) {
	var p Principal
	err := s.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if p, err = getPrincipal(tx, keyID); err != nil {
			return err
		}
		if p.RevokedAt.IsZero() {
			p.RevokedAt = s.now().UTC()
		}
		return store.SetJSON(tx, principalKey(keyID), p)
	})
	return p, err
}

// MaxClockSkew bounds how far a signature's created may be from the
// service's clock, either way. A nonce whose created is older than twice
// that can never be replayed (its signature is refused as stale), so
// UseNonce prunes it.
const MaxClockSkew = 5 * time.Minute

// MaxNoncePrune bounds how many stale nonces one UseNonce deletes.
const MaxNoncePrune = 64

// UseNonce records that a principal's signature used nonce, durably, and
// refuses a nonce that was used before. In the same transaction it deletes
// up to MaxNoncePrune nonces whose created is more than 2×MaxClockSkew
// before the service's clock, oldest first, scanning the by-age index only
// up to the first one still kept; one caller prunes at a time, so that
// concurrent signatures do not contend for the same old keys.
//
// # Errors
//
// nonce_replayed (401).
func (s *Service) UseNonce(ctx context.Context, keyID, nonce string, created time.Time) error {
	prune := s.pruning.TryLock()
	if prune {
		defer s.pruning.Unlock()
	}
	return s.st.Update(ctx, func(tx store.Tx) error {
		k := nonceKey(keyID, nonce)
		if _, err := tx.Get(k); err == nil {
			return fault.New(fault.Unauthorized, ECodeNonceReplayed, "the signature's nonce was already used; sign each request with a fresh nonce")
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if prune {
			if err := pruneNonces(tx, s.now().Add(-2*MaxClockSkew)); err != nil {
				return err
			}
		}
		if err := tx.Set(nonceAtKey(created, keyID, nonce), nil); err != nil {
			return err
		}
		return tx.Set(k, []byte(created.UTC().Format(time.RFC3339)))
	})
}

// pruneNonces deletes up to MaxNoncePrune nonces created before cutoff.
func pruneNonces(tx store.Tx, cutoff time.Time) error {
	bound := fmt.Sprintf("%s%020d/", keyNonceAt, max(cutoff.Unix(), 0))
	var stale []string
	err := tx.Scan(keyNonceAt, false, func(k string, _ []byte) error {
		if k >= bound || len(stale) == MaxNoncePrune {
			return store.ErrStop
		}
		stale = append(stale, k)
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrStop) {
		return err
	}
	for _, k := range stale {
		rest := strings.TrimPrefix(k, keyNonceAt)
		_, suffix, _ := strings.Cut(rest, "/")
		if err := tx.Delete(keyNonce + suffix); err != nil {
			return err
		}
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
