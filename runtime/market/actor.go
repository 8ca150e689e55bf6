package market

import (
	"context"

	"github.com/assayhq/assay/runtime/principal"
)

// withActor adds to a receipt's subject the principal that authenticated
// the request (principal.ActorOf), as "actor"; a subject of an
// unauthenticated request is left as it was, byte for byte.
func withActor(ctx context.Context, subject map[string]any) map[string]any {
	if a := principal.ActorOf(ctx); a != "" {
		subject["actor"] = a
	}
	return subject
}
