package api

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
)

// This file is the pipeline's limit step: every row's requests are
// counted per caller (principal.Actor.Counted: the agent that proved who
// it is, the operator, or an anonymous caller's client address) in the
// row's rate class, after the credentials are verified and before the
// body is read or the service called. A caller over its class's rate is
// answered 429 rate_limited with Retry-After.

// RateClass is how a row's requests are counted: the route table's rate
// column.
type RateClass string

// The classes. A row names one; a row that names none is a read when it
// is a GET and a write otherwise (route.rateClass).
const (
	RateReads     RateClass = "reads"     // what changes nothing: GETs, searches, /verify, MCP's transport
	RateWrites    RateClass = "writes"    // what changes state: contracts, trades, matters
	RateDecisions RateClass = "decisions" // what runs criteria or checkers: disputes, replays, challenges
	RateUploads   RateClass = "uploads"   // what stores a caller's bytes for good: checkers, listings
)

// RateClasses are the classes, in the order the documents list them.
var RateClasses = []RateClass{RateReads, RateWrites, RateDecisions, RateUploads}

// Rate is N requests in any Per on average, with a burst of N: a token
// bucket of N tokens refilled at N per Per.
type Rate struct {
	N   int
	Per time.Duration
}

// String is the rate as --limits writes it: "100/1s".
func (r Rate) String() string {
	if r.N <= 0 || r.Per <= 0 {
		return "off"
	}
	return strconv.Itoa(r.N) + "/" + shortDuration(r.Per)
}

// shortDuration writes d without a zero tail: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// DefaultRates are the rates assay serve runs with unless --limits says
// otherwise, per counted caller.
var DefaultRates = map[RateClass]Rate{
	RateReads:     {N: 100, Per: time.Second},
	RateWrites:    {N: 30, Per: time.Second},
	RateDecisions: {N: 60, Per: time.Minute},
	RateUploads:   {N: 10, Per: time.Minute},
}

// Limits are the rate limits a server applies.
type Limits struct {
	// Rates are the classes' rates; a class with none (or a zero Rate)
	// is not limited. The zero Limits limits nothing: api.New's default,
	// for tests; assay serve sets DefaultRates unless --limits says
	// otherwise.
	Rates map[RateClass]Rate
	// TrustedProxies are the peers whose X-Forwarded-For names the
	// client (clientAddr); none: the peer is the client, and the header
	// is ignored.
	TrustedProxies []netip.Prefix
	// ConcurrentDecisions bounds the requests of the decisions class that
	// run at once on this server, every caller together: one more is
	// answered 503 busy with Retry-After, before its body is read. It
	// bounds what waits for adjudicate's turns (each dispute holding its
	// parsed deliverable) and the sandbox's queue. 0: no bound.
	ConcurrentDecisions int
	// Now is the limits' clock; time.Now when nil.
	Now func() time.Time
}

// DefaultConcurrentDecisions is assay serve's ConcurrentDecisions unless
// --limits says otherwise: four times the decisions adjudicate runs at
// once (adjudicate.MaxTier0Slots), so that a turn never waits for want of
// a decision ready to take it.
const DefaultConcurrentDecisions = 4 * adjudicate.MaxTier0Slots

// maxCounted bounds how many callers the limits keep a count for, every
// class together. The least recently seen is dropped first: a count that
// was idle for its class's Per is full again, so dropping it changes
// nothing; only more than maxCounted callers active at once could win a
// fresh burst.
const maxCounted = 1 << 16

// limiter counts the rows' requests per caller and class.
type limiter struct {
	rates   map[RateClass]Rate
	proxies []netip.Prefix
	now     func() time.Time
	counts  *lru.Cache[string, *rate.Limiter]
	// decisions holds a token for each decision running; nil: no bound.
	decisions chan struct{}
}

func newLimiter(l Limits) *limiter {
	counts, err := lru.New[string, *rate.Limiter](maxCounted)
	if err != nil {
		panic("api: " + err.Error())
	}
	now := l.Now
	if now == nil {
		now = time.Now
	}
	rates := map[RateClass]Rate{}
	for c, r := range l.Rates {
		if r.N > 0 && r.Per > 0 {
			rates[c] = r
		}
	}
	lim := &limiter{rates: rates, proxies: l.TrustedProxies, now: now, counts: counts}
	if l.ConcurrentDecisions > 0 {
		lim.decisions = make(chan struct{}, l.ConcurrentDecisions)
	}
	return lim
}

