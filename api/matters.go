package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/matters"
)

// MattersAuth is how the judgment routes authenticate callers.
type MattersAuth string

// The modes. Signed is the default: RFC 9421 Ed25519 signatures by
// registered principals. Open takes identities from the body, for local use.
const (
	MattersSigned MattersAuth = "signed"
	MattersOpen   MattersAuth = "open"
)

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
	s.exchangeRoutes(reg)
	reg.add("GET", "/", s.matterList(false))
	reg.add("GET", "/all", s.matterList(true))
	reg.add("GET", "/{id}", s.matterGet)
	reg.add("GET", "/{id}/receipts", s.matterReceipts)
}

// mattersAuth authenticates the caller and leaves its matters.Actor in
// c.Locals("actor").
func (s *server) mattersAuth(c *fiber.Ctx) error {
	if s.cfg.MattersAuth == MattersOpen {
		c.Locals("actor", matters.OpenActor())
		return c.Next()
	}
	a, err := s.mattersActor(c)
	if err != nil {
		c.Set(fiber.HeaderWWWAuthenticate, `Signature realm="assay-matters"`)
		return err
	}
	c.Locals("actor", a)
	return c.Next()
}

// mattersActor is the actor of a signed judgment request: a registered
// principal, whose tenant, roles and scopes the service reads (a did:key
// has none of them, and an API key no signature).
func (s *server) mattersActor(c *fiber.Ctx) (matters.Actor, error) {
	reg, err := s.registry()
	if err != nil {
		return matters.Actor{}, err
	}
	caller, err := s.verifySignature(c, reg)
	if err != nil {
		return matters.Actor{}, err
	}
	if caller.Kind != CallerPrincipal {
		return matters.Actor{}, unauthorized(codeUnknownKey, "keyid %q is a did:key: the judgment routes take registered principals, which have a tenant and roles", caller.KeyID)
	}
	return matters.ActorOf(caller.Principal), nil
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
