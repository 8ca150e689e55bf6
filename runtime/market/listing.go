package market

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// Listing is a listing of record.
type Listing struct {
	ID             string        `json:"listing_id"`
	Fingerprint    string        `json:"fingerprint"`
	Title          string        `json:"title"`
	Problem        string        `json:"problem_statement"`
	ArtifactType   string        `json:"artifact_type"`
	Price          USD           `json:"price_usd"`
	EstRecompute   USD           `json:"est_recompute_cost_usd"`
	Level          int           `json:"verification_level"`
	Bond           USD           `json:"bond_usd"`
	BondHeld       bool          `json:"bond_held"`
	LicenseTerms   string        `json:"license_terms"`
	Seller         string        `json:"seller_id"`
	Seed           bool          `json:"seed"`
	Status         string        `json:"status"`
	Checker        *checkers.Ref `json:"checker,omitempty"`
	ArtifactSHA256 string        `json:"artifact_sha256"`
	// Encoding is EncodingBase64 when the artifact was published (and is
	// delivered) as base64; empty for EncodingJSON.
	Encoding      string `json:"artifact_encoding,omitempty"`
	ReplaysPassed int    `json:"replays_passed"`
	ReplaysFailed int    `json:"replays_failed"`
	// ConfirmedBuyers is how many distinct independent buyers' replays
	// passed (see Service.Replay): what level 3 counts.
	ConfirmedBuyers int       `json:"confirmed_buyers"`
	Receipts        []string  `json:"receipts"`
	CreatedAt       time.Time `json:"created_at"`
}

// View is a listing as get_listing and search_listings show it: the seed's
// listing object, the artifact withheld.
type View struct {
	ListingID      string  `json:"listing_id"`
	Fingerprint    string  `json:"fingerprint"`
	Title          string  `json:"title"`
	ArtifactType   string  `json:"artifact_type"`
	Price          USD     `json:"price_usd"`
	EstRecompute   USD     `json:"est_recompute_cost_usd"`
	Level          int     `json:"verification_level"`
	HasChecker     bool    `json:"has_checker"`
	Bond           USD     `json:"bond_usd"`
	FreshnessDays  float64 `json:"freshness_days"`
	LicenseTerms   string  `json:"license_terms"`
	Status         string  `json:"status"`
	Seed           bool    `json:"seed"`
	ArtifactSHA256 string  `json:"artifact_sha256"`
	// ArtifactEncoding is the form the artifact is delivered in: json or
	// base64.
	ArtifactEncoding string        `json:"artifact_encoding"`
	Checker          *checkers.Ref `json:"checker,omitempty"`
	ReplaysPassed    int           `json:"replays_passed"`
	ReplaysFailed    int           `json:"replays_failed"`
	// ConfirmedBuyers: distinct independent buyers whose replays passed;
	// level 3 takes SamplesForLevel3 of them.
	ConfirmedBuyers int     `json:"confirmed_buyers"`
	ChallengeHours  float64 `json:"challenge_window_hours"`
	Seller          Profile `json:"seller"`
}

