package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
)

// This file is the operation pipeline: every request to a row of the
// route table, over REST or MCP, goes the same way:
//
//  1. the route was matched exactly (fiber is case-sensitive and strict
//     about trailing slashes; a path not in the table is 404);
//  2. its credentials, if any, are verified into one principal.Actor
//     (auth.go): a bad one is refused, never ignored;
//  3. the row's rule is checked: an operator's row takes the operator;
//     every other decision on who may act on an object is the service's;
//  4. the request is counted in the row's rate class, per agent or, for
//     an anonymous caller (or credentials refused in 2 or 3), per client
//     address (limit.go): over its rate it is answered 429, before
//     anything else is read; a decision takes one of the server's places
//     for decisions at once, or is answered 503;
//  5. the body is read and decoded into the row's request type;
//  6. its idempotency is made (idem.New: the key in the scope of the
//     operation and the actor, the fingerprint of the operation and its
//     content), and a stored reply answered before any work;
//  7. the service is called with the actor, and its answer written.

// call is one request to an operation, as the transport read it.
type call struct {
	ctx   context.Context
	actor principal.Actor
	// params are the path's parameters, by the table's names.
	params map[string]string
	// query reads a query parameter ("" over MCP).
	query func(string) string
	// header reads a request header ("" over MCP).
	header func(string) string
	// setHeader sets a header field of the answer (nil over MCP, whose
	// answers have none).
	setHeader func(k, v string)
	body      []byte
	ik        idem.Request
	// pay is what the request presents to pay on a rail paid per
	// request (x402), on the rows that take it.
	pay market.Pay
}

func (c *call) param(name string) string { return c.params[name] }

// set sets a header field of c's answer, where it has header fields.
func (c *call) set(k, v string) {
	if c.setHeader != nil {
		c.setHeader(k, v)
	}
}

// answer is what an operation answers: a mutation's stored or fresh
// reply, or a read's value, written as JSON.
type answer struct {
	reply *idem.Reply
	value any
}

// operation runs a row's request; s is the server it runs on.
type operation func(s *server, c *call) (answer, error)

// mutate is the operation of a mutation: the body decoded into a Req
// (strictly: unknown fields refused), then fn's reply.
func mutate[Req any](fn func(s *server, c *call, req Req) (idem.Reply, error)) operation {
	fields := fieldsOf[Req]()
	return func(s *server, c *call) (answer, error) {
		var req Req
		if err := decode(c.body, &req, fields); err != nil {
			return answer{}, err
		}
		r, err := fn(s, c, req)
		return answer{reply: &r}, err
	}
}

// view is the operation of a read that takes no body.
func view[T any](fn func(s *server, c *call) (T, error)) operation {
	return func(s *server, c *call) (answer, error) {
		v, err := fn(s, c)
		return answer{value: v}, err
	}
}

// viewBody is the operation of a read that takes a JSON body (a search, a
// replay, a tick): the body decoded as a mutation's is, then fn's value.
func viewBody[Req, T any](fn func(s *server, c *call, req Req) (T, error)) operation {
	fields := fieldsOf[Req]()
	return func(s *server, c *call) (answer, error) {
		var req Req
		if err := decode(c.body, &req, fields); err != nil {
			return answer{}, err
		}
		v, err := fn(s, c, req)
		return answer{value: v}, err
	}
}

// idemRule is how a row takes an idempotency key.
type idemRule int

const (
	idemNone   idemRule = iota // none: a read, or an operation the seeds make none
	idemHeader                 // optional: the Idempotency-Key header, or MCP's idempotency_key argument
	// idemBody: the body's idempotency_key, which the Idempotency-Key
	// header may carry instead; the service requires it (judgment
	// matters, as the seed has it) and scopes it by its own actor.
	idemBody
)

// idempotency makes c's idem.Request for row r from key: idem.New over
// the row's operation (its method and table path, the same over REST and
// MCP), the actor, and the request's content (its path parameters and
// its body, in RFC 8785 form where it is JSON).
func idempotency(r *route, c *call, key string) (idem.Request, error) {
	if r.idem != idemHeader {
		return idem.Request{}, nil
	}
	return idem.New(r.key(), actorScope(c.actor), key, content(c))
}

// actorScope is what scopes an actor's keys: how it proved who it is,
// and as whom.
func actorScope(a principal.Actor) string {
	if a.Kind == principal.Anonymous {
		return ""
	}
	return string(a.Kind) + "\n" + a.Agent + "\n" + a.KeyID
}

// content is what a request asks, for its fingerprint: its path
// parameters and its body.
func content(c *call) []byte {
	names := make([]string, 0, len(c.params))
	for n := range c.params {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		b.WriteString(n + "=" + c.params[n] + "\n")
	}
	if body := bytes.TrimSpace(c.body); json.Valid(body) {
		if canon, err := receipt.CanonicalJSON(body); err == nil {
			body = canon
		}
		b.Write(body)
	} else {
		b.Write(c.body)
	}
	return b.Bytes()
}

