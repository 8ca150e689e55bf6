package market

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/wasm"
)

// Profile is an agent's public numeric reputation.
type Profile struct {
	AgentID           string  `json:"agent_id"`
	TradesSold        int     `json:"trades_sold"`
	ChallengesLost    int     `json:"challenges_lost"`
	ChallengeLossRate float64 `json:"challenge_loss_rate"`
	StakeForfeitedUSD USD     `json:"stake_forfeited_usd"`
	AccountAgeDays    float64 `json:"account_age_days"`
	Seed              bool    `json:"seed"`
}

func (s *Service) profile(tx store.Tx, did string, now time.Time) (Profile, error) {
	a, ok, err := loadAgent(tx, did)
	if err != nil {
		return Profile{}, err
	}
	p := Profile{AgentID: did, TradesSold: a.TradesSold, ChallengesLost: a.ChallengesLost, StakeForfeitedUSD: a.StakeForfeited,
		Seed: strings.HasPrefix(did, s.house)}
	if n := a.TradesSold + a.ChallengesLost; n > 0 {
		p.ChallengeLossRate = round2(float64(a.ChallengesLost) / float64(n))
	}
	if ok {
		p.AccountAgeDays = round2(now.Sub(a.FirstSeen).Hours() / 24)
	}
	return p, nil
}

// AgentProfile is agent_profile: challenge_loss_rate is challenges lost
// over sales closed (settled or lost).
func (s *Service) AgentProfile(ctx context.Context, did string) (Profile, error) {
	if err := validAgent("agent", did); err != nil {
		return Profile{}, err
	}
	if err := s.SettleDue(ctx); err != nil {
		return Profile{}, err
	}
	var p Profile
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		p, err = s.profile(tx, did, s.now().UTC())
		return err
	})
	return p, err
}

// SearchRequest is search_listings' input: query or query_fingerprint,
// or neither to browse the active listings, newest first, a page at a
// time (Cursor).
type SearchRequest struct {
	Query            string `json:"query,omitempty"`
	QueryFingerprint string `json:"query_fingerprint,omitempty"`
	Limit            int    `json:"limit,omitempty"`
	// Cursor asks a browse for the page after the one whose NextCursor it
	// is; "" for the first page. A search takes none.
	Cursor string `json:"cursor,omitempty"`
}

// Result is one search result: a listing, and how well it matches the
// query (absent when browsing).
type Result struct {
	View
	Match *Match `json:"match,omitempty"`
}

// Results is search_listings' answer.
type Results struct {
	Results         []Result `json:"results"`
	Count           int      `json:"count"`
	NoReliableMatch bool     `json:"no_reliable_match"`
	Advisory        string   `json:"advisory,omitempty"`
	// NextCursor, when a browse has more listings than its page, is the
	// Cursor of the next page.
	NextCursor string `json:"next_cursor,omitempty"`
}

var fpRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Search finds active listings: exact fingerprint hits first, then by
// confidence. A query by fingerprint alone finds exact hits only. Without
// a query or a fingerprint it browses: every active listing, newest
// first, Limit to a page.
//
// # Errors
//
// invalid_fingerprint, invalid_query (a bad query, or a cursor that is
// not a browse's), invalid_limit (400).
func (s *Service) Search(ctx context.Context, req SearchRequest) (Results, error) {
	switch {
	case req.Limit < 0 || req.Limit > 100:
		return Results{}, fault.New(fault.Invalid, ECodeInvalidLimit, "limit is 1 to 100")
	case req.Query == "" && req.QueryFingerprint == "":
		return s.browse(ctx, req)
	case req.Cursor != "":
		return Results{}, fault.New(fault.Invalid, ECodeInvalidPrefix+"query",
			"cursor pages a browse (no query, no query_fingerprint); a search answers its best matches at once, up to limit (at most 100)")
	case req.QueryFingerprint != "" && !fpRE.MatchString(req.QueryFingerprint):
		return Results{}, fault.New(fault.Invalid, ECodeInvalidFingerprint, "query_fingerprint is the lowercase hex SHA-256 of the normalised token set")
	case validText("query", req.Query, MaxProblemBytes) != nil:
		return Results{}, validText("query", req.Query, MaxProblemBytes)
	case req.Limit < 0 || req.Limit > 100:
		return Results{}, fault.New(fault.Invalid, ECodeInvalidLimit, "limit is 1 to 100")
	}
	if req.Limit == 0 {
		req.Limit = 20
	}
	if err := s.SettleDue(ctx); err != nil {
		return Results{}, err
	}
	fp := req.QueryFingerprint
	var qt []string
	var qc []Constraint
	if req.Query != "" {
		qt, qc = Tokens(req.Query), Constraints(req.Query)
		if fp == "" {
			fp = Fingerprint(req.Query)
		}
	}
	now := s.now().UTC()
	out := Results{Results: []Result{}}
	var hits []hit
	err := s.st.View(ctx, func(tx store.Tx) error {
		tx = store.Bounded(tx, s.maxSearch, fault.New(fault.Unprocessable, ECodeScanLimit,
			"this search would examine more than %d records of the market: narrow it with more words, or search by query_fingerprint", s.maxSearch))
		var err error
		if req.Query == "" {
			hits, err = fpHits(tx, fp, nil)
		} else {
			hits, err = s.queryHits(tx, qt, qc, fp, req.Limit)
		}
		if err != nil {
			return err
		}
		slices.SortFunc(hits, hitOrder)
		for _, h := range hits {
			if len(out.Results) == req.Limit {
				break
			}
			l, err := loadListing(tx, h.id)
			if err != nil {
				return err
			}
			if l.Status != ListingActive {
				continue
			}
			if h.m == nil {
				d, err := searchRecord(tx, h.id)
				if err != nil {
					return err
				}
				m := Score(qt, qc, fp, d.Tokens, d.Constraints, d.Fingerprint)
				h.m = &m
			}
			v, err := s.view(tx, l, now)
			if err != nil {
				return err
			}
			out.Results = append(out.Results, Result{View: v, Match: h.m})
		}
		return nil
	})
	out.Count = len(out.Results)
	out.NoReliableMatch = !slices.ContainsFunc(out.Results, func(r Result) bool {
		return r.Match.Class == ClassExact || r.Match.Class == ClassStrong
	})
	if out.NoReliableMatch {
		out.Advisory = "no exact or strong match: treat these results as leads and verify them before buying"
	}
	return out, err
}

