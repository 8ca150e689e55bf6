package matters_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	*matters.Service
	clock *clock
	keys  *receipt.Keyring
	db    *storage.DB
	req   matters.Actor // requester principal "alice" of tenant t1
	sol   matters.Actor // solver "bob" of t1
	op    matters.Actor // operator "olga" of t1
	op2   matters.Actor // operator "oscar" of t1
	other matters.Actor // requester "eve" of tenant t2
	n     atomic.Int64
}

const digest = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"

// mustEnv opens the service, signed, or in the mode given.
func mustEnv(tb testing.TB, mode ...principal.Mode) *env {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ck := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: ck.Now, Rand: rand.NewChaCha8([32]byte{9})})
	if err != nil {
		tb.Fatal(err)
	}
	var n atomic.Int64
	cfg := matters.Config{Store: db, Signer: keys, Now: ck.Now, NewID: func() string { return fmt.Sprintf("%016d", n.Add(1)) }}
	if len(mode) > 0 {
		cfg.Auth = mode[0]
	}
	s, err := matters.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{Service: s, clock: ck, keys: keys, db: db}
	add := func(id, tenant string, roles ...string) matters.Actor {
		pub, _, _ := ed25519.GenerateKey(nil)
		p, err := s.AddPrincipal(context.Background(), matters.Principal{KeyID: id, PublicKey: base64.StdEncoding.EncodeToString(pub),
			Tenant: tenant, Roles: roles, Scopes: []string{matters.ScopeRead, matters.ScopePrivate, matters.ScopeWrite}})
		if err != nil {
			tb.Fatal(err)
		}
		return matters.ActorOf(p)
	}
	e.req = add("alice", "t1", matters.RoleRequester)
	e.sol = add("bob", "t1", matters.RoleSolver)
	e.op = add("olga", "t1", matters.RoleOperator)
	e.op2 = add("oscar", "t1", matters.RoleOperator)
	e.other = add("eve", "t2", matters.RoleRequester, matters.RoleOperator)
	return e
}

func openReq(key string) matters.OpenRequest {
	return matters.OpenRequest{
		RequesterID: "alice", ActionDigest: digest, Question: "may we pay invoice 42?", StakesUSDC: "12.5",
		Deadline: "2026-05-01T13:00:00Z", RiskClass: "spend", IdempotencyKey: key,
		VerdictSchema: json.RawMessage(`{"type":"object","required":["approve"],"properties":{"approve":{"type":"boolean"},"note":{"type":"string","maxLength":20}},"additionalProperties":false}`),
	}
}

func decodeChanged(tb testing.TB, r matters.Reply) matters.Changed {
	tb.Helper()
	var c matters.Changed
	if err := json.Unmarshal(r.Body, &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := fault.CodeOf(err); got != code {
		tb.Fatalf("error code %q (%v), want %q", got, err, code)
	}
}

// judged opens, assigns, accepts; returns the matter id.
func (e *env) ready(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	r, err := e.Open(ctx, e.req, openReq(fmt.Sprintf("ready-%d", e.n.Add(1))))
	if err != nil {
		tb.Fatal(err)
	}
	id := decodeChanged(tb, r).Matter.ID
	t := true
	if _, err := e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "bob", SolverKind: "model", Qualification: "claims desk", ConflictFree: &t, IdempotencyKey: e.key()}); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: e.key()}); err != nil {
		tb.Fatal(err)
	}
	return id
}

// key returns an idempotency key not used before in the env.
func (e *env) key() string { return fmt.Sprintf("key-%d", e.n.Add(1)) }

func verdict(id, key string) matters.VerdictRequest {
	return matters.VerdictRequest{MatterID: id, SolverKind: "model", ActionDigest: digest, Verdict: json.RawMessage(`{"approve":true}`), IdempotencyKey: key}
}

