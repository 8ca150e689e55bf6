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
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
)

// MattersAuth is how the judgment routes authenticate callers.
type MattersAuth string

// The modes. Signed is the default: RFC 9421 Ed25519 signatures by
// registered principals. Open takes identities from the body, for local use.
const (
	MattersSigned MattersAuth = "signed"
	MattersOpen   MattersAuth = "open"
)

// MaxClockSkew bounds how far a signature's created may be from the
// server's clock, either way. The judgment service prunes nonces older
// than twice this, which the bound makes safe.
const MaxClockSkew = matters.MaxClockSkew

// The judgment routes' own auth codes (401).
const (
	codeSignatureMissing   = "signature_missing"
	codeSignatureMalformed = "signature_malformed"
	codeSignatureExpired   = "signature_expired"
	codeSignatureInvalid   = "signature_invalid"
	codeUnknownKey         = "unknown_key"
	codeDigestMismatch     = "content_digest_mismatch"
)

// requiredComponents must be covered by every signature.
var requiredComponents = []string{"@method", "@path", "@authority", "content-digest"}

const mattersBase = "/api/v1/economic/matters"

// mattersRoutes registers the judgment service's routes when it is
// configured.
func (s *server) mattersRoutes(app *fiber.App) {
	if s.cfg.Matters == nil {
		return
	}
	// before the group, so that a bare GET needs no signature
	s.hints(app, mattersBase, func(*route) bool { return true })
	g := app.Group(mattersBase, s.mattersAuth)
	reg := s.router(g, mattersBase)
	m := s.cfg.Matters
	reg.add("POST", "/open", matterMutation(s, fieldsOf[matters.OpenRequest](), func(r *matters.OpenRequest) *string { return &r.IdempotencyKey }, m.Open))
	reg.add("POST", "/assign", matterMutation(s, fieldsOf[matters.AssignRequest](), func(r *matters.AssignRequest) *string { return &r.IdempotencyKey }, m.Assign))
	reg.add("POST", "/accept", matterMutation(s, fieldsOf[matters.AcceptRequest](), func(r *matters.AcceptRequest) *string { return &r.IdempotencyKey }, m.Accept))
	reg.add("POST", "/verdict", matterMutation(s, fieldsOf[matters.VerdictRequest](), func(r *matters.VerdictRequest) *string { return &r.IdempotencyKey }, m.Verdict))
	reg.add("POST", "/settle", matterMutation(s, fieldsOf[matters.SettleRequest](), func(r *matters.SettleRequest) *string { return &r.IdempotencyKey }, m.Settle))
	reg.add("POST", "/dispute", matterMutation(s, fieldsOf[matters.DisputeRequest](), func(r *matters.DisputeRequest) *string { return &r.IdempotencyKey }, m.Dispute))
	reg.add("POST", "/tick", matterMutation(s, fieldsOf[matters.TickRequest](), func(r *matters.TickRequest) *string { return &r.IdempotencyKey }, m.Tick))
	reg.add("GET", "/", s.matterList(false))
	reg.add("GET", "/all", s.matterList(true))
	reg.add("GET", "/{id}", s.matterGet)
	reg.add("GET", "/{id}/receipts", s.matterReceipts)
}

func unauthorized(code, format string, args ...any) error {
	return fault.New(fault.Unauthorized, code, format, args...)
}

// mattersAuth authenticates the caller and leaves its matters.Actor in
// c.Locals("actor").
func (s *server) mattersAuth(c *fiber.Ctx) error {
	if s.cfg.MattersAuth == MattersOpen {
		c.Locals("actor", matters.OpenActor())
		return c.Next()
	}
	a, err := s.verifySignature(c)
	if err != nil {
		c.Set(fiber.HeaderWWWAuthenticate, `Signature realm="assay-matters"`)
		return err
	}
	c.Locals("actor", a)
	return c.Next()
}

