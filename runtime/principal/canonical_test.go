package principal_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/principal"
)

// TestRegistry_Confusable: ids are compared case folded and by their
// Unicode skeleton, so an id a person could take for a registered one is
// refused, and one not in NFC is refused as it is.
func TestRegistry_Confusable(t *testing.T) {
	ctx := context.Background()
	pub, _, _ := ed25519.GenerateKey(nil)
	p := func(id string) principal.Principal {
		return principal.Principal{KeyID: id, PublicKey: base64.StdEncoding.EncodeToString(pub), Tenant: "t1",
			Roles: []string{principal.RoleRequester}, Scopes: []string{principal.ScopeWrite}}
	}
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			reg := principal.New(st, time.Now)
			if _, err := reg.Add(ctx, p("alice")); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"Alice", "ALICE", "\u0430lice" /* Cyrillic a */, "al\u0456ce" /* Cyrillic i */, "ａｌｉｃｅ" /* fullwidth */} {
				_, err := reg.Add(ctx, p(id))
				wantCode(t, err, principal.ECodePrincipalConfusable)
				_, _, err = reg.IssueAPIKey(ctx, id)
				wantCode(t, err, principal.ECodePrincipalConfusable)
			}
			_, err := reg.Add(ctx, p("cafe\u0301")) // e + combining acute: not NFC
			wantCode(t, err, principal.ECodeInvalidPrincipal)
			if _, err := reg.Add(ctx, p("bob")); err != nil {
				t.Errorf("bob: %v", err)
			}
			// alice's own API key is no confusion.
			if _, _, err := reg.IssueAPIKey(ctx, "alice"); err != nil {
				t.Errorf("alice's API key: %v", err)
			}
			if principal.Canonical("Аlice") != principal.Canonical("alice") {
				t.Error("Canonical does not fold a Cyrillic capital A into alice")
			}
		})
	}
}
