package market

import (
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
)

// withActor adds to a receipt's subject the principal that authenticated
// the request (principal.Actor.Name), as "actor"; a subject of an
// unauthenticated request is left as it was, byte for byte.
func withActor(a principal.Actor, subject map[string]any) map[string]any {
	if n := a.Name(); n != "" {
		subject["actor"] = n
	}
	return subject
}

// actsFor decides whether a may act as agent, the agent a request spends,
// lists, withdraws, deactivates or challenges as: in a signed market only
// the agent itself (principal.ActsFor); in an open one, anyone.
func (s *Service) actsFor(a principal.Actor, agent string) error {
	if s.auth != principal.Signed {
		return nil
	}
	return principal.ActsFor(a, agent)
}

// depositsFor decides whether a may deposit into agent's wallet: the
// agent itself, or the operator.
func (s *Service) depositsFor(a principal.Actor, agent string) error {
	if a.IsOperator() {
		return nil
	}
	return s.actsFor(a, agent)
}

// operatorOnly refuses every caller but the operator.
func operatorOnly(a principal.Actor, what string) error {
	if !a.IsOperator() {
		return fault.New(fault.Forbidden, ECodeOperatorOnly, "only the operator %s", what)
	}
	return nil
}