func (s *server) verifySignature(c *fiber.Ctx) (matters.Actor, error) {
	in, sigField := c.Get("Signature-Input"), c.Get("Signature")
	if in == "" || sigField == "" {
		return matters.Actor{}, unauthorized(codeSignatureMissing,
			`sign the request (RFC 9421, Ed25519) covering ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce and alg="ed25519"`)
	}
	p, sig, err := httpsig.Parse(in, sigField, "")
	if err != nil {
		return matters.Actor{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
	}
	for _, rc := range requiredComponents {
		if !p.Covers(rc) {
			return matters.Actor{}, unauthorized(codeSignatureMalformed, "the signature must cover %s", rc)
		}
	}
	switch {
	case p.KeyID == "" || p.Nonce == "" || p.Created == 0:
		return matters.Actor{}, unauthorized(codeSignatureMalformed, "the signature needs the parameters created, keyid and nonce")
	case p.Alg != "" && p.Alg != "ed25519":
		return matters.Actor{}, unauthorized(codeSignatureMalformed, `alg must be "ed25519"`)
	case len(p.Nonce) > 128:
		return matters.Actor{}, unauthorized(codeSignatureMalformed, "nonce is longer than 128 bytes")
	}
	now := s.cfg.Matters.Now()
	created := time.Unix(p.Created, 0)
	if d := now.Sub(created); d > MaxClockSkew || d < -MaxClockSkew {
		return matters.Actor{}, unauthorized(codeSignatureExpired, "created is %s from the server's clock; at most %s either way", d.Round(time.Second), MaxClockSkew)
	}
	if p.Expires != 0 && !now.Before(time.Unix(p.Expires, 0)) {
		return matters.Actor{}, unauthorized(codeSignatureExpired, "the signature expired")
	}
	ctx := c.UserContext()
	pr, err := s.cfg.Matters.Principal(ctx, p.KeyID)
	if fault.CodeOf(err) == matters.ECodePrincipalNotFound || (err == nil && !pr.RevokedAt.IsZero()) {
		return matters.Actor{}, unauthorized(codeUnknownKey, "keyid %q is not an active principal", p.KeyID)
	} else if err != nil {
		return matters.Actor{}, err
	}
	pub, err := receipt.ParsePublicKey(pr.PublicKey)
	if err != nil {
		return matters.Actor{}, err
	}
	if err := httpsig.CheckContentDigest(c.Get("Content-Digest"), c.Request().Body()); err != nil {
		return matters.Actor{}, unauthorized(codeDigestMismatch, "Content-Digest must be sha-256=:<base64 of the body's SHA-256>: and match the body")
	}
	req := c.Request()
	// fasthttp's PathOriginal has no query string: take it apart, as
	// RFC 9421's @query covers it.
	path, _, _ := strings.Cut(string(req.URI().PathOriginal()), "?")
	query := string(req.URI().QueryString())
	msg := httpsig.Message{
		Method: c.Method(), Authority: string(req.Host()), Path: path, Query: query,
		Scheme: c.Protocol(),
		Header: func(n string) []string {
			var vs []string
			for _, v := range req.Header.PeekAll(n) {
				vs = append(vs, string(v))
			}
			return vs
		},
	}
	if err := httpsig.Verify(ed25519.PublicKey(pub), msg, p, sig); err != nil {
		if errors.Is(err, httpsig.ErrNoComponent) || errors.Is(err, httpsig.ErrMalformed) {
			return matters.Actor{}, unauthorized(codeSignatureMalformed, "%s", strings.TrimPrefix(err.Error(), "httpsig: "))
		}
		return matters.Actor{}, unauthorized(codeSignatureInvalid, "the signature does not verify with keyid %q's public key", p.KeyID)
	}
	if err := s.cfg.Matters.UseNonce(ctx, p.KeyID, p.Nonce, created); err != nil {
		return matters.Actor{}, err
	}
	return pr.Actor(), nil
}

func actorOf(c *fiber.Ctx) matters.Actor {
	a, _ := c.Locals("actor").(matters.Actor)
	return a
}

// matterBody decodes a judgment mutation's body into v and returns the
// Idempotency-Key header, which the body's idempotency_key may also carry.
func (s *server) matterBody(c *fiber.Ctx, v any, fields string) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decode(b, v, fields)
}

// idemKey merges the Idempotency-Key header into the body's key.
func idemKey(c *fiber.Ctx, key *string) error {
	h := c.Get("Idempotency-Key")
	switch {
	case h == "":
	case *key == "":
		*key = h
	case *key != h:
		return fault.New(fault.Invalid, matters.ECodeInvalidIdemKey, "the Idempotency-Key header and idempotency_key differ; send one")
	}
	return nil
}

// matterMutation is the handler of a judgment mutation: the body decoded
// into a Req, the Idempotency-Key header merged into the body's key (key
// says where Req holds it), and do's reply to the caller (actorOf).
func matterMutation[Req any](s *server, fields string, key func(*Req) *string, do func(context.Context, matters.Actor, Req) (matters.Reply, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req Req
		if err := s.matterBody(c, &req, fields); err != nil {
			return err
		}
		if err := idemKey(c, key(&req)); err != nil {
			return err
		}
		r, err := do(c.UserContext(), actorOf(c), req)
		return reply(c, r, err)
	}
}

func (s *server) matterList(all bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		vs, err := s.cfg.Matters.List(c.UserContext(), actorOf(c), all)
		if err != nil {
			return err
		}
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v.Value()
		}
		return c.JSON(fiber.Map{"count": len(out), "matters": out})
	}
}

func (s *server) matterGet(c *fiber.Ctx) error {
	v, err := s.cfg.Matters.Get(c.UserContext(), actorOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"matter": v.Value()})
}

func (s *server) matterReceipts(c *fiber.Ctx) error {
	rs, err := s.cfg.Matters.Receipts(c.UserContext(), actorOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"count": len(rs), "receipts": rs})
}

// mattersFacts describes the judgment routes for /health and /agentfacts:
// where they are and how to authenticate, or "off".
func (s *server) mattersFacts(base string) any {
	if s.cfg.Matters == nil {
		return "off"
	}
	auth := s.cfg.MattersAuth
	if auth == "" {
		auth = MattersSigned
	}
	f := fiber.Map{
		"endpoint": base + mattersBase,
		"routes":   []string{"POST open", "POST assign", "POST accept", "POST verdict", "POST settle", "POST dispute", "POST tick", "GET /", "GET /all", "GET /{id}", "GET /{id}/receipts"},
		"auth":     string(auth),
		"docs":     base + "/skill.md#judgment-matters",
	}
	if auth == MattersSigned {
		f["signature"] = `RFC 9421 HTTP Message Signatures, Ed25519: cover ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce, alg="ed25519"; Content-Digest: sha-256=:<base64>: (RFC 9530); keyid is a principal an operator registered`
		f["max_clock_skew_seconds"] = int(MaxClockSkew.Seconds())
	}
	return f
}