// withBodyKey is a judgment body with the Idempotency-Key header merged
// into its idempotency_key: the header fills a body without one, and a
// header and a body that differ are refused. A body that is not a JSON
// object is left for the decoder to refuse.
func withBodyKey(body []byte, header string) ([]byte, error) {
	if header == "" {
		return body, nil
	}
	var m map[string]json.RawMessage
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		t = []byte("{}")
	}
	if json.Unmarshal(t, &m) != nil || m == nil {
		return body, nil
	}
	if k, ok := m["idempotency_key"]; ok {
		var s string
		if json.Unmarshal(k, &s) != nil || s != header {
			return nil, fault.New(fault.Invalid, matters.ECodeInvalidIdemKey, "the Idempotency-Key header and idempotency_key differ; send one")
		}
		return body, nil
	}
	m["idempotency_key"], _ = json.Marshal(header)
	return json.Marshal(m)
}

// allowed checks a row's rule on the actor: an operator's row takes the
// operator's bearer token, and a principal's (the signed judgment routes)
// a registered principal's signature, before the body is read. Who may
// act on an object is the service's to decide; this is only who may call
// the operation at all.
func (s *server) allowed(r *route, a principal.Actor) error {
	switch r.auth {
	case RouteOperator:
		return s.allowedAs(r.service, a)
	case RoutePrincipal:
		switch a.Kind {
		case principal.ByPrincipal:
			return nil
		case principal.ByDIDKey:
			return unauthorized(codeUnknownKey, "keyid %q is a did:key: the judgment routes take registered principals, which have a tenant and roles", a.KeyID)
		}
		return unauthorized(codeSignatureMissing, "the judgment routes are signed: %s; keyid is a principal an operator registered", signHow)
	}
	return nil
}

// allowedAs checks that a is the operator, with the refusals of service's
// operator rows.
func (s *server) allowedAs(service string, a principal.Actor) error {
	scope := operatorScopes[service]
	if s.cfg.OperatorToken == "" {
		return fault.New(fault.Forbidden, codeOperatorDisabled, "%s", scope.disabled)
	}
	if !a.IsOperator() {
		return fault.New(fault.Unauthorized, codeUnauthorized, "%s", scope.unauthorized)
	}
	return nil
}

// rest is the fiber handler of row r: the pipeline over HTTP.
func (s *server) rest(r *route) fiber.Handler {
	params := r.params()
	limit := s.cfg.MaxBodyBytes
	if r.bodyLimit > 0 {
		limit = r.bodyLimit
	}
	return func(c *fiber.Ctx) error {
		a, err := s.authenticate(c)
		if err == nil {
			err = s.allowed(r, a)
		}
		a.Addr = s.limits.clientAddr(c)
		if err := s.limit(r, a, err); err != nil {
			return s.refuse(c, r, err)
		}
		release, err := s.limits.enter(r.rateClass())
		if err != nil {
			return err
		}
		defer release()
		if r.raw != nil {
			return r.raw(s, c, a)
		}
		b, err := body(c, limit)
		if err != nil {
			return err
		}
		cl := &call{ctx: c.UserContext(), actor: a, params: map[string]string{}, query: fiberQuery(c), header: fiberHeader(c),
			setHeader: func(k, v string) { c.Set(k, v) }, body: b}
		for _, p := range params {
			cl.params[p] = c.Params(p)
		}
		if r.paid {
			cl.pay = payment(c)
		}
		key := c.Get("Idempotency-Key")
		if r.idem == idemBody {
			if cl.body, err = withBodyKey(b, key); err != nil {
				return err
			}
		}
		if cl.ik, err = idempotency(r, cl, key); err != nil {
			return err
		}
		if rep, err := s.replayed(cl.ctx, cl.ik); err != nil || rep != nil {
			if err != nil {
				return err
			}
			return reply(c, *rep, nil)
		}
		ans, err := r.op(s, cl)
		var pr *rail.PaymentRequired
		if errors.As(err, &pr) {
			return paymentRequired(c, pr)
		}
		if err != nil {
			return s.refuse(c, r, err)
		}
		if raw, ok := ans.value.(json.RawMessage); ok {
			// Stored bytes (a receipt as it was signed), sent as they are.
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(raw)
		}
		if ans.reply == nil {
			return c.JSON(ans.value)
		}
		if r.paid {
			if err := paymentResponse(c, ans.reply.Body); err != nil {
				return err
			}
		}
		return reply(c, *ans.reply, nil)
	}
}

// replayed is the one replay pre-check: the reply stored for ik, looked
// up before any slow work (an adjudication, a collection on a rail), or
// nil. The service looks again in its transaction.
func (s *server) replayed(ctx context.Context, ik idem.Request) (*idem.Reply, error) {
	if ik.Key == "" || s.cfg.Replies == nil {
		return nil, nil
	}
	return s.cfg.Replies.Replay(ctx, ik)
}

// refuse answers err for row r: a 401 carries the challenge of the row's
// realm (WWW-Authenticate).
func (s *server) refuse(c *fiber.Ctx, r *route, err error) error {
	if fault.KindOf(err) == fault.Unauthorized {
		switch {
		case r.auth == RouteOperator:
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="assay-operator"`)
		case r.service == svcMCP:
			mcpChallenge(c, realms[r.service])
		default:
			challenge(c, realms[r.service])
		}
	}
	return err
}

// fiberHeader reads a fiber request's header fields.
func fiberHeader(c *fiber.Ctx) func(string) string { return func(k string) string { return c.Get(k) } }
