package api

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
)

// This file is the one verification layer of every service: an RFC 9421
// signature (by a registered principal or a did:key agent) or a bearer
// API key makes a request's Caller; the services compare the Caller with
// the agent a request acts for.

// Auth is how a service authenticates the agents that act in it.
type Auth string

// The modes. Signed: an action must be made by the agent it names,
// proven by a signature or an API key. Open: identities are taken from
// the request, as the seed has them, for local use.
const (
	AuthSigned Auth = "signed"
	AuthOpen   Auth = "open"
)

// CallerKind is how a Caller proved who it is.
type CallerKind string

// The kinds of Caller.
const (
	CallerDIDKey    CallerKind = "did:key"   // signed with the key its did:key id names
	CallerPrincipal CallerKind = "principal" // signed with a registered key
	CallerAPIKey    CallerKind = "api_key"   // a bearer API key issued for one agent
)

// Caller is a request's authenticated agent.
type Caller struct {
	// Agent is the agent id the caller acts as: the did:key, the
	// registered key id, or the agent the API key was issued for.
	Agent string
	Kind  CallerKind
	// KeyID is the signature's keyid, or the API key's id.
	KeyID string
	// Principal is the registered key, when Kind is CallerPrincipal.
	Principal principal.Principal
}

// Actor names the caller in a receipt: "<kind>:<key id>", e.g.
// "api_key:3f2a…" or "principal:alice"; a did:key is its own name (the
// DID, without a verification method's fragment).
func (c Caller) Actor() string {
	if c.Kind == CallerDIDKey {
		return c.Agent
	}
	return string(c.Kind) + ":" + c.KeyID
}

// The verification layer's codes. The first six are the judgment routes'
// since they were signed (401).
const (
	codeSignatureMissing   = "signature_missing"       // 401: no signature (or API key) on a request that needs one
	codeSignatureMalformed = "signature_malformed"     // 401
	codeSignatureExpired   = "signature_expired"       // 401: created outside MaxClockSkew, or past expires
	codeSignatureInvalid   = "signature_invalid"       // 401
	codeUnknownKey         = "unknown_key"             // 401: keyid neither an active principal nor a did:key
	codeDigestMismatch     = "content_digest_mismatch" // 401
	codeAPIKeyInvalid      = "api_key_invalid"         // 401: a bearer API key that is unknown, revoked or wrong
	codeAgentMismatch      = "agent_mismatch"          // 403: authenticated as another agent than the one the request acts for
	codeInsufficientScope  = "insufficient_scope"      // 403: a registered principal without economic:write
)

// MaxClockSkew bounds how far a signature's created may be from the
// server's clock, either way. The registry prunes nonces older than twice
// this, which the bound makes safe.
const MaxClockSkew = principal.MaxClockSkew

// requiredComponents must be covered by every signature.
var requiredComponents = []string{"@method", "@path", "@authority", "content-digest"}

// signHow is what a refusal for want of a signature tells the caller.
const signHow = `sign the request (RFC 9421, Ed25519) covering ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce and alg="ed25519"; keyid is your did:key or a registered principal's key id`

func unauthorized(code, format string, args ...any) error {
	return fault.New(fault.Unauthorized, code, format, args...)
}

// registry is where principals, API keys and nonces are kept:
// Config.Principals, or the judgment service's.
func (s *server) registry() (*principal.Registry, error) {
	switch {
	case s.cfg.Principals != nil:
		return s.cfg.Principals, nil
	case s.cfg.Matters != nil:
		return s.cfg.Matters.Registry(), nil
	}
	return nil, errors.New("api: signed mode needs Config.Principals")
}