// enter takes a place for a request of class among the decisions
// running, and returns what gives it back; a request of any other class
// takes none. With every place taken it is refused at once, 503 busy:
// the caller tries again, rather than waiting holding a connection.
func (l *limiter) enter(class RateClass) (release func(), err error) {
	if class != RateDecisions || l.decisions == nil {
		return func() {}, nil
	}
	select {
	case l.decisions <- struct{}{}:
		return func() { <-l.decisions }, nil
	default:
		return nil, &limited{wait: time.Second, err: fault.New(fault.Unavailable, codeBusy,
			"%d decisions (disputes, replays, challenges) are running on this server, its most at once; try again in 1 s", cap(l.decisions))}
	}
}

// retryAfter is an error that says when to try again: the API answers it
// with Retry-After (errorHandler).
type retryAfter interface {
	error
	RetryAfter() time.Duration
}

// limited is a request refused for its caller's rate, or for the
// server's decisions at once.
type limited struct {
	err  *fault.Error
	wait time.Duration
}

func (e *limited) Error() string             { return e.err.Error() }
func (e *limited) Unwrap() error             { return e.err }
func (e *limited) RetryAfter() time.Duration { return e.wait }

// take counts one request of class by a: nil when it is within the
// class's rate, else a *limited that says when the next one would be.
func (l *limiter) take(class RateClass, a principal.Actor) error {
	r, ok := l.rates[class]
	if !ok {
		return nil
	}
	key := string(class) + " " + a.Counted()
	lim, ok := l.counts.Get(key)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(float64(r.N)/r.Per.Seconds()), r.N)
		if prev, found, _ := l.counts.PeekOrAdd(key, lim); found {
			lim = prev
		}
	}
	now := l.now()
	res := lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait <= 0 {
		return nil
	}
	res.CancelAt(now)
	who := "this client address"
	if a.Kind != principal.Anonymous {
		who = "this agent"
		if a.IsOperator() {
			who = "the operator"
		}
	}
	return &limited{wait: wait, err: fault.New(fault.TooMany, codeRateLimited,
		"at most %d %s in %s for %s; try again in %d s", r.N, class, shortDuration(r.Per), who, retrySeconds(wait))}
}

// retrySeconds is a wait as Retry-After says it: whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// rateClass is the row's class: the column's, else a read for a GET and
// a write for anything else.
func (r *route) rateClass() RateClass {
	switch {
	case r.rate != "":
		return r.rate
	case r.method == fiber.MethodGet:
		return RateReads
	}
	return RateWrites
}

// limit is the pipeline's limit step for row r and actor a, whose
// credentials were verified. A request whose credentials were refused
// (refused) is counted against its client address, so that bad
// signatures are no way around the limits; the refusal is answered when
// the address is within its rate.
func (s *server) limit(r *route, a principal.Actor, refused error) error {
	if refused != nil {
		a = principal.Actor{Addr: a.Addr}
	}
	if err := s.limits.take(r.rateClass(), a); err != nil {
		return err
	}
	return refused
}

// clientAddr is the address the limits count an anonymous request by
// (addrOf).
func (l *limiter) clientAddr(c *fiber.Ctx) string {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return l.addrOf(peer, c.Request().Header.PeekAll(fiber.HeaderXForwardedFor))
}

// addrOf is the client address of a request from peer with the
// X-Forwarded-For fields forwarded: the peer's, unless the peer is a
// trusted proxy, when it is the nearest address of X-Forwarded-For that
// is not a trusted proxy, read from the right. The hops on the left are
// what the client wrote itself, and are never taken. An IPv6 address is
// counted by its /64, the block one host is usually given.
func (l *limiter) addrOf(peer netip.Addr, forwarded [][]byte) string {
	addr := peer.Unmap()
	if l.trusted(addr) {
		var hops []string
		for _, v := range forwarded {
			hops = append(hops, strings.Split(string(v), ",")...)
		}
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // what no trusted proxy writes: the last hop known stands
			}
			addr = hop.Unmap()
			if !l.trusted(addr) {
				break
			}
		}
	}
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

func (l *limiter) trusted(a netip.Addr) bool {
	for _, p := range l.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