func TestService_Lifecycle(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	id := e.ready(t)
	r, err := e.Verdict(ctx, e.sol, verdict(id, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	c := decodeChanged(t, r)
	if c.Matter.Status != matters.StatusJudged || !c.Matter.VerdictSchemaOK {
		t.Fatalf("after verdict: %+v", c.Matter)
	}
	if _, err := e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: "s"}); err != nil {
		t.Fatal(err)
	}
	// a judged matter does not expire
	e.clock.Advance(48 * time.Hour)
	v, err := e.Get(ctx, e.req, id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Private == nil || v.Private.Status != matters.StatusSettled || !v.Private.SolverPaid {
		t.Fatalf("get: %+v", v.Private)
	}
	// dispute after settle
	_, err = e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "late", ActionDigest: digest, IdempotencyKey: "d"})
	wantCode(t, err, "matter_not_disputable")

	// the receipt chain: kinds in order, each linked to the last, all valid
	rs, err := e.Receipts(ctx, e.req, id)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"matter_opened", "solver_assigned", "solver_accepted", "verdict_submitted", "matter_settled"}
	if len(rs) != len(kinds) {
		t.Fatalf("%d receipts, want %d", len(rs), len(kinds))
	}
	prev := ""
	ver := e.keys.Verifier()
	for i, r := range rs {
		var sub matters.Subject
		if err := json.Unmarshal(r.CredentialSubject, &sub); err != nil {
			t.Fatal(err)
		}
		if sub.Kind != kinds[i] || sub.PreviousReceiptHash != prev || sub.RiskClass != "spend" || sub.Sequence != i {
			t.Fatalf("receipt %d: %+v", i, sub)
		}
		if i >= 1 && sub.SolverKind != "model" {
			t.Fatalf("receipt %d solver_kind %q", i, sub.SolverKind)
		}
		if i == 4 && sub.Settlement != "non_custodial_flag_only_no_usdc_moved" {
			t.Fatalf("settled receipt: %+v", sub)
		}
		b, _ := json.Marshal(r)
		if res := ver.Verify(b); !res.Valid {
			t.Fatalf("receipt %d: %s", i, res.Reason)
		}
		if strings.Contains(string(r.CredentialSubject), "invoice 42") {
			t.Fatal("a receipt holds the question")
		}
		prev = r.Proof.SubjectHash
	}
}

