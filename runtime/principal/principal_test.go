package principal_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

// stores are the stores the registry is tested on: badger, and
// PostgreSQL when ASSAY_TEST_POSTGRES names one.
func stores(t *testing.T) map[string]store.Store {
	t.Helper()
	out := map[string]store.Store{}
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	out["badger"] = db
	if os.Getenv(pgtest.Env) != "" {
		pg, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		out["postgres"] = pg
	}
	return out
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func TestRegistry(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			reg := principal.New(st, func() time.Time { return now })
			pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey))
			p := principal.Principal{KeyID: "alice", PublicKey: pub, Tenant: "t1", Roles: []string{principal.RoleRequester}, Scopes: []string{principal.ScopeWrite}}

			// Registered keys: added once, refused when invalid, revoked.
			got, err := reg.Add(ctx, p)
			if err != nil || !got.CreatedAt.Equal(now) || !got.Active() {
				t.Fatalf("add: %+v %v", got, err)
			}
			_, err = reg.Add(ctx, p)
			wantCode(t, err, principal.ECodePrincipalExists)
			for _, bad := range []func(*principal.Principal){
				func(p *principal.Principal) { p.KeyID = "" },
				func(p *principal.Principal) { p.KeyID = `a"b` },
				func(p *principal.Principal) { p.KeyID = receipt.DIDKey(make([]byte, 32)) },
				func(p *principal.Principal) { p.PublicKey = "x" },
				func(p *principal.Principal) { p.Roles = []string{"king"} },
				func(p *principal.Principal) { p.Scopes = nil },
			} {
				q := p
				q.KeyID = "bob"
				bad(&q)
				_, err := reg.Add(ctx, q)
				wantCode(t, err, principal.ECodeInvalidPrincipal)
			}
			now = now.Add(time.Hour)
			if r, err := reg.Revoke(ctx, "alice"); err != nil || r.Active() || !r.RevokedAt.Equal(now) {
				t.Fatalf("revoke: %+v %v", r, err)
			}
			_, err = reg.Revoke(ctx, "nobody")
			wantCode(t, err, principal.ECodePrincipalNotFound)
			if ps, err := reg.Principals(ctx); err != nil || len(ps) != 1 || ps[0].Active() {
				t.Fatalf("principals: %+v %v", ps, err)
			}

			// API keys: the token is shown once and stored hashed; only the
			// right, active token finds its key.
			k, token, err := reg.IssueAPIKey(ctx, "g17-mathema")
			if err != nil || k.Agent != "g17-mathema" || !strings.HasPrefix(token, principal.TokenPrefix) || strings.Contains(k.Hash, token) {
				t.Fatalf("issue: %+v %q %v", k, token, err)
			}
			if _, ok := principal.ParseToken(token); !ok {
				t.Fatalf("token %q does not parse", token)
			}
			if got, ok, err := reg.APIKeyOf(ctx, token); err != nil || !ok || got.ID != k.ID {
				t.Fatalf("lookup: %+v %v %v", got, ok, err)
			}
			wrong := token[:len(token)-1] + map[bool]string{true: "1", false: "0"}[strings.HasSuffix(token, "0")]
			for _, tok := range []string{wrong, "assay_ak_x", "op-token", principal.TokenPrefix + "000000000000_" + strings.Repeat("0", 64)} {
				if _, ok, err := reg.APIKeyOf(ctx, tok); err != nil || ok {
					t.Fatalf("token %q found a key (%v)", tok, err)
				}
			}
			_, _, err = reg.IssueAPIKey(ctx, "has space")
			wantCode(t, err, principal.ECodeInvalidAPIKey)
			if r, err := reg.RevokeAPIKey(ctx, k.ID); err != nil || r.Active() {
				t.Fatalf("revoke key: %+v %v", r, err)
			}
			if _, ok, _ := reg.APIKeyOf(ctx, token); ok {
				t.Fatal("a revoked API key is found")
			}
			_, err = reg.RevokeAPIKey(ctx, "000000000000")
			wantCode(t, err, principal.ECodeAPIKeyNotFound)
			if ks, err := reg.APIKeys(ctx); err != nil || len(ks) != 1 {
				t.Fatalf("api keys: %+v %v", ks, err)
			}

			// Nonces: once per key, whatever the kind.
			did := receipt.DIDKey(make([]byte, 32))
			if err := reg.UseNonce(ctx, did, "n1", now); err != nil {
				t.Fatal(err)
			}
			wantCode(t, reg.UseNonce(ctx, did, "n1", now), principal.ECodeNonceReplayed)
			if err := reg.UseNonce(ctx, "alice", "n1", now); err != nil {
				t.Fatalf("the same nonce of another key: %v", err)
			}
		})
	}
}

func TestDIDKey(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	did := receipt.DIDKey(pub)
	for _, id := range []string{did, did + "#" + strings.TrimPrefix(did, "did:key:")} {
		got, err := principal.DIDKeyPublic(id)
		if err != nil || !got.Equal(pub) || principal.DIDKeyAgent(id) != did {
			t.Fatalf("%s: %x %v", id, got, err)
		}
	}
	for _, bad := range []string{"did:key:", "did:key:zzz", did + "#z6MkOther", "did:web:example.com"} {
		if _, err := principal.DIDKeyPublic(bad); err == nil {
			t.Errorf("%s parses", bad)
		}
	}
}
