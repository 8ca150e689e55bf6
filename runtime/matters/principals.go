package matters

import (
	"context"
	"time"

	"github.com/assayhq/assay/runtime/principal"
)

// Principal is a registered signing key (package principal's, which every
// service shares): who may call the private API, in which tenant, with
// which roles and scopes.
type Principal = principal.Principal

// Principal errors' codes (package principal's).
const (
	ECodeInvalidPrincipal  = principal.ECodeInvalidPrincipal
	ECodePrincipalExists   = principal.ECodePrincipalExists
	ECodePrincipalNotFound = principal.ECodePrincipalNotFound
	ECodeNonceReplayed     = principal.ECodeNonceReplayed
)

// MaxClockSkew and MaxNoncePrune are package principal's bounds on
// signatures' created and on nonce pruning.
const (
	MaxClockSkew  = principal.MaxClockSkew
	MaxNoncePrune = principal.MaxNoncePrune
)

func actorOf(p Principal) Actor {
	return Actor{Tenant: p.Tenant, KeyID: p.KeyID, Roles: p.Roles, Scopes: p.Scopes}
}

// ActorOf returns a registered principal as the actor of a call.
func ActorOf(p Principal) Actor { return actorOf(p) }

// Registry returns the registry the service reads its principals from,
// over its own store and clock.
func (s *Service) Registry() *principal.Registry { return s.principals }

// AddPrincipal registers p (principal.Registry.Add).
func (s *Service) AddPrincipal(ctx context.Context, p Principal) (Principal, error) {
	return s.principals.Add(ctx, p)
}

// Principal returns a principal, revoked or not (principal.Registry.Principal).
func (s *Service) Principal(ctx context.Context, keyID string) (Principal, error) {
	return s.principals.Principal(ctx, keyID)
}

// Principals lists every principal by key id.
func (s *Service) Principals(ctx context.Context) ([]Principal, error) {
	return s.principals.Principals(ctx)
}

// RevokePrincipal revokes a principal (principal.Registry.Revoke).
func (s *Service) RevokePrincipal(ctx context.Context, keyID string) (Principal, error) {
	return s.principals.Revoke(ctx, keyID)
}

// UseNonce records a signature's nonce once (principal.Registry.UseNonce).
func (s *Service) UseNonce(ctx context.Context, keyID, nonce string, created time.Time) error {
	return s.principals.UseNonce(ctx, keyID, nonce, created)
}
