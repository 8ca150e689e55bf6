package api

import "github.com/assayhq/assay/runtime/market"

// The operator's view of the market's payments on a rail that settles
// remotely (x402): the intents whose outcome is not resolved yet, each
// with why its last attempt left it so. A tick (POST /market/tick)
// resolves what it can; docs/x402.md says what to do with the rest.

func (s *server) unresolvedIntents(c *call) (market.UnresolvedIntents, error) {
	limit, err := limitOf(c.query, 0)
	if err != nil {
		return market.UnresolvedIntents{}, err
	}
	return s.cfg.Market.Unresolved(c.ctx, limit)
}
