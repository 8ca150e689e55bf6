package matters

import (
	"context"
	"time"

	"github.com/assayhq/assay/runtime/fault"
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

func callerOf(p Principal) caller {
	return caller{Tenant: p.Tenant, KeyID: p.KeyID, Roles: p.Roles, Scopes: p.Scopes}
}

// ActorOf returns a registered principal as the actor of a call.
func ActorOf(p Principal) Actor { return principal.FromPrincipal(p) }

// ECodeUnknownKey is the code of a caller that is not a registered
// principal where the service is signed.
const ECodeUnknownKey = "unknown_key"

// Mode returns how the service authenticates callers.
func (s *Service) Mode() principal.Mode { return s.auth }

// caller decides who a is to the service: in open mode the open caller,
// whoever sent the request; in signed mode a registered principal, with
// its tenant, roles and scopes. A did:key or an API key has none of
// them.
//
// # Errors
//
// signature_missing (401: no signature, an API key or the operator's
// token), unknown_key (401: a did:key).
func (s *Service) caller(a Actor) (caller, error) {
	switch {
	case s.auth == principal.Open:
		return openCaller(), nil
	case a.Kind == principal.ByPrincipal:
		return callerOf(a.Principal), nil
	case a.Kind == principal.Anonymous || a.Kind == principal.ByOperator || a.Kind == principal.ByAPIKey:
		return caller{}, fault.New(fault.Unauthorized, principal.ECodeSignatureMissing,
			"the judgment routes are signed: %s; keyid is a principal an operator registered", principal.SignHow)
	}
	return caller{}, fault.New(fault.Unauthorized, ECodeUnknownKey,
		"%s is a %s: the judgment routes take registered principals, which have a tenant and roles", a.KeyID, a.Kind)
}

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

// writer is the caller of a call that writes: the caller a is, holding
// economic:write.
func (s *Service) writer(a Actor) (caller, error) {
	c, err := s.caller(a)
	if err != nil {
		return caller{}, err
	}
	return c, need(c, ScopeWrite)
}