// browse answers a SearchRequest without a query: the active listings,
// newest first (by publication time, then by id), req.Limit (default 20)
// after req.Cursor. It reads every listing record, as Stats does: a page
// costs in proportion to the market, not to the page, and a market of
// more than MaxBrowseRecords listings refuses it (scan_limit_exceeded),
// leaving search.
func (s *Service) browse(ctx context.Context, req SearchRequest) (Results, error) {
	after, err := parseCursor(req.Cursor)
	if err != nil {
		return Results{}, err
	}
	if req.Limit == 0 {
		req.Limit = 20
	}
	if err := s.SettleDue(ctx); err != nil {
		return Results{}, err
	}
	now := s.now().UTC()
	out := Results{Results: []Result{}}
	err = s.st.View(ctx, func(tx store.Tx) error {
		tx = store.Bounded(tx, s.maxBrowse, fault.New(fault.Unprocessable, ECodeScanLimit,
			"browsing would examine more than %d records: the market has too many listings to browse; search by words or query_fingerprint instead", s.maxBrowse))
		var page []cursor
		err := eachListing(tx, func(v []byte) error {
			var l struct {
				ID        string    `json:"listing_id"`
				Status    string    `json:"status"`
				CreatedAt time.Time `json:"created_at"`
			}
			if err := json.Unmarshal(v, &l); err != nil {
				return err
			}
			if c := (cursor{l.CreatedAt.UnixNano(), l.ID}); l.Status == ListingActive && (req.Cursor == "" || c.before(after)) {
				page = append(page, c)
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(page, func(a, b cursor) int {
			if b.before(a) {
				return -1
			} else if a.before(b) {
				return 1
			}
			return 0
		})
		if len(page) > req.Limit {
			page = page[:req.Limit]
			out.NextCursor = page[req.Limit-1].String()
		}
		for _, c := range page {
			l, err := loadListing(tx, c.id)
			if err != nil {
				return err
			}
			v, err := s.view(tx, l, now)
			if err != nil {
				return err
			}
			out.Results = append(out.Results, Result{View: v})
		}
		return nil
	})
	out.Count = len(out.Results)
	return out, err
}

// cursor is a place in a browse's order: a listing's publication time
// and id. Its text, a browse's next_cursor, is "<unix nanoseconds>.<id>".
type cursor struct {
	at int64
	id string
}

func (c cursor) String() string { return strconv.FormatInt(c.at, 10) + "." + c.id }

// before reports whether c comes after d in a browse (is older): newest
// first, and by id, descending, among listings of one instant.
func (c cursor) before(d cursor) bool {
	return c.at < d.at || c.at == d.at && c.id < d.id
}

// parseCursor reads a browse's cursor; "" is the first page.
func parseCursor(s string) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	at, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(id, "lst_") || validAgent("cursor", id) != nil {
		return cursor{}, fault.New(fault.Invalid, ECodeInvalidPrefix+"query",
			"cursor %q is not a next_cursor this market gave: browse from the first page, without a cursor", truncate(s, 80))
	}
	return cursor{n, id}, nil
}

// Stats is marketplace_stats: live totals. Organic figures leave out
// house agents (HousePrefix).
type Stats struct {
	ListingsActive    int            `json:"listings_active"`
	ListingsTotal     int            `json:"listings_total"`
	ListingsByLevel   map[string]int `json:"listings_by_level"`
	SeedListings      int            `json:"seed_listings"`
	Purchases         int            `json:"purchases"`
	OrganicPurchases  int            `json:"organic_purchases"`
	PurchasesHeld     int            `json:"purchases_held"`
	PurchasesSettled  int            `json:"purchases_settled"`
	PurchasesRefunded int            `json:"purchases_refunded"`
	ChallengesOpen    int            `json:"challenges_open"`
	ChallengesUpheld  int            `json:"challenges_upheld"`
	ChallengesDenied  int            `json:"challenges_rejected"`
	VolumeSettledUSD  USD            `json:"volume_settled_usd"`
	OrganicVolumeUSD  USD            `json:"organic_volume_settled_usd"`
	FeesUSD           USD            `json:"fees_usd"`
	HeldUSD           USD            `json:"held_usd"`
	BondsEscrowedUSD  USD            `json:"bonds_escrowed_usd"`
	// MoneyInMarketUSD is all the money the market holds (deposits less
	// withdrawals): wallets, holds, bonds and fees, at most MaxTotal.
	MoneyInMarketUSD USD `json:"money_in_market_usd"`
	// BuyerConfirmations sums, over active listings, the distinct
	// independent buyers whose replays confirmed them (confirmed_buyers).
	BuyerConfirmations int    `json:"buyer_confirmations"`
	HousePrefix        string `json:"house_prefix"`
}

// Stats returns live totals.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	if err := s.SettleDue(ctx); err != nil {
		return Stats{}, err
	}
	st := Stats{ListingsByLevel: map[string]int{}, HousePrefix: s.house}
	// Sums over the market's history (volume, fees) are not bounded by
	// MaxTotal as balances are; one that passes int64 is an error, never
	// a wrapped number.
	add := func(dst *USD, v USD) error {
		if *dst > math.MaxInt64-v {
			return fault.New(fault.Internal, ECodeStatsOverflow, "a market total passed the range of int64 micro-USD")
		}
		*dst += v
		return nil
	}
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		if st.MoneyInMarketUSD, err = s.total(tx); err != nil {
			return err
		}
		err = eachListing(tx, func(v []byte) error {
			var l Listing
			if err := json.Unmarshal(v, &l); err != nil {
				return err
			}
			l.relevel()
			st.ListingsTotal++
			if l.Status == ListingActive {
				st.ListingsActive++
				st.BuyerConfirmations += l.ConfirmedBuyers
				st.ListingsByLevel[string(rune('0'+l.Level))]++
			}
			if l.Seed {
				st.SeedListings++
			}
			if l.BondHeld {
				return add(&st.BondsEscrowedUSD, l.Bond)
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = eachPurchase(tx, func(v []byte) error {
			var p Purchase
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			organic := !strings.HasPrefix(p.Buyer, s.house)
			st.Purchases++
			if organic {
				st.OrganicPurchases++
			}
			switch p.Status {
			case PurchaseHeld, PurchaseChallenged:
				st.PurchasesHeld++
				if err := add(&st.HeldUSD, p.Price); err != nil {
					return err
				}
				return add(&st.HeldUSD, p.Fee)
			case PurchaseSettled:
				st.PurchasesSettled++
				if err := add(&st.VolumeSettledUSD, p.Price); err != nil {
					return err
				}
				if err := add(&st.FeesUSD, p.Fee); err != nil {
					return err
				}
				if organic {
					return add(&st.OrganicVolumeUSD, p.Price)
				}
			case PurchaseRefunded:
				st.PurchasesRefunded++
			}
			return nil
		})
		if err != nil {
			return err
		}
		return eachChallenge(tx, func(v []byte) error {
			var c Challenge
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			switch c.Status {
			case ChallengeOpen:
				st.ChallengesOpen++
			case ChallengeUpheld:
				st.ChallengesUpheld++
			case ChallengeRejected:
				st.ChallengesDenied++
			}
			return nil
		})
	})
	return st, err
}

// TickRequest is the operator's tick: settle what is due and replay up to
// Samples random listings with checkers.
type TickRequest struct {
	Samples int `json:"samples,omitempty"`
}

// Ticked is what a tick did.
type Ticked struct {
	Settled  int      `json:"settled"`
	Sampled  []string `json:"sampled"`
	Promoted []string `json:"promoted"`
	Pulled   []string `json:"pulled"`
	// PaidBack counts refunds paid back on a rail paid per request that
	// were owed when the tick began.
	PaidBack int `json:"paid_back,omitempty"`
	// PaidOut counts withdrawals paid out on a rail that settles
	// remotely that were owed when the tick began.
	PaidOut int `json:"paid_out,omitempty"`
	// Intents is what the tick did with the payments left unresolved on
	// a rail that settles remotely (x402).
	Intents *rail.Resolution `json:"intents,omitempty"`
}

// Tick settles every purchase whose window has closed and replays up to
// req.Samples random active listings that have a checker: a scheduler
// calls it, and so can an operator or a test.
func (s *Service) Tick(ctx context.Context, req TickRequest) (Ticked, error) {
	if req.Samples < 0 || req.Samples > 1000 {
		return Ticked{}, fault.New(fault.Invalid, ECodeInvalidSamples, "samples is 0 to 1000")
	}
	t := Ticked{Sampled: []string{}, Promoted: []string{}, Pulled: []string{}}
	n, err := s.settleDue(ctx)
	t.Settled = n
	if err != nil {
		return t, err
	}
	// On a rail that settles remotely: the payments a crash or a lost
	// answer left unresolved, then the refunds still owed. What the rail
	// cannot do now is reported after the rest of the tick has run.
	var owed error
	if s.pay != nil {
		res, err := s.pay.Resolve(ctx)
		if err != nil {
			return t, err
		}
		t.Intents = &res
		t.PaidBack, owed = s.PayBack(ctx)
		var outErr error
		if t.PaidOut, outErr = s.PayOut(ctx); outErr != nil {
			owed = firstOf(owed, outErr)
		}
	}
	if req.Samples == 0 {
		return t, owed
	}
	var ids []string
	err = s.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(keyListing, false, func(k string, v []byte) error {
			var l Listing
			if err := json.Unmarshal(v, &l); err != nil {
				return err
			}
			if l.Status == ListingActive && l.Checker != nil {
				ids = append(ids, l.ID)
			}
			return nil
		})
	})
	if err != nil {
		return t, err
	}
	// Pick the samples, replay them together (in parallel when the runner
	// batches), then record each.
	var picked []string
	for len(ids) > 0 && len(picked) < req.Samples {
		j := s.rand(len(ids))
		picked = append(picked, ids[j])
		ids = append(ids[:j], ids[j+1:]...)
	}
	jobs := make([]checkers.Job, len(picked))
	for i, id := range picked {
		ref, art, err := s.sampleInput(ctx, id)
		if err != nil {
			return t, err
		}
		jobs[i] = checkers.Job{Ref: ref, Input: wasm.Input{Artifact: art}}
	}
	outs, memo, err := s.runCheckers(ctx, jobs)
	if err != nil {
		return t, err
	}
	for i, id := range picked {
		r, err := s.recordSample(ctx, id, outs[i], memo[i], nil)
		if err != nil {
			return t, err
		}
		t.Sampled = append(t.Sampled, id)
		if r.Promoted {
			t.Promoted = append(t.Promoted, id)
		}
		if r.Pulled {
			t.Pulled = append(t.Pulled, id)
		}
	}
	return t, owed
}

