package matters_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/matters"
)

// judged brings a ready Matter to judged and returns its id.
func (e *env) judged(tb testing.TB) string {
	tb.Helper()
	id := e.ready(tb)
	if _, err := e.Verdict(context.Background(), e.sol, verdict(id, e.key())); err != nil {
		tb.Fatal(err)
	}
	return id
}

// assigned opens a Matter and assigns bob; returns its id.
func (e *env) assigned(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	id := decodeChanged(tb, must(e.Open(ctx, e.req, openReq(e.key())))).Matter.ID
	tr := true
	must(e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: e.key()}))
	return id
}

// For every scope: the same key and content replays the stored bytes (even
// after the state moved on); the same key with other content, including
// another Matter, is idempotency_conflict and changes nothing.
func TestService_Idempotency(t *testing.T) {
	ctx := context.Background()
	tr := true
	for _, tc := range []struct {
		name string
		// setup returns the first request and one with other content,
		// both to be sent with the same key.
		setup func(e *env) (first, other func(key string) (matters.Reply, error))
	}{
		{"Open", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			return func(k string) (matters.Reply, error) { return e.Open(ctx, e.req, openReq(k)) },
				func(k string) (matters.Reply, error) {
					r := openReq(k)
					r.Question = "something else"
					return e.Open(ctx, e.req, r)
				}
		}},
		{"Assign", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id := decodeChanged(t, must(e.Open(ctx, e.req, openReq(e.key())))).Matter.ID
			id2 := decodeChanged(t, must(e.Open(ctx, e.req, openReq(e.key())))).Matter.ID
			return func(k string) (matters.Reply, error) {
					return e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: k})
				}, func(k string) (matters.Reply, error) {
					return e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id2, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: k})
				}
		}},
		{"AssignOtherFields", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id := decodeChanged(t, must(e.Open(ctx, e.req, openReq(e.key())))).Matter.ID
			return func(k string) (matters.Reply, error) {
					return e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: k})
				}, func(k string) (matters.Reply, error) {
					return e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "human", Qualification: "x", ConflictFree: &tr, IdempotencyKey: k})
				}
		}},
		{"Accept", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id, id2 := e.assigned(t), e.assigned(t)
			return func(k string) (matters.Reply, error) {
					return e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: k})
				}, func(k string) (matters.Reply, error) {
					return e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id2, IdempotencyKey: k})
				}
		}},
		{"Verdict", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id := e.ready(t)
			return func(k string) (matters.Reply, error) { return e.Verdict(ctx, e.sol, verdict(id, k)) },
				func(k string) (matters.Reply, error) {
					v := verdict(id, k)
					v.Verdict = json.RawMessage(`{"approve":false}`)
					return e.Verdict(ctx, e.sol, v)
				}
		}},
		{"VerdictOtherMatter", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id, id2 := e.ready(t), e.ready(t)
			return func(k string) (matters.Reply, error) { return e.Verdict(ctx, e.sol, verdict(id, k)) },
				func(k string) (matters.Reply, error) { return e.Verdict(ctx, e.sol, verdict(id2, k)) }
		}},
		{"Settle", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id, id2 := e.judged(t), e.judged(t)
			return func(k string) (matters.Reply, error) {
					return e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: k})
				}, func(k string) (matters.Reply, error) {
					return e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id2, IdempotencyKey: k})
				}
		}},
		{"Dispute", func(e *env) (_, _ func(string) (matters.Reply, error)) {
			id := e.ready(t)
			return func(k string) (matters.Reply, error) {
					return e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "r", ActionDigest: digest, IdempotencyKey: k})
				}, func(k string) (matters.Reply, error) {
					return e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "other", ActionDigest: digest, IdempotencyKey: k})
				}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			first, other := tc.setup(e)
			r1, err := first("same")
			if err != nil {
				t.Fatal(err)
			}
			if r1.Replayed {
				t.Fatal("the first answer is marked replayed")
			}
			r2, err := first("same")
			if err != nil || !r2.Replayed || string(r1.Body) != string(r2.Body) || r1.Created != r2.Created {
				t.Fatalf("replay: %v replayed=%v\n%s\n%s", err, r2.Replayed, r1.Body, r2.Body)
			}
			before, _ := e.List(ctx, e.op, true)
			_, err = other("same")
			wantCode(t, err, "idempotency_conflict")
			after, _ := e.List(ctx, e.op, true)
			if b, a := mustJSON(t, before), mustJSON(t, after); b != a {
				t.Fatalf("a conflict changed state:\n%s\n%s", b, a)
			}
			// the other content goes through under a fresh key, except
			// where the first request's effect forbids it
			if _, err := other("fresh"); err != nil && !strings.HasPrefix(tc.name, "Verdict") && tc.name != "AssignOtherFields" && tc.name != "Dispute" {
				t.Fatalf("other content under a fresh key: %v", err)
			}
		})
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// The seed bounds idempotency_key at 256 bytes (idem.MaxKey, the escrow
// court's bound, is 255).
func TestService_IdempotencyKeyBound(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	if _, err := e.Open(ctx, e.req, openReq(strings.Repeat("k", 256))); err != nil {
		t.Fatalf("256 bytes: %v", err)
	}
	_, err := e.Open(ctx, e.req, openReq(strings.Repeat("k", 257)))
	wantCode(t, err, "invalid_idempotency_key")
	_, err = e.Open(ctx, e.req, openReq("tab\there"))
	wantCode(t, err, "invalid_idempotency_key")
	id := e.ready(t)
	k := strings.Repeat("é", 128) // 256 bytes
	if _, err := e.Verdict(ctx, e.sol, verdict(id, k)); err != nil {
		t.Fatalf("256 bytes of UTF-8: %v", err)
	}
	for name, f := range map[string]func(string) error{
		"Assign": func(k string) error {
			tr := true
			_, err := e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", ConflictFree: &tr, IdempotencyKey: k})
			return err
		},
		"Accept": func(k string) error {
			_, err := e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: k})
			return err
		},
		"Settle": func(k string) error {
			_, err := e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: k})
			return err
		},
		"Dispute": func(k string) error {
			_, err := e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "r", IdempotencyKey: k})
			return err
		},
		"Tick": func(k string) error {
			_, err := e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: k})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			wantCode(t, f(strings.Repeat("k", 257)), "invalid_idempotency_key")
			wantCode(t, f(""), "invalid_idempotency_key")
		})
	}
}

// A key lives in the scope of its operation and its actor: another
// operator's tick with the same key is its own request, neither a replay
// of the first nor a conflict with it.
func TestService_Idempotency_tickScope(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	must(e.Open(ctx, e.req, openReq(e.key())))
	e.clock.Advance(2 * time.Hour)
	r1 := must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "same"}))
	if r := must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "same"})); !r.Replayed || string(r.Body) != string(r1.Body) {
		t.Fatalf("the operator's retry: replayed=%v", r.Replayed)
	}
	if r := must(e.Tick(ctx, e.op2, matters.TickRequest{IdempotencyKey: "same"})); r.Replayed {
		t.Fatal("another operator's tick replayed the first's answer")
	}
}
