package market_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
)

// unchanged fails unless the market holds no listing, no purchase and no
// money: what a refused first request must leave.
func (e *env) unchanged(tb testing.TB) {
	tb.Helper()
	st := must(e.svc.Stats(context.Background()))(tb)
	if st.ListingsTotal != 0 || st.Purchases != 0 || st.HeldUSD != 0 {
		tb.Fatalf("stats after a refused request %+v", st)
	}
	sums := must(ledger.SumsOf(context.Background(), e.svc.Store()))(tb)
	if len(sums) != 0 {
		tb.Fatalf("ledger after a refused request %v", sums)
	}
}

func TestService_PublishText(t *testing.T) {
	ctx := context.Background()
	ok := market.PublishRequest{Agent: "seller", Title: "squares", ProblemStatement: "table of squares\nof three integers",
		Artifact: raw(table), ArtifactType: "dataset", PriceUSD: raw("1")}
	for _, tc := range []struct {
		name, code string
		edit       func(*market.PublishRequest)
	}{
		{"ErrArtifactNotUTF8", "invalid_artifact", func(r *market.PublishRequest) { r.Artifact = raw("\"\xff\xfe\xfd\"") }},
		{"ErrArtifactNotUTF8Value", "invalid_artifact", func(r *market.PublishRequest) { r.Artifact = raw("{\"a\":\"\xc3\"}") }},
		{"ErrBase64NotString", "invalid_artifact", func(r *market.PublishRequest) { r.Artifact, r.Encoding = raw(`{"a":1}`), "base64" }},
		{"ErrBase64Bad", "invalid_artifact", func(r *market.PublishRequest) { r.Artifact, r.Encoding = raw(`"!!not base64"`), "base64" }},
		{"ErrEncoding", "invalid_encoding", func(r *market.PublishRequest) { r.Encoding = "hex" }},
		{"ErrTitleNUL", "invalid_title", func(r *market.PublishRequest) { r.Title = "squa\x00res" }},
		{"ErrTitleBidi", "invalid_title", func(r *market.PublishRequest) { r.Title = "squares \u202etxt.exe" }},
		{"ErrTitleNewline", "invalid_title", func(r *market.PublishRequest) { r.Title = "squares\nmore" }},
		{"ErrTitleNotUTF8", "invalid_title", func(r *market.PublishRequest) { r.Title = "squares \xff" }},
		{"ErrTitleTooLong", "invalid_title", func(r *market.PublishRequest) { r.Title = strings.Repeat("t", market.MaxTitleBytes+1) }},
		{"ErrProblemNUL", "invalid_problem_statement", func(r *market.PublishRequest) { r.ProblemStatement = "table of squares\x00" }},
		{"ErrProblemCR", "invalid_problem_statement", func(r *market.PublishRequest) { r.ProblemStatement = "table of\rsquares" }},
		{"ErrProblemBidi", "invalid_problem_statement", func(r *market.PublishRequest) { r.ProblemStatement = "table of \u2066squares" }},
		{"ErrLicenseBidi", "invalid_license_terms", func(r *market.PublishRequest) { r.LicenseTerms = "single-use \u200f" }},
		{"ErrCheckerNUL", "invalid_checker", func(r *market.PublishRequest) {
			r.Checker = &market.CheckerSpec{Kind: checkers.KindPython, Source: "assert True\x00"}
		}},
		{"ErrAgentDotDot", "invalid_agent", func(r *market.PublishRequest) { r.Agent = ".." }},
		{"ErrAgentStar", "invalid_agent", func(r *market.PublishRequest) { r.Agent = "*" }},
		{"ErrAgentBidi", "invalid_agent", func(r *market.PublishRequest) { r.Agent = "sel\u202eler" }},
		{"ErrAgentNUL", "invalid_agent", func(r *market.PublishRequest) { r.Agent = "sel\x00ler" }},
		{"ErrAgentNotUTF8", "invalid_agent", func(r *market.PublishRequest) { r.Agent = "sel\xffler" }},
		{"ErrAgentSlash", "invalid_agent", func(r *market.PublishRequest) { r.Agent = "a/b" }},
		{"ErrAgentTooLong", "invalid_agent", func(r *market.PublishRequest) { r.Agent = strings.Repeat("a", 257) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			req := ok
			tc.edit(&req)
			_, err := e.svc.Publish(ctx, anon, req, idem.Request{})
			wantCode(t, err, tc.code)
			if fault.KindOf(err) != fault.Invalid {
				t.Fatalf("kind %v, want invalid", fault.KindOf(err))
			}
			e.unchanged(t)
		})
	}
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		must(e.svc.Deposit(ctx, anon, "seller", amount("1"), idem.Request{}))(t)
		req := ok
		req.Title = "squares — ü ✓" // any letter or symbol; tabs and newlines only in long text
		must(e.svc.Publish(ctx, anon, req, idem.Request{}))(t)
	})
}