func TestService_Errors(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	tr, fa := true, false
	open := func(f func(*matters.OpenRequest)) error {
		r := openReq("k")
		f(&r)
		_, err := e.Open(ctx, e.req, r)
		return err
	}
	for _, tc := range []struct {
		name, code string
		f          func(*matters.OpenRequest)
	}{
		{"ErrRequesterMismatch", "requester_mismatch", func(r *matters.OpenRequest) { r.RequesterID = "mallory" }},
		{"ErrNoDigest", "invalid_action_digest", func(r *matters.OpenRequest) { r.ActionDigest = "" }},
		{"ErrBadDigest", "invalid_action_digest", func(r *matters.OpenRequest) { r.ActionDigest = strings.ToUpper(digest) }},
		{"ErrNoQuestion", "missing_field", func(r *matters.OpenRequest) { r.Question = "" }},
		{"ErrLongQuestion", "field_too_long", func(r *matters.OpenRequest) { r.Question = strings.Repeat("q", 8193) }},
		{"ErrStakesDecimals", "invalid_stakes", func(r *matters.OpenRequest) { r.StakesUSDC = "1.1234567" }},
		{"ErrStakesZero", "invalid_stakes", func(r *matters.OpenRequest) { r.StakesUSDC = "0.000000" }},
		{"ErrStakesNegative", "invalid_stakes", func(r *matters.OpenRequest) { r.StakesUSDC = "-1" }},
		{"ErrDeadlinePast", "invalid_deadline", func(r *matters.OpenRequest) { r.Deadline = "2026-05-01T12:00:00Z" }},
		{"ErrDeadlineFormat", "invalid_deadline", func(r *matters.OpenRequest) { r.Deadline = "tomorrow" }},
		{"ErrRisk", "invalid_risk_class", func(r *matters.OpenRequest) { r.RiskClass = "fun" }},
		{"ErrSchemaRequiredEmpty", "invalid_schema", func(r *matters.OpenRequest) { r.VerdictSchema = json.RawMessage(`{"required":[]}`) }},
		{"ErrSchemaArray", "invalid_schema", func(r *matters.OpenRequest) { r.VerdictSchema = json.RawMessage(`[]`) }},
		{"ErrSchemaRef", "invalid_schema", func(r *matters.OpenRequest) { r.VerdictSchema = json.RawMessage(`{"required":["a"],"$ref":"#"}`) }},
		{"ErrIdemKey", "invalid_idempotency_key", func(r *matters.OpenRequest) { r.IdempotencyKey = "" }},
		{"ErrIdemKeyLong", "invalid_idempotency_key", func(r *matters.OpenRequest) { r.IdempotencyKey = strings.Repeat("k", 257) }},
	} {
		t.Run("Open/"+tc.name, func(t *testing.T) { wantCode(t, open(tc.f), tc.code) })
	}
	if _, err := e.Open(ctx, e.sol, openReq("x")); fault.CodeOf(err) != "forbidden" {
		t.Fatalf("solver opens: %v", err)
	}

	id := decodeChanged(t, must(e.Open(ctx, e.req, openReq("base")))).Matter.ID
	assign := func(a matters.Actor, r matters.AssignRequest) error {
		if r.MatterID == "" {
			r.MatterID = id
		}
		r.IdempotencyKey = "a-" + fmt.Sprint(time.Now().UnixNano())
		_, err := a2(e.Assign(ctx, a, r))
		return err
	}
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "bob", SolverKind: "robot", ConflictFree: &tr}), "invalid_solver_kind")
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "bob", SolverKind: "model", ConflictFree: &fa}), "solver_conflict")
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "bob", SolverKind: "model"}), "solver_conflict")
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "alice", SolverKind: "model", ConflictFree: &tr}), "solver_conflict")
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "bob", SolverKind: "model", Qualification: strings.Repeat("x", 1025), ConflictFree: &tr}), "invalid_qualification")
	wantCode(t, assign(e.req, matters.AssignRequest{SolverID: "nobody", SolverKind: "model", ConflictFree: &tr}), "unknown_solver")
	wantCode(t, assign(e.other, matters.AssignRequest{SolverID: "bob", SolverKind: "model", ConflictFree: &tr}), "matter_not_found")
	wantCode(t, assign(e.req, matters.AssignRequest{MatterID: "mat-nope", SolverID: "bob", SolverKind: "model", ConflictFree: &tr}), "matter_not_found")

	// verdict before assignment, accept before assignment
	_, err := e.Verdict(ctx, e.sol, verdict(id, "v0"))
	wantCode(t, err, "solver_not_assigned")
	_, err = e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: "c0"})
	wantCode(t, err, "solver_not_assigned")

	if err := assign(e.req, matters.AssignRequest{SolverID: "bob", SolverKind: "model", ConflictFree: &tr}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, assign(e.op, matters.AssignRequest{SolverID: "bob", SolverKind: "human", ConflictFree: &tr}), "solver_already_assigned")
	_, err = e.Verdict(ctx, e.sol, verdict(id, "v1"))
	wantCode(t, err, "solver_not_accepted")
	_, err = e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, SolverID: "carol", IdempotencyKey: "c1"})
	wantCode(t, err, "solver_mismatch")
	must(e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: "c2"}))
	_, err = e.Accept(ctx, e.sol, matters.AcceptRequest{MatterID: id, IdempotencyKey: "c3"})
	wantCode(t, err, "solver_not_accepting")

	// settle before judged
	_, err = e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: "s0"})
	wantCode(t, err, "matter_not_settleable")

	v := verdict(id, "v2")
	v.SolverKind = "human"
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "solver_kind_mismatch")
	v = verdict(id, "v3")
	v.ActionDigest = ""
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "invalid_action_digest")
	v = verdict(id, "v4")
	v.Verdict = json.RawMessage(`[true]`)
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "invalid_verdict")
	v = verdict(id, "v5")
	v.Verdict = json.RawMessage(`{"approve":"yes"}`)
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "verdict_schema_mismatch")
	if fault.KindOf(err) != fault.Unprocessable {
		t.Fatalf("schema mismatch kind %s", fault.KindOf(err))
	}
	v = verdict(id, "v6")
	v.Verdict = json.RawMessage(`{"approve":true,"extra":1}`)
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "verdict_schema_mismatch")
	v = verdict(id, "v7")
	v.SolverKind = "robot"
	_, err = e.Verdict(ctx, e.sol, v)
	wantCode(t, err, "invalid_solver_kind")

	must(e.Verdict(ctx, e.sol, verdict(id, "v8")))
	_, err = e.Verdict(ctx, e.sol, verdict(id, "v9"))
	wantCode(t, err, "matter_not_open")

	// dispute: reason bound, digest required, other tenant, solver may not
	_, err = e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: strings.Repeat("r", 2049), ActionDigest: digest, IdempotencyKey: "d0"})
	wantCode(t, err, "invalid_reason")
	_, err = e.Dispute(ctx, e.req, matters.DisputeRequest{MatterID: id, Reason: "wrong", IdempotencyKey: "d1"})
	wantCode(t, err, "invalid_action_digest")
	_, err = e.Dispute(ctx, e.other, matters.DisputeRequest{MatterID: id, Reason: "wrong", ActionDigest: digest, IdempotencyKey: "d2"})
	wantCode(t, err, "matter_not_found")
	_, err = e.Dispute(ctx, e.sol, matters.DisputeRequest{MatterID: id, Reason: "wrong", ActionDigest: digest, IdempotencyKey: "d3"})
	wantCode(t, err, "forbidden")
	must(e.Dispute(ctx, e.op, matters.DisputeRequest{MatterID: id, Reason: "wrong", ActionDigest: digest, IdempotencyKey: "d4"}))
	_, err = e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: "s1"})
	wantCode(t, err, "matter_not_settleable")

	// another tenant cannot read it
	_, err = e.Get(ctx, e.other, id)
	wantCode(t, err, "matter_not_found")
}

