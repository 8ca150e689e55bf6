package principal

import (
	"context"

	"github.com/assayhq/assay/runtime/fault"
)

// Actor is who makes a request, as the transport authenticated it. It is
// the one type every service takes, explicitly, as the first argument
// after the context of every call a caller may or may not be allowed to
// make; each service decides, from it, who may act on its own objects.
// The zero Actor is anonymous: a request that proved nothing.
type Actor struct {
	// Kind is how the caller proved who it is.
	Kind Kind
	// Agent is the agent id the caller acts as: its did:key, a registered
	// key id, the agent an API key was issued for, or the agent a service
	// vouches for. Empty for the anonymous caller and the operator.
	Agent string
	// KeyID is the signature's keyid, the API key's id, or the name of
	// the service that vouches.
	KeyID string
	// Principal is the registered key (tenant, roles, scopes) when Kind
	// is ByPrincipal.
	Principal Principal
}

// Kind is how an Actor proved who it is.
type Kind string

// The kinds of Actor.
const (
	Anonymous   Kind = ""          // no credentials
	ByDIDKey    Kind = "did:key"   // signed with the key its did:key names
	ByPrincipal Kind = "principal" // signed with a registered key
	ByAPIKey    Kind = "api_key"   // a bearer API key issued for one agent
	ByOperator  Kind = "operator"  // the operator's bearer token
	// ByService is an agent another service of this server vouches for,
	// having authenticated it itself: the judgment exchange paying an
	// appeal fee from the appellant's wallet through the court.
	ByService Kind = "service"
)

// Operator is the Actor of a request made with the operator's token.
func Operator() Actor { return Actor{Kind: ByOperator} }

// Vouch is the Actor of agent as the service by vouches for it.
func Vouch(agent, by string) Actor { return Actor{Kind: ByService, Agent: agent, KeyID: by} }

// FromPrincipal is the Actor of a request signed by the registered key p.
func FromPrincipal(p Principal) Actor {
	return Actor{Kind: ByPrincipal, Agent: p.KeyID, KeyID: p.KeyID, Principal: p}
}

// IsOperator reports whether a is the operator.
func (a Actor) IsOperator() bool { return a.Kind == ByOperator }

// Is reports whether a proved it is agent (or a service vouches that it
// is): the one comparison of a caller with the agent a request acts for.
func (a Actor) Is(agent string) bool {
	return a.Kind != Anonymous && a.Kind != ByOperator && a.Agent != "" && a.Agent == agent
}

// Name names the actor in a receipt: a did:key is its own name (the DID,
// without a verification method's fragment); a registered key and an API
// key are "<kind>:<key id>", e.g. "principal:alice" or "api_key:3f2a…".
// The anonymous caller, the operator and an agent a service vouches for
// have none, so that what they do signs the same receipts as before
// actors were named.
func (a Actor) Name() string {
	switch a.Kind {
	case ByDIDKey:
		return a.Agent
	case ByPrincipal, ByAPIKey:
		return string(a.Kind) + ":" + a.KeyID
	}
	return ""
}

// Mode is how a service authenticates the agents that act in it.
type Mode string

// The modes. Signed: an action must be made by the agent it names, proven
// by a signature or an API key. Open: identities are taken from the
// request, as the seeds have them, for local use.
const (
	Signed Mode = "signed"
	Open   Mode = "open"
)

// The codes of a caller refused for who it is.
const (
	ECodeSignatureMissing  = "signature_missing"  // 401: no signature (or API key) on a request that needs one
	ECodeAgentMismatch     = "agent_mismatch"     // 403: authenticated as another agent than the one the request acts for
	ECodeInsufficientScope = "insufficient_scope" // 403: a registered principal without economic:write
)

// SignHow is what a refusal for want of a signature tells the caller.
const SignHow = `sign the request (RFC 9421, Ed25519) covering ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce and alg="ed25519"; keyid is your did:key or a registered principal's key id`

// ActsFor checks that a may act as agent: it proved it is agent, and, a
// registered principal, holds economic:write. It is the rule every
// service applies where an action is an agent's own.
//
// # Errors
//
// signature_missing (401) for a caller that proved nothing (or the
// operator, who is no agent); agent_mismatch (403) for another agent;
// insufficient_scope (403) for a principal without economic:write.
func ActsFor(a Actor, agent string) error {
	switch {
	case a.Kind == Anonymous || a.Kind == ByOperator:
		return fault.New(fault.Unauthorized, ECodeSignatureMissing, "this action is %q's: %s, or send Authorization: Bearer <API key issued for it>", agent, SignHow)
	case !a.Is(agent):
		return fault.New(fault.Forbidden, ECodeAgentMismatch, "the request is authenticated as %q and acts for %q: only an agent acts for itself", a.Agent, agent)
	case a.Kind == ByPrincipal && !a.Principal.Can(ScopeWrite):
		return fault.New(fault.Forbidden, ECodeInsufficientScope, "principal %q lacks the %s scope", a.KeyID, ScopeWrite)
	}
	return nil
}

// Provable reports whether agent can prove who it is: a did:key of an
// Ed25519 key, or a registered principal's key id (active or revoked: a
// revoked key's objects are not opened to anyone).
//
// # Errors
//
// A failed read of the registry: never a pass.
func (r *Registry) Provable(ctx context.Context, agent string) (bool, error) {
	if IsDIDKey(agent) {
		_, err := DIDKeyPublic(agent)
		return err == nil, nil
	}
	_, err := r.Principal(ctx, agent)
	if fault.CodeOf(err) == ECodePrincipalNotFound {
		return false, nil
	}
	return err == nil, err
}