// ReplayRequest is a buyer's request to replay a listing's checker.
type ReplayRequest struct {
	Agent string `json:"agent"`
}

// Replayed is one replay's result.
type Replayed struct {
	ListingID string `json:"listing_id"`
	Pass      bool   `json:"pass"`
	Level     int    `json:"verification_level"`
	Promoted  bool   `json:"promoted"`
	Pulled    bool   `json:"pulled"`
	// MemoHit: the outcome came from the memo of an earlier identical run,
	// not from a fresh run; it is recorded as one.
	MemoHit bool `json:"memo_hit"`
	// Confirmed: this replay counted toward level 3 as a confirmation by
	// a distinct independent buyer; NotCounted says why it did not.
	Confirmed       bool            `json:"confirmed"`
	NotCounted      string          `json:"not_counted,omitempty"`
	ConfirmedBuyers int             `json:"confirmed_buyers"`
	Refunded        []string        `json:"refunded"`
	Receipt         json.RawMessage `json:"receipt"`
}

// Replay replays a listing's checker, at a buyer's request, on the
// artifact the buyer received. A pass counts toward level 3 only as a
// confirmation by a distinct independent buyer (see independence); a
// failure pulls the listing as a failed sample does.
//
// # Errors
//
// missing_field, invalid_agent (400); listing_not_found,
// purchase_not_found (404); no_checker, listing_not_active (409).
func (s *Service) Replay(ctx context.Context, a principal.Actor, listingID string, req ReplayRequest) (Replayed, error) {
	if err := validAgent("agent", req.Agent); err != nil {
		return Replayed{}, err
	}
	if err := s.actsFor(a, req.Agent); err != nil {
		return Replayed{}, err
	}
	var p *Purchase
	err := s.st.View(ctx, func(tx store.Tx) error {
		pid, err := boughtBy(tx, listingID, req.Agent)
		if errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, ECodePurchaseNotFound, "only a buyer of %s may ask for a replay", listingID)
		} else if err != nil {
			return err
		}
		p, err = loadPurchase(tx, pid)
		return err
	})
	if err != nil {
		return Replayed{}, err
	}
	ref, art, err := s.sampleInput(ctx, listingID)
	if err != nil {
		return Replayed{}, err
	}
	o, memo, err := s.runOnce(ctx, ref, art)
	if err != nil {
		return Replayed{}, err
	}
	return s.recordSample(ctx, listingID, o, memo, &confirmation{buyer: req.Agent, who: s.identity(ctx, req.Agent),
		purchase: p, inputSHA256: checkers.SHA256(art), actor: a})
}

