package api

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/principal"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.t.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.t.Add(int64(d)) }

func TestLimiter_Take(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := newLimiter(Limits{Rates: map[RateClass]Rate{RateWrites: {N: 3, Per: time.Second}}, Now: clock.now})
	alice := principal.Actor{Kind: principal.ByDIDKey, Agent: "did:key:alice", Addr: "192.0.2.1"}
	anon := principal.Actor{Addr: "192.0.2.1"}
	for i := range 3 {
		if err := l.take(RateWrites, alice); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	err := l.take(RateWrites, alice)
	var later retryAfter
	if fault.KindOf(err) != fault.TooMany || fault.CodeOf(err) != codeRateLimited {
		t.Fatalf("the fourth request: %v, want rate_limited", err)
	}
	if !errors.As(err, &later) || later.RetryAfter() <= 0 || later.RetryAfter() > time.Second/3+time.Millisecond {
		t.Fatalf("the fourth request's wait: %v", err)
	}
	if !strings.Contains(fault.MessageOf(err), "at most 3 writes in 1s for this agent") {
		t.Errorf("message %q", fault.MessageOf(err))
	}
	// An anonymous caller at the same address has a count of its own, and
	// so do the other classes (none here: not limited).
	if err := l.take(RateWrites, anon); err != nil {
		t.Errorf("the address: %v", err)
	}
	if err := l.take(RateReads, alice); err != nil {
		t.Errorf("a class with no rate: %v", err)
	}
	// A refused request takes nothing: after the wait, one more.
	clock.advance(later.RetryAfter())
	if err := l.take(RateWrites, alice); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	if err := l.take(RateWrites, alice); err == nil {
		t.Errorf("a second request after one token's wait was let through")
	}
}

func TestLimiter_AddrOf(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	l := newLimiter(Limits{TrustedProxies: proxies})
	none := newLimiter(Limits{})
	for _, tc := range []struct {
		name string
		l    *limiter
		peer string
		xff  []string
		want string
	}{
		{"OK", none, "192.0.2.7", nil, "192.0.2.7"},
		{"OKForwardedIgnoredByDefault", none, "10.0.0.2", []string{"198.51.100.1"}, "10.0.0.2"},
		{"OKTrustedProxy", l, "10.0.0.2", []string{"198.51.100.1"}, "198.51.100.1"},
		{"OKSpoofedLeftHopsIgnored", l, "10.0.0.2", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"OKProxyChain", l, "10.0.0.2", []string{"6.6.6.6, 198.51.100.1, 10.1.1.1", "10.2.2.2"}, "198.51.100.1"},
		{"OKUntrustedPeerSpoofing", l, "192.0.2.9", []string{"198.51.100.1"}, "192.0.2.9"},
		{"OKGarbageHopStopsAtTheProxy", l, "10.0.0.2", []string{"198.51.100.1, not-an-ip"}, "10.0.0.2"},
		{"OKNoHeaderFromProxy", l, "10.0.0.2", nil, "10.0.0.2"},
		{"OKIPv6By64", none, "2001:db8:1:2:3:4:5:6", nil, "2001:db8:1:2::/64"},
		{"OKIPv4Mapped", none, "::ffff:192.0.2.7", nil, "192.0.2.7"},
		{"OKIPv6Proxy", l, "::1", []string{"2001:db8::1"}, "2001:db8::/64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fwd [][]byte
			for _, v := range tc.xff {
				fwd = append(fwd, []byte(v))
			}
			if got := tc.l.addrOf(netip.MustParseAddr(tc.peer), fwd); got != tc.want {
				t.Errorf("addrOf(%s, %q) = %s, want %s", tc.peer, tc.xff, got, tc.want)
			}
		})
	}
}

// TestServer_Limit: over its class's rate, a request is answered 429
// rate_limited with Retry-After before its body is read or its operation
// runs; refused credentials count against the client address; another
// class, and a class with no rate, are untouched.
func TestServer_Limit(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var ran atomic.Int64
	op := mutate(func(*server, *call, struct{}) (idem.Reply, error) {
		ran.Add(1)
		return idem.Reply{Body: []byte(`{}`)}, nil
	})
	rows := []route{
		{method: "POST", path: "/w", op: op, service: svcMeta, auth: RouteOpen},
		{method: "GET", path: "/r", op: view(func(*server, *call) (string, error) { return "read", nil }), service: svcMeta, auth: RouteOpen},
		{method: "POST", path: "/op", op: view(func(*server, *call) (string, error) { return "ran", nil }), service: svcMeta, auth: RouteOperator},
	}
	app, _ := newServer(Config{OperatorToken: "s3cret", Logger: slog.New(slog.DiscardHandler),
		Limits: Limits{Rates: map[RateClass]Rate{RateWrites: {N: 2, Per: time.Minute}}, Now: clock.now}}, rows)
	send := func(method, path, body string, header ...string) (int, string, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header.Get("Retry-After")
	}
	for range 2 {
		if st, b, _ := send("POST", "/w", "{}"); st != 200 {
			t.Fatalf("within the rate: %d %s", st, b)
		}
	}
	st, b, retry := send("POST", "/w", `{"not": "decoded"}`)
	if st != 429 || !strings.Contains(b, `"code":"rate_limited"`) || retry != "30" {
		t.Fatalf("over the rate: %d %s Retry-After %q", st, b, retry)
	}
	if ran.Load() != 2 {
		t.Errorf("the operation ran %d times, want 2", ran.Load())
	}
	// Reads have no rate here: a write's limit leaves them alone.
	if st, b, _ := send("GET", "/r", ""); st != 200 {
		t.Errorf("a read while writes are limited: %d %s", st, b)
	}
	// A refused credential is counted against the address (the same one:
	// app.Test's): the operator's row is a write, so it answers 429 now.
	if st, b, _ := send("POST", "/op", "{}", "Authorization", "Bearer wrong"); st != 429 {
		t.Errorf("a refused credential over the address's rate: %d %s", st, b)
	}
	// The operator is counted on its own.
	if st, b, _ := send("POST", "/op", "{}", "Authorization", "Bearer s3cret"); st != 200 {
		t.Errorf("the operator: %d %s", st, b)
	}
	clock.advance(30 * time.Second)
	if st, b, _ := send("POST", "/w", "{}"); st != 200 {
		t.Errorf("after Retry-After: %d %s", st, b)
	}
}

// TestLimiter_Enter: decisions take the server's places for decisions at
// once, and one more is refused 503 busy with a wait; other classes take
// none.
func TestLimiter_Enter(t *testing.T) {
	t.Parallel()
	l := newLimiter(Limits{ConcurrentDecisions: 2})
	var releases []func()
	for range 2 {
		release, err := l.enter(RateDecisions)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	_, err := l.enter(RateDecisions)
	var later retryAfter
	if fault.CodeOf(err) != codeBusy || fault.KindOf(err) != fault.Unavailable || !errors.As(err, &later) || later.RetryAfter() != time.Second {
		t.Fatalf("a third decision: %v, want 503 busy with a wait", err)
	}
	if release, err := l.enter(RateWrites); err != nil {
		t.Errorf("a write while decisions are full: %v", err)
	} else {
		release()
	}
	releases[0]()
	release, err := l.enter(RateDecisions)
	if err != nil {
		t.Fatalf("after one finished: %v", err)
	}
	release()
	releases[1]()
	if _, err := newLimiter(Limits{}).enter(RateDecisions); err != nil {
		t.Errorf("no bound: %v", err)
	}
}
