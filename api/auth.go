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
// signature (by a registered principal or a did:key agent), a bearer API
// key, or the operator's bearer token makes a request's principal.Actor;
// the services decide, from it, who may act on their objects.

// Auth is how a service authenticates the agents that act in it.
type Auth = principal.Mode

// The modes. Signed: an action must be made by the agent it names,
// proven by a signature or an API key. Open: identities are taken from
// the request, as the seed has them, for local use.
const (
	AuthSigned = principal.Signed
	AuthOpen   = principal.Open
)

// MattersAuth is how the judgment routes authenticate: the same modes.
type MattersAuth = principal.Mode

// The judgment routes' modes: signed (the default) or open.
const (
	MattersSigned = principal.Signed
	MattersOpen   = principal.Open
)

// The verification layer's codes. The first six are the judgment routes'
// since they were signed (401).
const (
	codeSignatureMissing   = principal.ECodeSignatureMissing  // 401: no signature (or API key) on a request that needs one
	codeSignatureMalformed = "signature_malformed"            // 401
	codeSignatureExpired   = "signature_expired"              // 401: created outside MaxClockSkew, or past expires
	codeSignatureInvalid   = "signature_invalid"              // 401
	codeUnknownKey         = "unknown_key"                    // 401: keyid neither an active principal nor a did:key
	codeDigestMismatch     = "content_digest_mismatch"        // 401
	codeAPIKeyInvalid      = "api_key_invalid"                // 401: a bearer API key that is unknown, revoked or wrong
	codeAgentMismatch      = principal.ECodeAgentMismatch     // 403: authenticated as another agent than the one the request acts for
	codeInsufficientScope  = principal.ECodeInsufficientScope // 403: a registered principal without economic:write
	codeWrongAuthority     = "authority_mismatch"             // 401: signed for another server (@authority not one of its public origins)
	codeNonceReplayed      = principal.ECodeNonceReplayed     // 401: the signature's nonce was used before
)

// MaxClockSkew bounds how far a signature's created may be from the
// server's clock, either way. The registry prunes nonces older than twice
// this, which the bound makes safe.
const MaxClockSkew = principal.MaxClockSkew

// requiredComponents must be covered by every signature.
var requiredComponents = []string{"@method", "@path", "@authority", "content-digest"}

// signHow is what a refusal for want of a signature tells the caller.
const signHow = principal.SignHow

func unauthorized(code, format string, args ...any) error {
	return fault.New(fault.Unauthorized, code, format, args...)
}