// TestService_Base64Artifact: an artifact sent as base64 is replayed on
// its bytes and delivered as it was sent, with the encoding named.
func TestService_Base64Artifact(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
	must(e.svc.Deposit(ctx, anon, "seller", amount("1"), idem.Request{}))(t)
	t.Run("Checker", func(t *testing.T) {
		b64 := base64.StdEncoding.EncodeToString([]byte("1 1\n2 4\n3 9\n"))
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "squares", ProblemStatement: "table of squares",
			Artifact: raw(`"` + b64 + `"`), Encoding: market.EncodingBase64, ArtifactType: "dataset", PriceUSD: raw("1"),
			Checker: &market.CheckerSpec{SHA256: e.squares}}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		if p.Listing.Level != 1 || p.Listing.ArtifactEncoding != "base64" || p.Listing.ArtifactSHA256 != checkers.SHA256([]byte("1 1\n2 4\n3 9\n")) {
			t.Fatalf("published %s", r.Body)
		}
		bought := must(e.svc.Buy(ctx, anon, p.Listing.ListingID, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		var b market.Bought
		if err := json.Unmarshal(bought.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Encoding != "base64" || string(b.Artifact) != `"`+b64+`"` {
			t.Fatalf("delivered %s as %s", b.Artifact, b.Encoding)
		}
		// A sample replay runs on the bytes, not on the base64 text.
		got := must(e.svc.Replay(ctx, anon, p.Listing.ListingID, market.ReplayRequest{Agent: "buyer"}))(t)
		if !got.Pass {
			t.Fatalf("replay %+v", got)
		}
	})
	t.Run("Binary", func(t *testing.T) {
		bin := []byte{0xff, 0xfe, 0xfd, 0}
		b64 := base64.StdEncoding.EncodeToString(bin)
		r := must(e.svc.Publish(ctx, anon, market.PublishRequest{Agent: "seller", Title: "bytes", ProblemStatement: "raw bytes blob",
			Artifact: raw(`"` + b64 + `"`), Encoding: market.EncodingBase64, ArtifactType: "dataset", PriceUSD: raw("1")}, idem.Request{}))(t)
		var p market.Published
		json.Unmarshal(r.Body, &p)
		bought := must(e.svc.Buy(ctx, anon, p.Listing.ListingID, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		if !json.Valid(bought.Body) {
			t.Fatalf("the buyer got a body JSON parsers refuse: %q", bought.Body)
		}
		var b market.Bought
		json.Unmarshal(bought.Body, &b)
		var s string
		json.Unmarshal(b.Artifact, &s)
		if dec, err := base64.StdEncoding.DecodeString(s); err != nil || string(dec) != string(bin) || b.Encoding != "base64" ||
			b.Purchase.ArtifactSHA256 != checkers.SHA256(bin) {
			t.Fatalf("delivered %s as %s (%v)", b.Artifact, b.Encoding, err)
		}
	})
	t.Run("JSONNamed", func(t *testing.T) {
		id := e.publishSquares(t, "seller", "squares of three integers")
		bought := must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer"}, idem.Request{}))(t)
		var b market.Bought
		json.Unmarshal(bought.Body, &b)
		if b.Encoding != "json" || string(b.Artifact) != table {
			t.Fatalf("delivered %s as %q", b.Artifact, b.Encoding)
		}
	})
	e.zero(t)
}

// TestService_TextRefused: every route's agent ids and free text follow
// the grammar, and a refusal changes nothing.
func TestService_TextRefused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	bad := []string{"..", ".", "*", "a\u202eb", "a\x00b", "a b", "a\xffb", "a\\b", "\u200b"}
	for _, a := range bad {
		_, err := e.svc.Deposit(ctx, anon, a, amount("1"), idem.Request{})
		wantCode(t, err, "invalid_agent")
		_, err = e.svc.WalletOf(ctx, a)
		wantCode(t, err, "invalid_agent")
		_, err = e.svc.AgentProfile(ctx, a)
		wantCode(t, err, "invalid_agent")
	}
	e.unchanged(t)
	must(e.svc.Deposit(ctx, anon, "buyer", amount("10"), idem.Request{}))(t)
	id := e.publishSquares(t, "seller", "table of squares")
	for _, a := range bad {
		_, err := e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: a}, idem.Request{})
		wantCode(t, err, "invalid_agent")
		_, err = e.svc.Replay(ctx, anon, id, market.ReplayRequest{Agent: a})
		wantCode(t, err, "invalid_agent")
		_, err = e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: a, Evidence: raw(`"4"`)}, idem.Request{})
		wantCode(t, err, "invalid_agent")
		_, err = e.svc.Deactivate(ctx, anon, id, market.DeactivateRequest{Agent: a}, idem.Request{})
		wantCode(t, err, "invalid_agent")
	}
	_, err := e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer", Purpose: "audit\x00"}, idem.Request{})
	wantCode(t, err, "invalid_purpose")
	_, err = e.svc.Search(ctx, market.SearchRequest{Query: "squares \u202e"})
	wantCode(t, err, "invalid_query")
	if e.balance(t, "buyer") != 10_000_000 {
		t.Fatal("a refused purchase charged the buyer")
	}
	must(e.svc.Buy(ctx, anon, id, market.PurchaseRequest{Agent: "buyer", Purpose: "audit\tline one\nline two"}, idem.Request{}))(t)
	_, err = e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw(`"4"`), Reason: "wrong \u2067"}, idem.Request{})
	wantCode(t, err, "invalid_reason")
	_, err = e.svc.Challenge(ctx, anon, id, market.ChallengeRequest{Agent: "buyer", Evidence: raw("\"\xff\"")}, idem.Request{})
	wantCode(t, err, "invalid_evidence")
	if st := must(e.svc.Stats(ctx))(t); st.ChallengesOpen+st.ChallengesUpheld != 0 || st.PurchasesHeld != 1 {
		t.Fatalf("a refused challenge changed %+v", st)
	}
	e.zero(t)
}