// runOnce replays ref on an artifact and says whether the outcome came
// from the memo: a runner that can say so (as *checkers.Runner does)
// is asked; any other runner's outcomes count as fresh runs.
func (s *Service) runOnce(ctx context.Context, ref checkers.Ref, art []byte) (wasm.Outcome, bool, error) {
	if s.runner == nil {
		return wasm.Outcome{}, false, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	}
	if jr, ok := s.runner.(jobRunner); ok {
		r := jr.Do(ctx, checkers.Job{Ref: ref, Input: wasm.Input{Artifact: art}})
		return r.Outcome, r.Memo, runnerError(ctx, ref, r.Err)
	}
	o, err := s.runChecker(ctx, ref, art, nil)
	return o, false, err
}

// jobRunner is a Runner that says whether an outcome was memoised;
// *checkers.Runner is one.
type jobRunner interface {
	Do(ctx context.Context, job checkers.Job) checkers.Result
}

var _ jobRunner = (*checkers.Runner)(nil)

// confirmation is a buyer's replay as level 3 weighs it.
type confirmation struct {
	buyer       string    // the agent id that asked
	who         string    // who stands behind it (Config.Identity)
	purchase    *Purchase // the buyer's purchase of the listing
	inputSHA256 string    // the artifact the replay ran on
	// actor is who asked, as the transport authenticated it.
	actor principal.Actor
}