// authenticate makes the request's Actor from its credentials: an RFC
// 9421 signature; or an Authorization: Bearer that is the operator's
// token or an API key. A request with none is anonymous; a bearer token
// that is neither is no credential here (an operator's row refuses it).
// Any credential presented is verified, on every row, and a bad one
// refused: never ignored. Nonces and the clock are checked here, once,
// for every service.
func (s *server) authenticate(c *fiber.Ctx) (principal.Actor, error) {
	if c.Get("Signature-Input") != "" || c.Get("Signature") != "" {
		return s.verifySignature(c)
	}
	auth := c.Get(fiber.HeaderAuthorization)
	if s.isOperator(auth) {
		return principal.Operator(), nil
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || !strings.HasPrefix(token, principal.TokenPrefix) {
		return principal.Actor{}, nil
	}
	reg, err := s.identities()
	if err != nil {
		return principal.Actor{}, err
	}
	k, ok, err := reg.APIKeyOf(c.UserContext(), token)
	if err != nil {
		return principal.Actor{}, err
	}
	if !ok {
		return principal.Actor{}, unauthorized(codeAPIKeyInvalid, "the bearer API key is unknown, revoked or wrong; an operator issues one with assay principals issue-key")
	}
	return principal.Actor{Kind: principal.ByAPIKey, Agent: k.Agent, KeyID: k.ID}, nil
}

// identities is the registry signatures and API keys are checked against.
func (s *server) identities() (Identities, error) {
	if s.cfg.Identities == nil {
		return nil, errors.New("api: credentials to check and no Config.Identities to check them against")
	}
	return s.cfg.Identities, nil
}

// verifySignature checks the request's RFC 9421 signature: its form, its
// freshness, its key (a registered principal's, active, or the one a
// did:key keyid names), the body's Content-Digest, the signature itself,
// and last its nonce, which it records.
func (s *server) verifySignature(c *fiber.Ctx) (principal.Actor, error) {
	in, sigField := c.Get("Signature-Input"), c.Get("Signature")
	if in == "" || sigField == "" {
		return principal.Actor{}, unauthorized(codeSignatureMissing, "send both Signature-Input and Signature: %s", signHow)
	}
	reg, err := s.identities()
	if err != nil {
		return principal.Actor{}, err
	}
	p, sig, err := httpsig.Parse(in, sigField, "")
	if err != nil {
		return principal.Actor{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
	}
	for _, rc := range requiredComponents {
		if !p.Covers(rc) {
			return principal.Actor{}, unauthorized(codeSignatureMalformed, "the signature must cover %s", rc)
		}
	}
	switch {
	case p.KeyID == "" || p.Nonce == "" || p.Created == 0:
		return principal.Actor{}, unauthorized(codeSignatureMalformed, "the signature needs the parameters created, keyid and nonce")
	case p.Alg != "" && p.Alg != "ed25519":
		return principal.Actor{}, unauthorized(codeSignatureMalformed, `alg must be "ed25519"`)
	case len(p.Nonce) > 128:
		return principal.Actor{}, unauthorized(codeSignatureMalformed, "nonce is longer than 128 bytes")
	}
	now := reg.Now()
	created := time.Unix(p.Created, 0)
	if d := now.Sub(created); d > MaxClockSkew || d < -MaxClockSkew {
		return principal.Actor{}, unauthorized(codeSignatureExpired, "created is %s from the server's clock; at most %s either way", d.Round(time.Second), MaxClockSkew)
	}
	if p.Expires != 0 && !now.Before(time.Unix(p.Expires, 0)) {
		return principal.Actor{}, unauthorized(codeSignatureExpired, "the signature expired")
	}
	if !s.origins.has(string(c.Request().Host())) {
		return principal.Actor{}, unauthorized(codeWrongAuthority, "the signature's @authority %q is not one of this server's public origins (%s): a signature made for another server is not taken here", strings.ToValidUTF8(string(c.Request().Host()), "?"), s.origins)
	}
	ctx := c.UserContext()
	caller, pub, err := signer(ctx, reg, p.KeyID)
	if err != nil {
		return principal.Actor{}, err
	}
	if err := httpsig.CheckContentDigest(c.Get("Content-Digest"), c.Request().Body()); err != nil {
		return principal.Actor{}, unauthorized(codeDigestMismatch, "Content-Digest must be sha-256=:<base64 of the body's SHA-256>: and match the body")
	}
	if err := httpsig.Verify(pub, message(c), p, sig); err != nil {
		if errors.Is(err, httpsig.ErrNoComponent) || errors.Is(err, httpsig.ErrMalformed) {
			return principal.Actor{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
		}
		return principal.Actor{}, unauthorized(codeSignatureInvalid, "the signature does not verify with keyid %q's public key", p.KeyID)
	}
	if err := reg.UseNonce(ctx, p.KeyID, p.Nonce, created); err != nil {
		return principal.Actor{}, err
	}
	return caller, nil
}

// signer is the Actor a keyid names and its public key: the did:key's
// own, or an active registered principal's.
func signer(ctx context.Context, reg Identities, keyID string) (principal.Actor, ed25519.PublicKey, error) {
	if principal.IsDIDKey(keyID) {
		pub, err := principal.DIDKeyPublic(keyID)
		if err != nil {
			return principal.Actor{}, nil, unauthorized(codeUnknownKey, "keyid %q is not the did:key of an Ed25519 key", keyID)
		}
		return principal.Actor{Kind: principal.ByDIDKey, Agent: principal.DIDKeyAgent(keyID), KeyID: keyID}, pub, nil
	}
	pr, err := reg.Principal(ctx, keyID)
	if fault.CodeOf(err) == principal.ECodePrincipalNotFound || (err == nil && !pr.Active()) {
		return principal.Actor{}, nil, unauthorized(codeUnknownKey, "keyid %q is not an active principal (nor a did:key)", keyID)
	} else if err != nil {
		return principal.Actor{}, nil, err
	}
	pub, err := receipt.ParsePublicKey(pr.PublicKey)
	if err != nil {
		return principal.Actor{}, nil, err
	}
	return principal.FromPrincipal(pr), pub, nil
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

// challenge is the WWW-Authenticate of a refusal: a signature, or a
// bearer API key.
func challenge(c *fiber.Ctx, realm string) {
	c.Set(fiber.HeaderWWWAuthenticate, `Signature realm="`+realm+`", Bearer realm="`+realm+`"`)
}

// realms name each service in the WWW-Authenticate challenge of a 401.
var realms = map[string]string{svcCourt: "assay-court", svcMarket: "assay-market", svcMCP: "assay-market", svcMatters: "assay-matters",
	svcCheckers: "assay", svcReplays: "assay", svcReceipts: "assay", svcMeta: "assay", svcConsole: "assay"}

// RouteAuth is who may make a route's request in a signed mode: the
// route table's column. The pipeline checks the operator's rows; every
// other decision is the service's, from the Actor (principal.ActsFor and
// the services' own rules).
type RouteAuth string

// The kinds of route.
const (
	RouteOpen            RouteAuth = "open"              // anyone: reads, contract creation, fingerprints
	RouteAgent           RouteAuth = "agent"             // the agent the body's agent (or the path's {agent}) names
	RouteAgentOrOperator RouteAuth = "agent_or_operator" // the agent, or the operator's bearer token (dev-rail deposits)
	RouteParty           RouteAuth = "party"             // a contract's party, when the court is signed or the contract is in a backed currency
	RouteOperator        RouteAuth = "operator"          // the operator's bearer token
	RoutePrincipal       RouteAuth = "principal"         // a registered principal's signature (judgment matters)
)

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
		"market":         mode(s.marketMode()),
		"court":          mode(s.courtMode()),
		"public_origins": s.origins.list(),
		"how": `RFC 9421 HTTP Message Signatures, Ed25519: cover ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce, alg="ed25519"; ` +
			`keyid is your did:key (no registration) or a registered principal's key id; or Authorization: Bearer <API key> issued for your agent id`,
		"max_clock_skew_seconds": int(MaxClockSkew.Seconds()),
	}
}
