package api

import (
	"context"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
)

// The judgment service's operations, under matters.RoutePrefix when
// Config.Matters is set: Matters, and the exchange's quorum Matters
// (docs/exchange.md). The service decides who may call, from the Actor:
// registered principals when it is signed, anyone when it is open.

const mattersBase = matters.RoutePrefix

// judgment is the operation of a judgment mutation: the body decoded into
// a Req (its idempotency_key, which the Idempotency-Key header may carry
// instead, merged by the pipeline), and do's reply to the caller.
func judgment[Req any](do func(m Matters, ctx context.Context, a principal.Actor, req Req) (idem.Reply, error)) operation {
	return mutate(func(s *server, c *call, req Req) (idem.Reply, error) { return do(s.cfg.Matters, c.ctx, c.actor, req) })
}

// matterList lists the caller's open Matters, or all it may see.
func matterList(all bool) operation {
	return view(func(s *server, c *call) (matterListOut, error) {
		vs, err := s.cfg.Matters.List(c.ctx, c.actor, all)
		if err != nil {
			return matterListOut{}, err
		}
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v.Value()
		}
		return matterListOut{Count: len(out), Matters: out}, nil
	})
}

func (s *server) matterGet(c *call) (matterOut, error) {
	v, err := s.cfg.Matters.Get(c.ctx, c.actor, c.param("id"))
	if err != nil {
		return matterOut{}, err
	}
	return matterOut{Matter: v.Value()}, nil
}

func (s *server) matterReceipts(c *call) (matterReceiptsOut, error) {
	rs, err := s.cfg.Matters.Receipts(c.ctx, c.actor, c.param("id"))
	if err != nil {
		return matterReceiptsOut{}, err
	}
	if rs == nil {
		rs = []receipt.Receipt{}
	}
	return matterReceiptsOut{Count: len(rs), Receipts: rs}, nil
}

func (s *server) solverProfile(c *call) (matters.Profile, error) {
	return s.cfg.Matters.SolverProfile(c.ctx, c.actor, c.param("id"))
}

// mattersFacts describes the judgment routes for /health and /agentfacts:
// where they are and how to authenticate, or "off".
func (s *server) mattersFacts(base string) any {
	if s.cfg.Matters == nil {
		return "off"
	}
	auth := s.mattersMode()
	f := map[string]any{
		"endpoint": base + mattersBase,
		"routes":   []string{"POST open", "POST assign", "POST accept", "POST verdict", "POST settle", "POST dispute", "POST tick", "GET /", "GET /all", "GET /{id}", "GET /{id}/receipts"},
		"auth":     string(auth),
		"docs":     base + "/skill.md#judgment-matters",
	}
	if auth == AuthSigned {
		f["signature"] = `RFC 9421 HTTP Message Signatures, Ed25519: cover ("@method" "@path" "@authority" "content-digest") with created, keyid, nonce, alg="ed25519"; Content-Digest: sha-256=:<base64>: (RFC 9530); keyid is a principal an operator registered`
		f["max_clock_skew_seconds"] = int(MaxClockSkew.Seconds())
	}
	return f
}
