package market_test

import "github.com/assayhq/assay/runtime/principal"

// anon is the caller that proved nothing: the open market's agents.
var anon principal.Actor