// CheckerSpec is a listing's checker: Python source, or the SHA-256 of a
// wasm checker uploaded with POST /checkers.
type CheckerSpec struct {
	Kind      string `json:"kind,omitempty"` // "python" or "wasm"; inferred when empty
	Source    string `json:"source,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Fuel      uint64 `json:"fuel,omitempty"`
	MemoryMiB uint32 `json:"memory_mib,omitempty"`
}

// PublishRequest is publish_listing's input. Prices are raw JSON so that
// they parse exactly.
type PublishRequest struct {
	Agent            string          `json:"agent"`
	Title            string          `json:"title"`
	ProblemStatement string          `json:"problem_statement"`
	Artifact         json.RawMessage `json:"artifact"`
	// Encoding is how Artifact is sent: EncodingJSON (the default; the
	// JSON must be valid UTF-8) or EncodingBase64 (a string of standard
	// base64, for bytes that are not text). The buyer gets it back in the
	// same form, with the encoding named.
	Encoding          string          `json:"encoding,omitempty"`
	ArtifactType      string          `json:"artifact_type"`
	PriceUSD          json.RawMessage `json:"price_usd"`
	EstRecomputeUSD   json.RawMessage `json:"est_recompute_cost_usd,omitempty"`
	LicenseTerms      string          `json:"license_terms,omitempty"`
	Checker           *CheckerSpec    `json:"checker,omitempty"`
	VerificationLevel int             `json:"verification_level,omitempty"`
}

// Published is publish_listing's answer.
type Published struct {
	Listing View            `json:"listing"`
	Replay  *wasm.Outcome   `json:"replay,omitempty"`
	Receipt json.RawMessage `json:"receipt"`
}

// artifactInput is what a checker sees of a JSON value: a string's
// contents, anything else's JSON bytes.
func artifactInput(raw json.RawMessage) []byte {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

func (s *Service) publishTerms(req PublishRequest) (*Listing, []byte, error) {
	if err := validAgent("agent", req.Agent); err != nil {
		return nil, nil, err
	}
	for _, f := range []struct {
		field, v string
		check    func(field, s string, max int) error
		max      int
		required bool
	}{
		{"title", req.Title, validLine, MaxTitleBytes, true},
		{"problem_statement", req.ProblemStatement, validText, MaxProblemBytes, true},
		{"license_terms", req.LicenseTerms, validText, MaxTextBytes, false},
	} {
		if f.required && strings.TrimSpace(f.v) == "" {
			return nil, nil, fault.New(fault.Invalid, ECodeMissingField, "%s is required", f.field)
		}
		if err := f.check(f.field, f.v, f.max); err != nil {
			return nil, nil, err
		}
	}
	if len(Tokens(req.ProblemStatement)) == 0 {
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidProblemStatement, "problem_statement has no tokens to fingerprint once stopwords and one-character tokens are dropped")
	}
	art := bytes.TrimSpace(req.Artifact)
	switch {
	case len(art) == 0 || string(art) == "null":
		return nil, nil, fault.New(fault.Invalid, ECodeMissingField, "artifact is required: a string or any JSON value; it is withheld until purchase")
	case len(art) > MaxArtifactBytes:
		return nil, nil, fault.New(fault.TooLarge, ECodeArtifactTooLarge, "an artifact is at most %d bytes", MaxArtifactBytes)
	}
	input, err := decodeArtifact(art, req.Encoding)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Contains(ArtifactTypes, req.ArtifactType) {
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidArtifactType, "artifact_type must be one of %s", strings.Join(ArtifactTypes, ", "))
	}
	price, err := ParseAmount(req.PriceUSD, "price_usd")
	if err != nil {
		return nil, nil, err
	}
	if price <= 0 {
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidAmount, "price_usd must be more than 0")
	}
	var est USD
	if t := bytes.TrimSpace(req.EstRecomputeUSD); len(t) > 0 && string(t) != "null" {
		if est, err = ParseAmount(t, "est_recompute_cost_usd"); err != nil {
			return nil, nil, err
		}
	}
	l := &Listing{Title: req.Title, Problem: req.ProblemStatement, ArtifactType: req.ArtifactType, Price: price,
		EstRecompute: est, LicenseTerms: req.LicenseTerms, Seller: req.Agent, Status: ListingActive,
		Fingerprint: Fingerprint(req.ProblemStatement), ArtifactSHA256: checkers.SHA256(input)}
	if req.Encoding == EncodingBase64 {
		l.Encoding = EncodingBase64
	}
	if strings.HasPrefix(req.Agent, s.house) {
		l.Seed = true
		if !strings.Contains(l.LicenseTerms, "seed=true") {
			l.LicenseTerms = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l.LicenseTerms+" | seed=true (house agent disclosed)"), "|"))
			l.LicenseTerms = strings.TrimPrefix(l.LicenseTerms, "| ")
		}
	}
	var source []byte
	switch lv := req.VerificationLevel; {
	case lv == 4:
		return nil, nil, fault.New(fault.Invalid, ECodeLevelReserved, "verification level 4 (cryptographic proof) is reserved and not implemented")
	case lv == 3:
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidLevel, "level 3 is earned: a level-1 listing whose checker passes %d replays with no failure", SamplesForLevel3)
	case lv < 0 || lv > 4:
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidLevel, "verification_level is 1 (with a checker) or 2 (with a bond), or left out")
	case lv == 1 && req.Checker == nil:
		return nil, nil, fault.New(fault.Invalid, ECodeCheckerRequired, "level 1 needs a checker")
	case lv == 2 && req.Checker != nil:
		return nil, nil, fault.New(fault.Invalid, ECodeInvalidLevel, "a listing with a checker is level 1; leave out the checker for level 2")
	}
	if c := req.Checker; c != nil {
		ref := checkers.Ref{Kind: c.Kind, SHA256: c.SHA256, Fuel: c.Fuel, MemoryMiB: c.MemoryMiB}
		if ref.Kind == "" {
			ref.Kind = checkers.KindWasm
			if c.Source != "" {
				ref.Kind = checkers.KindPython
			}
		}
		switch ref.Kind {
		case checkers.KindPython:
			if c.Source == "" || c.SHA256 != "" {
				return nil, nil, fault.New(fault.Invalid, ECodeInvalidChecker, "a python checker is given as source, without sha256")
			}
			if len(c.Source) > MaxArtifactBytes {
				return nil, nil, fault.New(fault.TooLarge, ECodeCheckerTooLarge, "a python checker is at most %d bytes", MaxArtifactBytes)
			}
			if !utf8.ValidString(c.Source) || strings.ContainsRune(c.Source, 0) {
				return nil, nil, fault.New(fault.Invalid, ECodeInvalidChecker, "a python checker's source is valid UTF-8 with no NUL")
			}
			source = []byte(c.Source)
			ref.SHA256 = checkers.SHA256(source)
			// The checker sees the artifact as its listing's type: a code
			// artifact runs, any other is given as artifact (and data).
			ref.ArtifactType = req.ArtifactType
		case checkers.KindWasm:
			if c.Source != "" {
				return nil, nil, fault.New(fault.Invalid, ECodeInvalidChecker, "a wasm checker is named by sha256; upload it with POST /checkers first")
			}
		default:
			return nil, nil, fault.New(fault.Invalid, ECodeUnsupportedCheckerKind, "checker kind %q is not supported: python or wasm", ref.Kind)
		}
		if err := ref.Validate(); err != nil {
			return nil, nil, fault.New(fault.Invalid, ECodeInvalidChecker, "%v", err)
		}
		l.Checker = &ref
		l.Level = 1
	} else {
		l.Level = 2
		l.Bond = Bond(price)
	}
	return l, source, nil
}

// runChecker replays a listing's checker on its artifact, with evidence
// when a challenger gave some.
func (s *Service) runChecker(ctx context.Context, ref checkers.Ref, artifact, evidence []byte) (wasm.Outcome, error) {
	if s.runner == nil {
		return wasm.Outcome{}, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	}
	out, err := s.runner.Run(ctx, ref, wasm.Input{Artifact: artifact, Evidence: evidence})
	return out, runnerError(ctx, ref, err)
}

// runnerError turns a Runner's error for ref into the market's.
func runnerError(ctx context.Context, ref checkers.Ref, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, checkers.ErrNotFound):
		return fault.New(fault.Invalid, ECodeUnknownChecker, "no checker with sha256 %s; upload it with POST /checkers first", ref.SHA256)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fault.New(fault.Invalid, ECodeInvalidChecker, "%v", err)
}

// runCheckers replays jobs, in parallel when the runner is a BatchRunner,
// and returns their outcomes in order, with whether each came from the
// memo.
//
// # Errors
//
// The first job's error, as runChecker gives it.
func (s *Service) runCheckers(ctx context.Context, jobs []checkers.Job) ([]wasm.Outcome, []bool, error) {
	if s.runner == nil {
		return nil, nil, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	}
	outs, memo := make([]wasm.Outcome, len(jobs)), make([]bool, len(jobs))
	br, ok := s.runner.(BatchRunner)
	if !ok || len(jobs) < 2 {
		for i, j := range jobs {
			o, m, err := s.runOnce(ctx, j.Ref, j.Input.Artifact)
			if err != nil {
				return nil, nil, err
			}
			outs[i], memo[i] = o, m
		}
		return outs, memo, nil
	}
	results, err := br.RunJobs(ctx, jobs, checkers.BatchOptions{})
	if err != nil {
		return nil, nil, runnerError(ctx, checkers.Ref{}, err)
	}
	for i, r := range results {
		if err := runnerError(ctx, jobs[i].Ref, r.Err); err != nil {
			return nil, nil, err
		}
		outs[i], memo[i] = r.Outcome, r.Memo
	}
	return outs, memo, nil
}

// keepSource keeps a listing's Python checker source for a: through
// Sources, or in the store.
func (s *Service) keepSource(ctx context.Context, a principal.Actor, source []byte) error {
	if s.sources != nil {
		return s.sources.KeepSource(ctx, a, source)
	}
	return s.st.Update(ctx, func(tx store.Tx) error { _, err := checkers.PutBytes(tx, source); return err })
}

// Publish lists an artifact. With a checker, the checker is replayed on
// the artifact first: a pass publishes at level 1, anything else refuses
// the listing. Without one, the listing is level 2 and its bond is
// escrowed from the seller's wallet.
//
// # Errors
//
// missing_field, invalid_agent, invalid_title, invalid_problem_statement,
// invalid_artifact_type, invalid_amount, level_reserved, invalid_level,
// checker_required, invalid_checker, unsupported_checker_kind,
// unknown_checker (400); artifact_too_large (413); checker_failed (422,
// with the outcome); insufficient_funds (409, the bond);
// upload_quota_exceeded (429) for a Python checker over the publisher's
// upload quota (Config.Sources); checkers_unavailable (503);
// idempotency_conflict.
func (s *Service) Publish(ctx context.Context, a principal.Actor, req PublishRequest, i idem.Request) (Reply, error) {
	if req.Agent != "" {
		if err := validAgent("agent", req.Agent); err != nil {
			return Reply{}, err
		}
		if err := s.actsFor(a, req.Agent); err != nil {
			return Reply{}, err
		}
	}
	l, source, err := s.publishTerms(req)
	if err != nil {
		return Reply{}, err
	}
	if err := s.actsFor(a, req.Agent); err != nil {
		return Reply{}, err
	}
	art := bytes.TrimSpace(req.Artifact)
	var out *wasm.Outcome
	if l.Checker != nil {
		if source != nil {
			// The runner reads the source from the checker registry;
			// keep it there before the replay. Sources are
			// content-addressed and immutable, so one kept for a refused
			// listing harms nothing; it is charged to the publisher's
			// upload quota all the same.
			if err := s.keepSource(ctx, a, source); err != nil {
				return Reply{}, err
			}
		}
		o, err := s.runChecker(ctx, *l.Checker, l.checkerInput(art), nil)
		if err != nil {
			return Reply{}, err
		}
		if o.Kind == wasm.KindInvalidChecker {
			return Reply{}, fault.New(fault.Invalid, ECodeInvalidChecker, "the checker was rejected: %s", o.Detail)
		}
		if !o.Pass {
			return Reply{}, fault.New(fault.Unprocessable, ECodeCheckerFailed, "the checker did not pass the artifact, so it is not listed: %s (exit %d): %s%s",
				o.Kind, o.ExitCode, truncate(o.Stderr, 400), truncate(o.Detail, 200))
		}
		o = signedOutcome(o)
		out = &o
	}
	if err := s.SettleDue(ctx); err != nil {
		return Reply{}, err
	}
	now := s.now().UTC()
	l.ID = "lst_" + s.newID()
	l.CreatedAt = now
	search := searchDoc{Fingerprint: l.Fingerprint, Tokens: Tokens(l.Problem), Constraints: Constraints(l.Problem)}
	return idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		l := *l
		if err := touchAgent(tx, l.Seller, now); err != nil {
			return Reply{}, err
		}
		if l.Bond > 0 {
			if err := debit(tx, l.Seller, l.Bond, "the bond of "+l.ID); err != nil {
				return Reply{}, err
			}
			if err := ledger.Post(tx, ledger.Transfer{ID: l.ID + ".bond", From: ledger.AgentAccount(l.Seller), To: bondAccount(l.ID),
				Amount: int64(l.Bond), Currency: Currency, Memo: "bond " + l.ID, At: now}); err != nil {
				return Reply{}, err
			}
			l.BondHeld = true
		}
		rid := receiptID(l.ID, "listing")
		rc, err := s.sign(tx, KindListing, rid, now, withActor(a, map[string]any{
			"listing_id": l.ID, "seller": l.Seller, "fingerprint": l.Fingerprint, "artifact_sha256": l.ArtifactSHA256,
			"price_usd": l.Price, "verification_level": l.Level, "bond_usd": l.Bond, "checker": l.Checker,
			"replay": out, "verification_basis": basisOf(&l), "published_at": now.Format(time.RFC3339Nano),
		}), l.Seller)
		if err != nil {
			return Reply{}, err
		}
		l.Receipts = []string{rid}
		if err := addListing(tx, &l, art, &search); err != nil {
			return Reply{}, err
		}
		v, err := s.view(tx, &l, now)
		if err != nil {
			return Reply{}, err
		}
		body, err := receipt.Marshal(Published{Listing: v, Replay: out, Receipt: rc})
		return Reply{Body: body, Created: true}, err
	})
}

func basisOf(l *Listing) string {
	switch l.Level {
	case 1:
		return "level 1: the seller's checker passed a sandboxed replay on the artifact before publication"
	case 3:
		return "level 3: the seller's checker passed the publication replay and replays run for at least 3 distinct buyers, none the seller nor a house agent of a house seller, on the artifact each received, with no failure"
	}
	return "level 2: no checker; a bond of max(20% x price, $0.50) is escrowed from the seller and forfeited to an upheld challenger"
}

type searchDoc struct {
	Fingerprint string       `json:"fingerprint"`
	Tokens      []string     `json:"tokens"`
	Constraints []Constraint `json:"constraints"`
}

// relevel takes back level 3 from a listing that earned it before level 3
// counted distinct buyers (by any three passing replays): it is level 1
// until buyers confirm it.
func (l *Listing) relevel() {
	if l.Level == 3 && l.ConfirmedBuyers < SamplesForLevel3 {
		l.Level = 1
	}
}

func (s *Service) view(tx store.Tx, l *Listing, now time.Time) (View, error) {
	p, err := s.profile(tx, l.Seller, now)
	if err != nil {
		return View{}, err
	}
	bond := USD(0)
	if l.BondHeld {
		bond = l.Bond
	}
	return View{ListingID: l.ID, Fingerprint: l.Fingerprint, Title: l.Title, ArtifactType: l.ArtifactType, Price: l.Price,
		EstRecompute: l.EstRecompute, Level: l.Level, HasChecker: l.Checker != nil, Bond: bond,
		FreshnessDays: round2(now.Sub(l.CreatedAt).Hours() / 24), LicenseTerms: l.LicenseTerms, Status: l.Status, Seed: l.Seed,
		ArtifactSHA256: l.ArtifactSHA256, ArtifactEncoding: l.encoding(), Checker: l.Checker, ReplaysPassed: l.ReplaysPassed, ReplaysFailed: l.ReplaysFailed,
		ConfirmedBuyers: l.ConfirmedBuyers, ChallengeHours: Window(l.Level, l.Price).Hours(), Seller: p}, nil
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// Get returns a listing, artifact withheld.
func (s *Service) Get(ctx context.Context, id string) (View, error) {
	now := s.now().UTC()
	if err := s.SettleDue(ctx); err != nil {
		return View{}, err
	}
	var v View
	err := s.st.View(ctx, func(tx store.Tx) error {
		l, err := loadListing(tx, id)
		if err != nil {
			return err
		}
		v, err = s.view(tx, l, now)
		return err
	})
	return v, err
}

// DeactivateRequest is deactivate_listing's input.
type DeactivateRequest struct {
	Agent string `json:"agent"`
}

// Deactivate retires a listing: nothing more is sold. A bond comes back to
// the seller at once when no challenge window is open, else when the last
// one closes.
//
// # Errors
//
// listing_not_found (404), not_seller (403), listing_not_active (409).
func (s *Service) Deactivate(ctx context.Context, a principal.Actor, id string, req DeactivateRequest, i idem.Request) (Reply, error) {
	if err := validAgent("agent", req.Agent); err != nil {
		return Reply{}, err
	}
	if err := s.actsFor(a, req.Agent); err != nil {
		return Reply{}, err
	}
	now := s.now().UTC()
	return idem.Mutate(ctx, s.st, i, func(tx store.Tx) (Reply, error) {
		if err := s.settleListing(tx, id, now); err != nil {
			return Reply{}, err
		}
		l, err := loadListing(tx, id)
		if err != nil {
			return Reply{}, err
		}
		if l.Seller != req.Agent {
			return Reply{}, fault.New(fault.Forbidden, ECodeNotSeller, "only the seller of %s may deactivate it", id)
		}
		if l.Status != ListingActive {
			return Reply{}, fault.New(fault.Conflict, ECodeListingNotActive, "listing %s is %s", id, l.Status)
		}
		l.Status = ListingRetired
		if err := unindexListing(tx, id); err != nil {
			return Reply{}, err
		}
		returned, err := s.returnBondIfClear(tx, l, now)
		if err != nil {
			return Reply{}, err
		}
		if err := putListing(tx, l); err != nil {
			return Reply{}, err
		}
		v, err := s.view(tx, l, now)
		if err != nil {
			return Reply{}, err
		}
		body, err := json.Marshal(map[string]any{"listing": v, "bond_returned_usd": returned})
		return Reply{Body: body}, err
	})
}

// returnBondIfClear returns a retired listing's bond when no purchase of
// it has an open window. It does not store l.
func (s *Service) returnBondIfClear(tx store.Tx, l *Listing, now time.Time) (USD, error) {
	if l.Status != ListingRetired || !l.BondHeld {
		return 0, nil
	}
	open, err := openPurchases(tx, l.ID, true)
	if err != nil {
		return 0, err
	}
	if len(open) > 0 {
		return 0, nil
	}
	if err := ledger.Post(tx, ledger.Transfer{ID: l.ID + ".bond-return", From: bondAccount(l.ID), To: ledger.AgentAccount(l.Seller),
		Amount: int64(l.Bond), Currency: Currency, Memo: "bond returned on clean retirement of " + l.ID, At: now}); err != nil {
		return 0, err
	}
	l.BondHeld = false
	return l.Bond, nil
}

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