// authenticate makes the request's Caller from its credentials: an RFC
// 9421 signature, or an Authorization: Bearer API key. present is false
// when the request carries neither (a bearer token that is not shaped as
// an API key, such as the operator's, is not a credential here). Nonces
// and the clock are checked here, once, for every service.
func (s *server) authenticate(c *fiber.Ctx) (caller Caller, present bool, err error) {
	reg, err := s.registry()
	if err != nil {
		return Caller{}, false, err
	}
	if c.Get("Signature-Input") != "" || c.Get("Signature") != "" {
		caller, err := s.verifySignature(c, reg)
		return caller, true, err
	}
	token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || !strings.HasPrefix(token, principal.TokenPrefix) {
		return Caller{}, false, nil
	}
	k, ok, err := reg.APIKeyOf(c.UserContext(), token)
	if err != nil {
		return Caller{}, true, err
	}
	if !ok {
		return Caller{}, true, unauthorized(codeAPIKeyInvalid, "the bearer API key is unknown, revoked or wrong; an operator issues one with assay principals issue-key")
	}
	return Caller{Agent: k.Agent, Kind: CallerAPIKey, KeyID: k.ID}, true, nil
}

// verifySignature checks the request's RFC 9421 signature: its form, its
// freshness, its key (a registered principal's, active, or the one a
// did:key keyid names), the body's Content-Digest, the signature itself,
// and last its nonce, which it records.
func (s *server) verifySignature(c *fiber.Ctx, reg *principal.Registry) (Caller, error) {
	in, sigField := c.Get("Signature-Input"), c.Get("Signature")
	if in == "" || sigField == "" {
		return Caller{}, unauthorized(codeSignatureMissing, "send both Signature-Input and Signature: %s", signHow)
	}
	p, sig, err := httpsig.Parse(in, sigField, "")
	if err != nil {
		return Caller{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
	}
	for _, rc := range requiredComponents {
		if !p.Covers(rc) {
			return Caller{}, unauthorized(codeSignatureMalformed, "the signature must cover %s", rc)
		}
	}
	switch {
	case p.KeyID == "" || p.Nonce == "" || p.Created == 0:
		return Caller{}, unauthorized(codeSignatureMalformed, "the signature needs the parameters created, keyid and nonce")
	case p.Alg != "" && p.Alg != "ed25519":
		return Caller{}, unauthorized(codeSignatureMalformed, `alg must be "ed25519"`)
	case len(p.Nonce) > 128:
		return Caller{}, unauthorized(codeSignatureMalformed, "nonce is longer than 128 bytes")
	}
	now := reg.Now()
	created := time.Unix(p.Created, 0)
	if d := now.Sub(created); d > MaxClockSkew || d < -MaxClockSkew {
		return Caller{}, unauthorized(codeSignatureExpired, "created is %s from the server's clock; at most %s either way", d.Round(time.Second), MaxClockSkew)
	}
	if p.Expires != 0 && !now.Before(time.Unix(p.Expires, 0)) {
		return Caller{}, unauthorized(codeSignatureExpired, "the signature expired")
	}
	ctx := c.UserContext()
	caller, pub, err := signer(ctx, reg, p.KeyID)
	if err != nil {
		return Caller{}, err
	}
	if err := httpsig.CheckContentDigest(c.Get("Content-Digest"), c.Request().Body()); err != nil {
		return Caller{}, unauthorized(codeDigestMismatch, "Content-Digest must be sha-256=:<base64 of the body's SHA-256>: and match the body")
	}
	if err := httpsig.Verify(pub, message(c), p, sig); err != nil {
		if errors.Is(err, httpsig.ErrNoComponent) || errors.Is(err, httpsig.ErrMalformed) {
			return Caller{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
		}
		return Caller{}, unauthorized(codeSignatureInvalid, "the signature does not verify with keyid %q's public key", p.KeyID)
	}
	if err := reg.UseNonce(ctx, p.KeyID, p.Nonce, created); err != nil {
		return Caller{}, err
	}
	return caller, nil
}

// signer is the Caller a keyid names and its public key: the did:key's
// own, or an active registered principal's.
func signer(ctx context.Context, reg *principal.Registry, keyID string) (Caller, ed25519.PublicKey, error) {
	if principal.IsDIDKey(keyID) {
		pub, err := principal.DIDKeyPublic(keyID)
		if err != nil {
			return Caller{}, nil, unauthorized(codeUnknownKey, "keyid %q is not the did:key of an Ed25519 key", keyID)
		}
		return Caller{Agent: principal.DIDKeyAgent(keyID), Kind: CallerDIDKey, KeyID: keyID}, pub, nil
	}
	pr, err := reg.Principal(ctx, keyID)
	if fault.CodeOf(err) == principal.ECodePrincipalNotFound || (err == nil && !pr.Active()) {
		return Caller{}, nil, unauthorized(codeUnknownKey, "keyid %q is not an active principal (nor a did:key)", keyID)
	} else if err != nil {
		return Caller{}, nil, err
	}
	pub, err := receipt.ParsePublicKey(pr.PublicKey)
	if err != nil {
		return Caller{}, nil, err
	}
	return Caller{Agent: pr.KeyID, Kind: CallerPrincipal, KeyID: pr.KeyID, Principal: pr}, pub, nil
}

// message is the request as RFC 9421 sees it.
func message(c *fiber.Ctx) httpsig.Message {
	req := c.Request()
	// fasthttp's PathOriginal has no query string: take it apart, as
	// RFC 9421's @query covers it.
	path, _, _ := strings.Cut(string(req.URI().PathOriginal()), "?")
	return httpsig.Message{
		Method: c.Method(), Authority: string(req.Host()), Path: path, Query: string(req.URI().QueryString()),
		Scheme: c.Protocol(),
		Header: func(n string) []string {
			var vs []string
			for _, v := range req.Header.PeekAll(n) {
				vs = append(vs, string(v))
			}
			return vs
		},
	}
}

// callerKey holds a request's Caller: in c.Locals for the REST routes, and
// in the request's context for MCP's tools (fasthttp's user values are
// its context values).
type callerKey struct{}

// authenticated is the middleware of a service in signed mode: a request
// with credentials is verified, and its Caller kept for the handlers,
// which compare it with the agent they act for (actsFor); one without
// passes, for the reads and the operator's routes. realm names the
// service in the WWW-Authenticate challenge of a refusal.
func (s *server) authenticated(mode Auth, realm string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if mode != AuthSigned || c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead {
			return c.Next()
		}
		caller, present, err := s.authenticate(c)
		if err != nil {
			challenge(c, realm)
			return err
		}
		if present {
			keepCaller(c, caller)
		}
		return c.Next()
	}
}

// challenge is the WWW-Authenticate of a refusal: a signature, or a
// bearer API key.
func challenge(c *fiber.Ctx, realm string) {
	c.Set(fiber.HeaderWWWAuthenticate, `Signature realm="`+realm+`", Bearer realm="`+realm+`"`)
}

// keepCaller keeps the request's Caller for the handlers and the MCP
// tools, and its name for the services' receipts (principal.WithActor).
func keepCaller(c *fiber.Ctx, caller Caller) {
	c.Context().SetUserValue(callerKey{}, caller)
	c.SetUserContext(principal.WithActor(c.UserContext(), caller.Actor()))
}

// withCallerActor is ctx carrying the name of the Caller in it, for the
// receipts of an MCP tool's call.
func withCallerActor(ctx context.Context) context.Context {
	if c, ok := callerOf(ctx); ok {
		return principal.WithActor(ctx, c.Actor())
	}
	return ctx
}

// callerOf is the request's Caller, if authenticated says it has one.
func callerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// actsFor checks, in signed mode, that the request's Caller is agent:
// the agent the request spends, lists, withdraws, deactivates or
// challenges as. The Caller is in ctx (authenticated put it there).
//
// # Errors
//
// signature_missing (401) with no credentials; agent_mismatch (403) for
// another agent; insufficient_scope (403) for a registered principal
// without economic:write.
func actsFor(ctx context.Context, mode Auth, agent string) error {
	if mode != AuthSigned {
		return nil
	}
	caller, ok := callerOf(ctx)
	if !ok {
		return unauthorized(codeSignatureMissing, "this action is %q's: %s, or send Authorization: Bearer <API key issued for it>", agent, signHow)
	}
	if caller.Agent != agent {
		return fault.New(fault.Forbidden, codeAgentMismatch, "the request is authenticated as %q and acts for %q: only an agent acts for itself", caller.Agent, agent)
	}
	if caller.Kind == CallerPrincipal && !caller.Principal.Can(principal.ScopeWrite) {
		return fault.New(fault.Forbidden, codeInsufficientScope, "principal %q lacks the %s scope", caller.KeyID, principal.ScopeWrite)
	}
	return nil
}

// marketActsFor is actsFor for a market route, whose 401 carries the
// market's WWW-Authenticate challenge.
func marketActsFor(c *fiber.Ctx, mode Auth, agent string) error {
	err := actsFor(c.Context(), mode, agent)
	if fault.KindOf(err) == fault.Unauthorized {
		challenge(c, marketRealm)
	}
	return err
}

// The realms of the WWW-Authenticate challenges.
const (
	marketRealm = "assay-market"
	courtRealm  = "assay-court"
)

// depositsFor checks, in signed mode, that a dev-rail deposit into agent's
// wallet is the agent's own or the operator's (Authorization: Bearer
// <operator token>).
func (s *server) depositsFor(c *fiber.Ctx, mode Auth, agent string) error {
	if mode != AuthSigned {
		return nil
	}
	if _, ok := callerOf(c.Context()); !ok && s.cfg.OperatorToken != "" {
		if s.checkOperator(c.Get(fiber.HeaderAuthorization), marketOperator) == nil {
			return nil
		}
	}
	return marketActsFor(c, mode, agent)
}

// Party is who of a contract's two may make a court mutation.
type Party string

// The parties.
const (
	PartyBuyer  Party = "buyer"
	PartySeller Party = "seller"
)

// CourtParties says, by its route's last segment, who may make a
// contract's mutation when the court is signed (Config.CourtAuth): fund,
// accept and dispute are the buyer's, deliver the seller's. Creating a
// contract and reading stay open; resolve is the operator's.
var CourtParties = map[string]Party{"fund": PartyBuyer, "accept": PartyBuyer, "dispute": PartyBuyer, "deliver": PartySeller}

// courtAuth is the court's middleware (on /contracts). In signed mode, a
// mutation of a contract whose party can prove itself (a did:key, or a
// registered principal's key id) must be made by that party; a contract
// between other ids stays open, as the seed's court is.
func (s *server) courtAuth(c *fiber.Ctx) error {
	if s.cfg.CourtAuth != AuthSigned || c.Method() != fiber.MethodPost {
		return c.Next()
	}
	id, action, _ := strings.Cut(strings.TrimPrefix(c.Path(), "/contracts/"), "/")
	party, ok := CourtParties[action]
	if !ok || strings.Contains(action, "/") {
		return c.Next()
	}
	ct, err := s.cfg.Court.Get(c.UserContext(), id)
	if err != nil {
		return c.Next() // the route answers it (contract_not_found)
	}
	agent := ct.Buyer
	if party == PartySeller {
		agent = ct.Seller
	}
	if ok, err := s.provable(c.UserContext(), agent); err != nil {
		return err
	} else if !ok {
		return c.Next() // the seed's open court
	}
	caller, present, err := s.authenticate(c)
	if err == nil && present {
		keepCaller(c, caller)
		err = actsFor(c.Context(), AuthSigned, agent)
	} else if err == nil {
		err = unauthorized(codeSignatureMissing, "%s is contract %s's %s and can prove it: %s, or send Authorization: Bearer <API key issued for it>", agent, id, party, signHow)
	}
	if err != nil {
		if fault.KindOf(err) == fault.Unauthorized {
			challenge(c, courtRealm)
		}
		return err
	}
	return c.Next()
}

// provable reports whether agent can prove who it is: a did:key of an
// Ed25519 key, or a registered principal's key id (active or revoked: a
// revoked key's contracts are not opened to anyone).
func (s *server) provable(ctx context.Context, agent string) (bool, error) {
	if principal.IsDIDKey(agent) {
		_, err := principal.DIDKeyPublic(agent)
		return err == nil, nil
	}
	reg, err := s.registry()
	if err != nil {
		return false, err
	}
	_, err = reg.Principal(ctx, agent)
	if fault.CodeOf(err) == principal.ECodePrincipalNotFound {
		return false, nil
	}
	return err == nil, err
}

// RouteAuth is who may make a route's request in a signed mode: data for
// the route table and its documents. The checks themselves are the
// middleware above and the handlers' actsFor.
type RouteAuth string

// The kinds of route.
const (
	RouteOpen            RouteAuth = "open"              // anyone: reads, contract creation, fingerprints
	RouteAgent           RouteAuth = "agent"             // the agent the body's agent (or the path's {agent}) names
	RouteAgentOrOperator RouteAuth = "agent_or_operator" // the agent, or the operator's bearer token (dev-rail deposits)
	RouteParty           RouteAuth = "party"             // a contract's party (CourtParties), when the court is signed
	RouteOperator        RouteAuth = "operator"          // the operator's bearer token
	RoutePrincipal       RouteAuth = "principal"         // a registered principal's signature (judgment matters)
)

// RouteAuths are the mutating routes of the market and the court by
// "METHOD path" (fiber's path syntax), and the MCP tools by name, with who
// may make them; a route or tool not named is RouteOpen, and every
// judgment route is RoutePrincipal.
var RouteAuths = map[string]RouteAuth{
	"POST /market/listings":                RouteAgent,
	"POST /market/listings/:id/purchase":   RouteAgent,
	"POST /market/listings/:id/deactivate": RouteAgent,
	"POST /market/listings/:id/challenge":  RouteAgent,
	"POST /market/listings/:id/replay":     RouteAgent,
	"POST /market/wallets/:agent/withdraw": RouteAgent,
	"POST /market/wallets/:agent/deposit":  RouteAgentOrOperator,
	"POST /market/challenges/:id/resolve":  RouteOperator,
	"POST /market/tick":                    RouteOperator,
	"POST /market/clock":                   RouteOperator,
	"POST /contracts/:id/fund":             RouteParty,
	"POST /contracts/:id/accept":           RouteParty,
	"POST /contracts/:id/dispute":          RouteParty,
	"POST /contracts/:id/deliver":          RouteParty,
	"POST /contracts/:id/resolve":          RouteOperator,
	"tool purchase":                        RouteAgent,
	"tool publish_listing":                 RouteAgent,
	"tool deactivate_listing":              RouteAgent,
	"tool challenge_listing":               RouteAgent,
	"tool resolve_challenge":               RouteOperator,
}

// authFacts says, for /health and /agentfacts, how each service
// authenticates.
func (s *server) authFacts() map[string]any {
	mode := func(a Auth) string {
		if a == "" {
			a = AuthOpen
		}
		return string(a)
	}
	return map[string]any{
		"market": mode(s.cfg.MarketAuth),
		"court":  mode(s.cfg.CourtAuth),
		"how": `RFC 9421 HTTP Message Signatures, Ed25519: cover ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce, alg="ed25519"; ` +
			`keyid is your did:key (no registration) or a registered principal's key id; or Authorization: Bearer <API key> issued for your agent id`,
		"max_clock_skew_seconds": int(MaxClockSkew.Seconds()),
	}
}
