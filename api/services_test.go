package api_test

import (
	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/replays"
)

// Interface guards: the runtime's services are what the API calls.
var (
	_ api.Court      = (*escrow.Service)(nil)
	_ api.Market     = (*market.Service)(nil)
	_ api.Matters    = (*matters.Service)(nil)
	_ api.Checkers   = (*replays.Library)(nil)
	_ api.Replays    = (*replays.Service)(nil)
	_ api.Identities = (*principal.Registry)(nil)
	_ api.Replies    = idem.Keeper{}
)
