package escrow

import (
	"context"

	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
)

// Party is who of a contract's two makes a mutation: funding, accepting
// and disputing are the buyer's, delivering the seller's. Creating a
// contract and reading it are anyone's; resolving is the operator's.
type Party string

// The parties.
const (
	PartyBuyer  Party = "buyer"
	PartySeller Party = "seller"
)

// mayAct decides whether a may make c's mutation that is party's:
//
//   - A contract in a backed currency holds money from the buyer's wallet
//     that a rail pays out: each party makes its mutations itself,
//     proven (principal.ActsFor), whatever the court's mode, so that no
//     one funds, accepts or disputes in another's name.
//   - In a signed court, a party that can prove who it is (a did:key, a
//     registered principal: Identities) makes its mutations itself.
//   - Anything else is the seed's open court: anyone may.
//
// # Errors
//
// signature_missing (401), agent_mismatch, insufficient_scope (403); a
// failed read of the identities, which refuses: never a pass.
func (s *Service) mayAct(ctx context.Context, a principal.Actor, c *Contract, party Party) error {
	agent := c.Buyer
	if party == PartySeller {
		agent = c.Seller
	}
	if rail.Backed(c.Currency) {
		return principal.ActsFor(a, agent)
	}
	if s.auth != principal.Signed {
		return nil
	}
	provable, err := s.ids.Provable(ctx, agent)
	if err != nil || !provable {
		return err
	}
	return principal.ActsFor(a, agent)
}

// mayActOn is mayAct on contract id: its parties and currency, which
// never change once it is made, as this node last saw them, or as the
// store holds them.
func (s *Service) mayActOn(ctx context.Context, a principal.Actor, id string, party Party) error {
	r := s.contracts.peek(id)
	if r == nil {
		var err error
		if r, err = s.read(ctx, id); err != nil {
			return err
		}
	}
	return s.mayAct(ctx, a, &r.Contract, party)
}