// by is who asked for the replay c confirms: nobody for a sample.
func (c *confirmation) by() principal.Actor {
	if c == nil {
		return principal.Actor{}
	}
	return c.actor
}

// confirmRecord is a buyer's confirmation of a listing, as stored.
type confirmRecord struct {
	Buyer          string    `json:"buyer"`
	Purchase       string    `json:"purchase_id"`
	ArtifactSHA256 string    `json:"artifact_sha256"`
	MemoHit        bool      `json:"memo_hit"`
	Receipt        string    `json:"receipt"`
	At             time.Time `json:"at"`
}

// independence returns why a passing replay for c does not count toward
// level 3 on l, or "" when it counts: the replay must run for a buyer who
// purchased l, is not its seller (by Config.Identity), is not a house
// agent when the seller is one, has not confirmed l before, and ran on
// the very artifact the purchase delivered.
func (s *Service) independence(ctx context.Context, tx store.Tx, l *Listing, c *confirmation) (string, error) {
	seller := s.identity(ctx, l.Seller)
	switch {
	case c.purchase == nil || c.purchase.ListingID != l.ID || c.purchase.Buyer != c.buyer:
		return "the replay was not asked for by a buyer of this listing", nil
	case c.buyer == l.Seller || c.who == seller:
		return "the buyer is the seller", nil
	case strings.HasPrefix(c.buyer, s.house) && strings.HasPrefix(l.Seller, s.house):
		return "the buyer is a house agent (" + s.house + "), as the seller is", nil
	case c.purchase.ArtifactSHA256 != l.ArtifactSHA256 || c.inputSHA256 != l.ArtifactSHA256:
		return "the replay did not run on the artifact the buyer received", nil
	}
	done, err := confirmed(tx, l.ID, c.who)
	if err != nil {
		return "", err
	}
	if done {
		return "this buyer has confirmed the listing already; each buyer counts once", nil
	}
	return "", nil
}

// sampleInput reads what a sample replay of listing id runs: its checker
// and its artifact as the checker sees it.
func (s *Service) sampleInput(ctx context.Context, id string) (checkers.Ref, []byte, error) {
	var (
		l   *Listing
		art []byte
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		if l, err = loadListing(tx, id); err != nil {
			return err
		}
		art, err = artifact(tx, id)
		return err
	})
	if err != nil {
		return checkers.Ref{}, nil, err
	}
	if l.Checker == nil {
		return checkers.Ref{}, nil, fault.New(fault.Conflict, ECodeNoChecker, "listing %s has no checker to replay", id)
	}
	if l.Status != ListingActive {
		return checkers.Ref{}, nil, fault.New(fault.Conflict, ECodeListingNotActive, "listing %s is %s", id, l.Status)
	}
	return *l.Checker, l.checkerInput(art), nil
}