func must(r matters.Reply, err error) matters.Reply {
	if err != nil {
		panic(err)
	}
	return r
}

func a2(r matters.Reply, err error) (matters.Reply, error) { return r, err }

func TestService_Expiry(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	a := decodeChanged(t, must(e.Open(ctx, e.req, openReq("a")))).Matter.ID
	id := e.ready(t)
	e.clock.Advance(time.Hour) // exactly at the deadline

	// verdict at the deadline: refused, and the expiry commits
	_, err := e.Verdict(ctx, e.sol, verdict(id, "late"))
	wantCode(t, err, "matter_not_open")
	v, err := e.Get(ctx, e.req, id)
	if err != nil || v.Private.Status != matters.StatusExpired {
		t.Fatalf("after late verdict: %v %+v", err, v.Private)
	}

	t1 := must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "t"}))
	var tk matters.Ticked
	_ = json.Unmarshal(t1.Body, &tk)
	if len(tk.Expired) != 1 || tk.Expired[0].ID != a || len(tk.Receipts) != 1 {
		t.Fatalf("tick: %s", t1.Body)
	}
	t2 := must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "t"}))
	if !t2.Replayed || string(t1.Body) != string(t2.Body) {
		t.Fatal("tick replay")
	}
	t3 := must(e.Tick(ctx, e.op, matters.TickRequest{IdempotencyKey: "t2"}))
	_ = json.Unmarshal(t3.Body, &tk)
	if len(tk.Expired) != 0 {
		t.Fatalf("second tick expired %d", len(tk.Expired))
	}
	_, err = e.Tick(ctx, e.req, matters.TickRequest{IdempotencyKey: "t3"})
	wantCode(t, err, "forbidden")
	open, err := e.List(ctx, e.req, false)
	if err != nil || len(open) != 0 {
		t.Fatalf("open list: %v %d", err, len(open))
	}
	all, err := e.List(ctx, e.req, true)
	if err != nil || len(all) != 2 {
		t.Fatalf("all list: %v %d", err, len(all))
	}
	rs, _ := e.Receipts(ctx, e.req, a)
	if len(rs) != 2 {
		t.Fatalf("expired matter has %d receipts", len(rs))
	}
}

func TestService_ReadExpires(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	id := decodeChanged(t, must(e.Open(ctx, e.req, openReq("a")))).Matter.ID
	open, _ := e.List(ctx, e.req, false)
	if len(open) != 1 {
		t.Fatalf("open before deadline: %d", len(open))
	}
	e.clock.Advance(time.Hour + time.Second)
	open, _ = e.List(ctx, e.req, false)
	if len(open) != 0 {
		t.Fatalf("open after deadline: %d", len(open))
	}
	v, _ := e.Get(ctx, e.req, id)
	if v.Private.Status != matters.StatusExpired || len(v.Private.Receipts) != 2 {
		t.Fatalf("%+v", v.Private)
	}
}

func TestService_Projection(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	must(e.Open(ctx, e.req, openReq("a")))
	reader := e.req
	reader.Principal.Scopes = []string{matters.ScopeRead}
	vs, err := e.List(ctx, reader, true)
	if err != nil || len(vs) != 1 || vs[0].Private != nil {
		t.Fatalf("%v %+v", err, vs)
	}
	b, _ := json.Marshal(vs[0].Value())
	if strings.Contains(string(b), "invoice") || strings.Contains(string(b), "alice") || !strings.Contains(string(b), digest) {
		t.Fatalf("public projection: %s", b)
	}
	noRead := e.req
	noRead.Principal.Scopes = []string{matters.ScopeWrite}
	_, err = e.List(ctx, noRead, true)
	wantCode(t, err, "insufficient_scope")
}

