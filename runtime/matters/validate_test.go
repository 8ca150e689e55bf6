package matters_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
)

// TestService_TextAndIDs: ids follow package ident's grammar and free text
// its text rules, in open mode (where requester_id is whatever the caller
// says) and for principals; a refused call opens nothing.
func TestService_TextAndIDs(t *testing.T) {
	e := mustEnv(t, principal.Open)
	ctx := context.Background()
	var a matters.Actor // anyone: identities come from the body
	open := func(f func(*matters.OpenRequest)) error {
		r := openReq(e.key())
		r.ActionDigest = ""
		f(&r)
		_, err := e.Open(ctx, a, r)
		return err
	}
	for _, tc := range []struct {
		name, code string
		f          func(*matters.OpenRequest)
	}{
		{"ErrRequesterBidi", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = "alice\u202e" }},
		{"ErrRequesterNUL", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = "al\x00ice" }},
		{"ErrRequesterDotDot", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = ".." }},
		{"ErrRequesterStar", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = "*" }},
		{"ErrRequesterSpace", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = "al ice" }},
		{"ErrRequesterUTF8", "invalid_requester_id", func(r *matters.OpenRequest) { r.RequesterID = "al\xffice" }},
		{"ErrRequesterLong", "field_too_long", func(r *matters.OpenRequest) { r.RequesterID = strings.Repeat("a", 257) }},
		{"ErrQuestionNUL", "invalid_question", func(r *matters.OpenRequest) { r.Question = "pay\x00?" }},
		{"ErrQuestionBidi", "invalid_question", func(r *matters.OpenRequest) { r.Question = "pay \u2067invoice" }},
		{"ErrQuestionUTF8", "invalid_question", func(r *matters.OpenRequest) { r.Question = "pay \xc3" }},
		{"ErrQuestionEscape", "invalid_question", func(r *matters.OpenRequest) { r.Question = "\x1b[2Jpay?" }},
	} {
		t.Run("Open/"+tc.name, func(t *testing.T) {
			err := open(tc.f)
			wantCode(t, err, tc.code)
			if fault.KindOf(err) != fault.Invalid {
				t.Errorf("kind %s, want invalid", fault.KindOf(err))
			}
		})
	}
	t.Run("Open/OK", func(t *testing.T) {
		if err := open(func(r *matters.OpenRequest) {
			r.RequesterID = "did:key:z6Mk…"
			r.Question = "pay\tinvoice 42?\nyes or no"
		}); err != nil {
			t.Fatal(err)
		}
	})
	pub, _, _ := ed25519.GenerateKey(nil)
	for _, p := range []matters.Principal{
		{KeyID: "carol\u200f", Tenant: "t1"},
		{KeyID: "carol", Tenant: "t1/../t2"},
		{KeyID: ".", Tenant: "t1"},
		{KeyID: "carol", Tenant: "t\x7f"},
	} {
		p.PublicKey = base64.StdEncoding.EncodeToString(pub)
		p.Roles, p.Scopes = []string{matters.RoleRequester}, []string{matters.ScopeRead}
		if _, err := e.AddPrincipal(ctx, p); fault.CodeOf(err) != "invalid_principal" {
			t.Errorf("AddPrincipal(%q, %q) = %v, want invalid_principal", p.KeyID, p.Tenant, err)
		}
	}
}