// recordSample records a replay's outcome o on listing id: a sample's
// when c is nil, else a buyer's. A pass adds to replays_passed, and a
// buyer's pass that is independent (see independence) confirms the
// listing: level 1 becomes level 3 at SamplesForLevel3 confirming buyers
// with no failure. A failure pulls the listing and refunds every purchase
// whose window is open.
func (s *Service) recordSample(ctx context.Context, id string, o wasm.Outcome, memo bool, c *confirmation) (Replayed, error) {
	defer s.payBackOwed(ctx)
	o = signedOutcome(o)
	now := s.now().UTC()
	rid := "rpl-" + s.newID()
	by := ""
	if c != nil {
		by = c.buyer
	}
	var r Replayed
	err := s.st.Update(ctx, func(tx store.Tx) error {
		l, err := loadListing(tx, id)
		if err != nil {
			return err
		}
		r = Replayed{ListingID: id, Pass: o.Pass, Refunded: []string{}, MemoHit: memo}
		if l.Status != ListingActive {
			return fault.New(fault.Conflict, ECodeListingNotActive, "listing %s is %s", id, l.Status)
		}
		switch {
		case o.Pass:
			l.ReplaysPassed++
			r.NotCounted = "a sample replay by the market is not a buyer's confirmation"
			if c != nil {
				why, err := s.independence(ctx, tx, l, c)
				if err != nil {
					return err
				}
				r.NotCounted = why
			}
			if r.NotCounted == "" {
				r.Confirmed = true
				l.ConfirmedBuyers++
				if err := confirm(tx, id, c.who, confirmRecord{Buyer: c.buyer, Purchase: c.purchase.ID,
					ArtifactSHA256: c.inputSHA256, MemoHit: memo, Receipt: rid[4:], At: now}); err != nil {
					return err
				}
			}
			if l.Level == 1 && l.ConfirmedBuyers >= SamplesForLevel3 && l.ReplaysFailed == 0 {
				l.Level, r.Promoted = 3, true
			}
		case !o.Pass && o.Kind.Decides():
			l.ReplaysFailed++
			l.Status, r.Pulled = ListingPulled, true
			r.NotCounted = "the replay failed"
		default:
			r.NotCounted = "the replay decided nothing (" + string(o.Kind) + ")"
		}
		r.ConfirmedBuyers = l.ConfirmedBuyers
		if err := putListing(tx, l); err != nil {
			return err
		}
		if r.Pulled {
			if err := unindexListing(tx, id); err != nil {
				return err
			}
			open, err := openPurchases(tx, id, false)
			if err != nil {
				return err
			}
			for _, pid := range open {
				p, err := loadPurchase(tx, pid)
				if err != nil {
					return err
				}
				if err := s.refund(tx, p, "a sample replay of the seller's checker failed", now); err != nil {
					return err
				}
				r.Refunded = append(r.Refunded, pid)
				if err := updateAgent(tx, l.Seller, now, func(a *agentRecord) error { a.ChallengesLost++; return nil }); err != nil {
					return err
				}
			}
		}
		r.Level = l.Level
		body, err := s.sign(tx, KindReplay, rid[4:], now, withActor(c.by(), map[string]any{
			"listing_id": id, "requested_by": by, "artifact_sha256": l.ArtifactSHA256, "checker": l.Checker, "outcome": o,
			"memo_hit": r.MemoHit, "confirmed": r.Confirmed, "not_counted": r.NotCounted, "confirmed_buyers": l.ConfirmedBuyers,
			"verification_level": l.Level, "replays_passed": l.ReplaysPassed, "replays_failed": l.ReplaysFailed,
			"pulled": r.Pulled, "refunded": r.Refunded, "at": now.Format(time.RFC3339Nano),
		}), l.Seller, by)
		r.Receipt = body
		return err
	})
	return r, err
}