// Fifty concurrent verdicts from the assigned solver: exactly one wins.
func TestService_ConcurrentVerdicts(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	id := e.ready(t)
	var wins, lost atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := e.Verdict(ctx, e.sol, verdict(id, fmt.Sprintf("k%d", i)))
			switch fault.CodeOf(err) {
			case "":
				wins.Add(1)
			case "matter_not_open":
				lost.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != 49 {
		t.Fatalf("wins %d lost %d", wins.Load(), lost.Load())
	}
	rs, _ := e.Receipts(ctx, e.req, id)
	n := 0
	for _, r := range rs {
		if strings.Contains(string(r.CredentialSubject), `"verdict_submitted"`) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d verdict_submitted receipts", n)
	}
}

func TestService_OpenMode(t *testing.T) {
	e := mustEnv(t, principal.Open)
	ctx := context.Background()
	var a matters.Actor // anyone: identities come from the body
	r := openReq("k")
	r.ActionDigest = ""
	id := decodeChanged(t, must(e.Open(ctx, a, r))).Matter.ID
	// legacy direct path: no assignment needed in open mode
	v := verdict(id, "v")
	v.SolverID = "anyone"
	v.ActionDigest = ""
	c := decodeChanged(t, must(e.Verdict(ctx, a, v)))
	if c.Matter.Status != matters.StatusJudged {
		t.Fatal(c.Matter.Status)
	}
}

func TestService_Nonce(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	if err := e.UseNonce(ctx, "alice", "n1", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.UseNonce(ctx, "alice", "n1", e.clock.Now()), "nonce_replayed")
	// the same nonce of another key is another nonce
	if err := e.UseNonce(ctx, "bob", "n1", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddPrincipal(ctx, matters.Principal{KeyID: "alice", PublicKey: "x"}); fault.CodeOf(err) != "invalid_principal" {
		t.Fatal(err)
	}
	p, err := e.RevokePrincipal(ctx, "bob")
	if err != nil || p.RevokedAt.IsZero() {
		t.Fatal(err)
	}
}

// Nonces whose created is older than twice the clock skew are pruned when
// later ones are stored, oldest first, at most MaxNoncePrune at a time;
// younger ones are kept and still refused.
func TestService_NoncePrune(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	t0 := e.clock.Now()
	n := matters.MaxNoncePrune + 10
	old := func(i int) (string, time.Time) {
		return fmt.Sprintf("old-%d", i), t0.Add(time.Duration(i) * time.Second)
	}
	for i := range n {
		nonce, at := old(i)
		if err := e.UseNonce(ctx, "alice", nonce, at); err != nil {
			t.Fatal(err)
		}
	}
	young := t0.Add(9 * time.Minute)
	if err := e.UseNonce(ctx, "alice", "young", young); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2*matters.MaxClockSkew - time.Second)
	if err := e.UseNonce(ctx, "bob", "a", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// none is older than twice the skew yet: nothing pruned
	nonce, at := old(0)
	wantCode(t, e.UseNonce(ctx, "alice", nonce, at), "nonce_replayed")

	e.clock.Advance(time.Duration(n+10) * time.Second)                 // every old one is now stale
	if err := e.UseNonce(ctx, "bob", "b", e.clock.Now()); err != nil { // prunes the oldest MaxNoncePrune
		t.Fatal(err)
	}
	// bounded: the newest old one waits for the next store
	last, lastAt := old(n - 1)
	wantCode(t, e.UseNonce(ctx, "alice", last, lastAt), "nonce_replayed")
	nonce, at = old(matters.MaxNoncePrune - 1)
	if err := e.UseNonce(ctx, "alice", nonce, at); err != nil { // pruned; this store prunes the rest
		t.Fatalf("a pruned nonce is still stored: %v", err)
	}
	if err := e.UseNonce(ctx, "alice", last, lastAt); err != nil {
		t.Fatalf("the rest was not pruned: %v", err)
	}
	// younger nonces are kept
	wantCode(t, e.UseNonce(ctx, "alice", "young", young), "nonce_replayed")
	wantCode(t, e.UseNonce(ctx, "bob", "a", t0), "nonce_replayed")
}

// Concurrent signatures while stale nonces wait to be pruned: each is
// stored once, none fails on contention.
func TestService_NoncePruneConcurrent(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	t0 := e.clock.Now()
	for i := range 3 * matters.MaxNoncePrune {
		if err := e.UseNonce(ctx, "alice", fmt.Sprintf("old-%d", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Hour)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := e.UseNonce(ctx, "bob", fmt.Sprintf("n-%d", i), e.clock.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range 50 {
		wantCode(t, e.UseNonce(ctx, "bob", fmt.Sprintf("n-%d", i), e.clock.Now()), "nonce_replayed")
	}
}
