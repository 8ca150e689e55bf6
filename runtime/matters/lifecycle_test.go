package matters_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/matters"
)

// at brings a new Matter (deadline in one hour) to state and returns its
// id: open (no solver), invited, accepted, judged, settled, disputed or
// expired.
func (e *env) at(tb testing.TB, state string) string {
	tb.Helper()
	ctx := context.Background()
	switch state {
	case "open":
		return decodeChanged(tb, must(e.Open(ctx, e.req, openReq(e.key())))).Matter.ID
	case "invited":
		return e.assigned(tb)
	case "accepted":
		return e.ready(tb)
	case "judged":
		return e.judged(tb)
	case "settled":
		id := e.judged(tb)
		must(e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()}))
		return id
	case "disputed":
		id := e.ready(tb)
		must(e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "r", ActionDigest: digest, IdempotencyKey: e.key()}))
		return id
	case "expired":
		id := e.ready(tb)
		e.clock.Advance(time.Hour)
		must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: e.key()}))
		return id
	}
	tb.Fatalf("no state %q", state)
	return ""
}

// ops are the five transitions on a Matter, each by its rightful actor.
func (e *env) ops() map[string]func(id string) (matters.Reply, error) {
	ctx := context.Background()
	tr := true
	return map[string]func(string) (matters.Reply, error){
		"assign": func(id string) (matters.Reply, error) {
			return e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: e.key()})
		},
		"accept": func(id string) (matters.Reply, error) {
			return e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: e.key()})
		},
		"verdict": func(id string) (matters.Reply, error) { return e.Verdict(ctx, e.sol, verdict(id, e.key())) },
		"settle": func(id string) (matters.Reply, error) {
			return e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()})
		},
		"dispute": func(id string) (matters.Reply, error) {
			return e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "r", ActionDigest: digest, IdempotencyKey: e.key()})
		},
	}
}

// Every transition from every state: the seed's lifecycle, and the code
// each refused edge answers. "" is success, with the state it leads to.
func TestService_LifecycleEdges(t *testing.T) {
	const (
		notOpen       = "matter_not_open"
		notSettleable = "matter_not_settleable"
		notDisputable = "matter_not_disputable"
	)
	type want struct{ code, state string }
	table := map[string]map[string]want{
		"open": {"assign": {"", "open"}, "accept": {"solver_not_assigned", ""}, "verdict": {"solver_not_assigned", ""},
			"settle": {notSettleable, ""}, "dispute": {"", "disputed"}},
		"invited": {"assign": {"solver_already_assigned", ""}, "accept": {"", "open"}, "verdict": {"solver_not_accepted", ""},
			"settle": {notSettleable, ""}, "dispute": {"", "disputed"}},
		"accepted": {"assign": {"solver_already_assigned", ""}, "accept": {"solver_not_accepting", ""}, "verdict": {"", "judged"},
			"settle": {notSettleable, ""}, "dispute": {"", "disputed"}},
		"judged": {"assign": {notOpen, ""}, "accept": {notOpen, ""}, "verdict": {notOpen, ""},
			"settle": {"", "settled"}, "dispute": {"", "disputed"}},
		"settled": {"assign": {notOpen, ""}, "accept": {notOpen, ""}, "verdict": {notOpen, ""},
			"settle": {notSettleable, ""}, "dispute": {notDisputable, ""}},
		"disputed": {"assign": {notOpen, ""}, "accept": {notOpen, ""}, "verdict": {notOpen, ""},
			"settle": {notSettleable, ""}, "dispute": {notDisputable, ""}},
		"expired": {"assign": {notOpen, ""}, "accept": {notOpen, ""}, "verdict": {notOpen, ""},
			"settle": {notSettleable, ""}, "dispute": {notDisputable, ""}},
	}
	ctx := context.Background()
	for state, row := range table {
		for op, w := range row {
			t.Run(state+"/"+op, func(t *testing.T) {
				e := mustEnv(t)
				id := e.at(t, state)
				v0, err := e.Get(ctx, e.req, id)
				if err != nil {
					t.Fatal(err)
				}
				r, err := e.ops()[op](id)
				wantCode(t, err, w.code)
				v, err := e.Get(ctx, e.req, id)
				if err != nil {
					t.Fatal(err)
				}
				if w.code != "" {
					if mustJSON(t, v0.Private) != mustJSON(t, v.Private) {
						t.Fatalf("a refused %s changed the matter", op)
					}
					return
				}
				if got := string(v.Private.Status); got != w.state {
					t.Fatalf("status %s, want %s", got, w.state)
				}
				if c := decodeChanged(t, r); !strings.HasSuffix(c.Receipt.ID, ":"+v.Private.Receipts[len(v.Private.Receipts)-1]) {
					t.Fatalf("the answer's receipt %s is not the chain's last", c.Receipt.ID)
				}
			})
		}
	}
}

// At the deadline an open Matter expires whichever path evaluates it: a
// mutation fails with the code for the state it finds (expired), and the
// expiry commits with its receipt. A judged Matter does not expire.
func TestService_DeadlineEdges(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ state, op, code, after string }{
		{"open", "assign", "matter_not_open", "expired"},
		{"invited", "accept", "matter_not_open", "expired"},
		{"accepted", "verdict", "matter_not_open", "expired"},
		{"accepted", "settle", "matter_not_settleable", "expired"},
		{"accepted", "dispute", "matter_not_disputable", "expired"},
		{"judged", "settle", "", "settled"},
		{"judged", "dispute", "", "disputed"},
	} {
		t.Run(tc.state+"/"+tc.op, func(t *testing.T) {
			e := mustEnv(t)
			id := e.at(t, tc.state)
			e.clock.Advance(time.Hour) // exactly the deadline
			_, err := e.ops()[tc.op](id)
			wantCode(t, err, tc.code)
			v, err := e.Get(ctx, e.req, id)
			if err != nil || string(v.Private.Status) != tc.after {
				t.Fatalf("%v: status %s, want %s", err, v.Private.Status, tc.after)
			}
			rs, err := e.Receipts(ctx, e.req, id)
			if err != nil {
				t.Fatal(err)
			}
			var last matters.Subject
			if err := json.Unmarshal(rs[len(rs)-1].CredentialSubject, &last); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"expired": matters.KindExpired, "settled": matters.KindSettled, "disputed": matters.KindDisputed}[tc.after]
			if last.Kind != want {
				t.Fatalf("last receipt %s, want %s", last.Kind, want)
			}
		})
	}
	t.Run("TickLeavesJudged", func(t *testing.T) {
		e := mustEnv(t)
		id := e.at(t, "judged")
		e.clock.Advance(24 * time.Hour)
		var tk matters.Ticked
		_ = json.Unmarshal(must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "t"})).Body, &tk)
		if len(tk.Expired) != 0 {
			t.Fatalf("tick expired %d", len(tk.Expired))
		}
		if v, _ := e.Get(ctx, e.req, id); v.Private.Status != matters.StatusJudged {
			t.Fatal(v.Private.Status)
		}
	})
}
