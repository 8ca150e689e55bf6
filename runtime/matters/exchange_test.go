package matters_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate/jury"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/matters/appealcourt"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// fakeJury is an OpenAI-compatible chat-completions server (the protocol
// the court's jury speaks to a hosted model) whose every juror votes what
// vote holds.
type fakeJury struct {
	*httptest.Server
	vote atomic.Value // string: pass, fail or abstain
	asks atomic.Int64
}

func newFakeJury(tb testing.TB) *fakeJury {
	f := &fakeJury{}
	f.vote.Store("pass")
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.asks.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{
				"role": "assistant", "content": fmt.Sprintf(`{"vote":%q,"rationale":"%s decided"}`, f.vote.Load(), body.Model)}}}})
	}))
	tb.Cleanup(f.Close)
	return f
}

type xenv struct {
	*matters.Service
	court *escrow.Service
	jury  *fakeJury
	clock *clock
	db    *storage.DB
	req   matters.Actor // requester "rita" of tenant t1
	op    matters.Actor // operator "otto" of t1
	other matters.Actor // requester "ezra" of t2
	// solvers by id, all of t1
	solvers map[string]matters.Actor
	n       atomic.Int64
	deposit int64 // what was paid into wallets from the rail
	mu      sync.Mutex
}

const (
	xpay  = 1_000_000 // $1 per solver
	xbond = 2_000_000 // $2 bond
)

func mustXEnv(tb testing.TB) *xenv {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ck := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: ck.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		tb.Fatal(err)
	}
	fj := newFakeJury(tb)
	panel, err := jury.FromEnv(func(k string) string {
		return map[string]string{"ASSAY_JURY_BASE_URL": fj.URL + "/v1", "ASSAY_JURY_MODELS": "juror-a,juror-b,juror-c"}[k]
	})
	if err != nil {
		tb.Fatal(err)
	}
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Juror: panel, Now: ck.Now})
	if err != nil {
		tb.Fatal(err)
	}
	e := &xenv{court: court, jury: fj, clock: ck, db: db, solvers: map[string]matters.Actor{}}
	s, err := matters.New(matters.Config{Store: db, Signer: keys, Now: ck.Now, Court: appealcourt.New(court),
		NewID: func() string { return fmt.Sprintf("%016d", e.n.Add(1)) }})
	if err != nil {
		tb.Fatal(err)
	}
	e.Service = s
	e.req = e.principal(tb, "rita", "t1", matters.RoleRequester)
	e.op = e.principal(tb, "otto", "t1", matters.RoleOperator)
	e.other = e.principal(tb, "ezra", "t2", matters.RoleRequester)
	e.fund(tb, "rita", 1000*xpay)
	return e
}

func (e *xenv) principal(tb testing.TB, id, tenant string, roles ...string) matters.Actor {
	tb.Helper()
	pub, _, _ := ed25519.GenerateKey(nil)
	p, err := e.AddPrincipal(context.Background(), matters.Principal{KeyID: id, PublicKey: base64.StdEncoding.EncodeToString(pub),
		Tenant: tenant, Roles: roles, Scopes: []string{matters.ScopeRead, matters.ScopePrivate, matters.ScopeWrite}})
	if err != nil {
		tb.Fatal(err)
	}
	return matters.ActorOf(p)
}

// fund pays amount into an agent's wallet from the dev rail, as a market
// deposit does.
func (e *xenv) fund(tb testing.TB, id string, amount int64) {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deposit += amount
	n := e.deposit
	err := e.db.Update(context.Background(), func(tx store.Tx) error {
		return ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("test-deposit-%d-%s", n, id), From: "rail:dev", To: ledger.AgentAccount(id),
			Amount: amount, Currency: matters.Currency, At: e.clock.Now()})
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func (e *xenv) balance(tb testing.TB, account string) int64 {
	tb.Helper()
	var b int64
	if err := e.db.View(context.Background(), func(tx store.Tx) error {
		var err error
		b, err = ledger.Balance(tx, account, matters.Currency)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return b
}

func (e *xenv) wallet(tb testing.TB, id string) int64 { return e.balance(tb, ledger.AgentAccount(id)) }

func (e *xenv) key() string { return fmt.Sprintf("xk-%d", e.n.Add(1)) }

// solver registers a model solver (a lineage "provider/base") or a human
// (lineage "") with a funded wallet.
func (e *xenv) solver(tb testing.TB, id, lineage string, conflicts ...string) matters.Actor {
	tb.Helper()
	a := e.principal(tb, id, "t1", matters.RoleSolver)
	req := matters.RegisterSolverRequest{SolverKind: "human", Conflicts: conflicts, Qualifications: []string{"payments"}, IdempotencyKey: e.key()}
	if lineage != "" {
		p, b, _ := strings.Cut(lineage, "/")
		req.SolverKind, req.Lineage = "model", &matters.Lineage{Provider: p, BaseModel: b}
	}
	if _, err := e.RegisterSolver(context.Background(), a, req); err != nil {
		tb.Fatal(err)
	}
	e.solvers[id] = a
	e.fund(tb, id, 100*xbond)
	return a
}

var xschema = json.RawMessage(`{"type":"object","required":["decision"],"properties":{
	"decision":{"type":"string","enum":["approve","deny","escalate"]},
	"p_loss":{"type":"number","minimum":0,"maximum":1}}}`)

func (e *xenv) openQ(tb testing.TB, n, m, k int, staked bool) string {
	tb.Helper()
	q := matters.QuorumSpec{Solvers: n, Agree: m, Lineages: k, AgreeOn: []string{"decision"}}
	if staked {
		q.PayUSDC, q.BondUSDC = "1", "2"
	}
	r, err := e.OpenQuorum(context.Background(), e.req, matters.QuorumOpenRequest{OpenRequest: matters.OpenRequest{
		ActionDigest: digest, Question: "may we pay invoice 42 of ACME?", StakesUSDC: "500",
		Deadline: e.clock.Now().Add(time.Hour).Format(time.RFC3339), RiskClass: "spend", VerdictSchema: xschema,
		IdempotencyKey: e.key()}, Quorum: q})
	if err != nil {
		tb.Fatal(err)
	}
	return decodeChanged(tb, r).Matter.ID
}

func (e *xenv) seat(tb testing.TB, id string, solvers ...string) {
	tb.Helper()
	ctx := context.Background()
	for _, s := range solvers {
		must(e.AssignSeat(ctx, e.req, matters.SeatRequest{MatterID: id, SolverID: s, IdempotencyKey: e.key()}))
		must(e.AcceptSeat(ctx, e.solvers[s], matters.AcceptRequest{MatterID: id, IdempotencyKey: e.key()}))
	}
}

func salt(solver string) string { return strings.Repeat("5a", 16) + "-" + solver }

func verdictOf(decision string, p float64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"decision":%q,"p_loss":%g}`, decision, p))
}

func (e *xenv) commit(tb testing.TB, id, solver string, v json.RawMessage) {
	tb.Helper()
	sum, err := matters.Commitment(id, solver, v, salt(solver))
	if err != nil {
		tb.Fatal(err)
	}
	must(e.Commit(context.Background(), e.solvers[solver], matters.CommitRequest{MatterID: id, Commitment: sum, IdempotencyKey: e.key()}))
}

func (e *xenv) reveal(id, solver string, v json.RawMessage) (matters.Reply, error) {
	return e.Reveal(context.Background(), e.solvers[solver], matters.RevealRequest{MatterID: id, ActionDigest: digest, Verdict: v, Salt: salt(solver), IdempotencyKey: e.key()})
}

func (e *xenv) matter(tb testing.TB, id string) *matters.Matter {
	tb.Helper()
	v, err := e.Get(context.Background(), e.req, id)
	if err != nil {
		tb.Fatal(err)
	}
	return v.Private
}

// five registers five model solvers of three lineages.
func (e *xenv) five(tb testing.TB) []string {
	ids := []string{"m1", "m2", "m3", "m4", "m5"}
	lineages := []string{"acme/atlas", "acme/atlas", "globex/gamma", "globex/gamma", "initech/iris"}
	for i, id := range ids {
		e.solver(tb, id, lineages[i])
	}
	return ids
}

func kinds(tb testing.TB, e *xenv, id string) []string {
	tb.Helper()
	rs, err := e.Receipts(context.Background(), e.req, id)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	prev := ""
	for _, r := range rs {
		var sub matters.Subject
		b, _ := json.Marshal(r.CredentialSubject)
		if err := json.Unmarshal(b, &sub); err != nil {
			tb.Fatal(err)
		}
		if sub.PreviousReceiptHash != prev {
			tb.Fatalf("receipt %s breaks the chain", sub.Kind)
		}
		prev = r.Proof.SubjectHash
		out = append(out, sub.Kind)
	}
	return out
}

func TestExchange_ThreeOfFiveReachesAVerdict(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)
	id := e.openQ(t, 5, 3, 3, true)
	if got := e.wallet(t, "rita"); got != 1000*xpay-5*xpay {
		t.Fatalf("requester wallet %d after funding 5 seats", got)
	}
	e.seat(t, id, ids...)
	if got := e.balance(t, "hold:matters:"+id); got != 5*xpay+5*xbond {
		t.Fatalf("hold %d, want pay and bonds", got)
	}
	votes := []string{"approve", "approve", "deny", "approve", "deny"}
	for i, s := range ids {
		e.commit(t, id, s, verdictOf(votes[i], 0.1*float64(i)))
	}
	m := e.matter(t, id)
	if m.Exchange.Phase != matters.PhaseReveal {
		t.Fatalf("phase %s after five commitments", m.Exchange.Phase)
	}
	for i, s := range ids {
		must(e.reveal(id, s, verdictOf(votes[i], 0.1*float64(i))))
	}
	m = e.matter(t, id)
	if m.Status != matters.StatusJudged || !strings.Contains(string(m.Verdict), `"approve"`) {
		t.Fatalf("status %s verdict %s", m.Status, m.Verdict)
	}
	if ag := m.Exchange.Aggregate; ag.Agreeing != 3 || ag.Revealed != 5 || len(ag.Groups) != 2 {
		t.Fatalf("aggregate %+v", ag)
	}
	must(e.Settle(context.Background(), e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()}))
	for i, s := range ids {
		want := int64(100 * xbond)
		if votes[i] == "approve" {
			want += xpay
		}
		if got := e.wallet(t, s); got != want {
			t.Fatalf("solver %s holds %d, want %d", s, got, want)
		}
	}
	if got := e.wallet(t, "rita"); got != 1000*xpay-3*xpay {
		t.Fatalf("requester wallet %d: paid three solvers", got)
	}
	if got := e.balance(t, "hold:matters:"+id); got != 0 {
		t.Fatalf("hold %d after settle", got)
	}
	want := "matter_opened solver_assigned solver_accepted solver_assigned solver_accepted solver_assigned solver_accepted solver_assigned solver_accepted solver_assigned solver_accepted " +
		"verdict_committed verdict_committed verdict_committed verdict_committed verdict_committed quorum_closed " +
		"verdict_revealed verdict_revealed verdict_revealed verdict_revealed verdict_revealed verdicts_aggregated matter_settled"
	if got := strings.Join(kinds(t, e, id), " "); got != want {
		t.Fatalf("receipts\n%s\nwant\n%s", got, want)
	}
	audit(t, e)
}

func audit(tb testing.TB, e *xenv) {
	tb.Helper()
	var a ledger.Audit
	if err := e.db.View(context.Background(), func(tx store.Tx) error {
		var err error
		a, err = ledger.Check(tx)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	if !a.Balanced {
		tb.Fatalf("ledger unbalanced: %+v", a)
	}
}

func TestExchange_SplitEndsNoConsensus(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)
	id := e.openQ(t, 5, 3, 3, true)
	e.seat(t, id, ids...)
	votes := []string{"approve", "approve", "deny", "deny", "escalate"}
	for i, s := range ids {
		e.commit(t, id, s, verdictOf(votes[i], 0.5))
	}
	for i, s := range ids {
		must(e.reveal(id, s, verdictOf(votes[i], 0.5)))
	}
	m := e.matter(t, id)
	if m.Status != matters.StatusNoConsensus || m.Verdict != nil {
		t.Fatalf("status %s verdict %s", m.Status, m.Verdict)
	}
	for _, s := range ids {
		if got := e.wallet(t, s); got != 100*xbond {
			t.Fatalf("solver %s holds %d: its bond comes back, unpaid", s, got)
		}
	}
	if got := e.wallet(t, "rita"); got != 1000*xpay {
		t.Fatalf("requester wallet %d: all pay returned", got)
	}
	_, err := e.Settle(context.Background(), e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeMatterNotSettleable)
	audit(t, e)
}

func TestExchange_RevealMustMatchCommitment(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)[:3]
	id := e.openQ(t, 3, 2, 0, true)
	e.seat(t, id, ids...)
	e.commit(t, id, "m1", verdictOf("approve", 0.2))
	_, err := e.reveal(id, "m1", verdictOf("approve", 0.2))
	wantCode(t, err, matters.ECodeQuorumNotClosed)
	e.commit(t, id, "m2", verdictOf("approve", 0.3))
	e.commit(t, id, "m3", verdictOf("deny", 0.9))
	before := e.matter(t, id)
	_, err = e.reveal(id, "m1", verdictOf("deny", 0.2))
	wantCode(t, err, matters.ECodeRevealMismatch)
	if fault.KindOf(err) != fault.Unprocessable {
		t.Fatalf("kind %v", fault.KindOf(err))
	}
	_, err = e.Reveal(context.Background(), e.solvers["m1"], matters.RevealRequest{MatterID: id, ActionDigest: digest,
		Verdict: verdictOf("approve", 0.2), Salt: strings.Repeat("0", 40), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeRevealMismatch)
	// m2 cannot reveal m1's verdict under m1's commitment either
	_, err = e.Reveal(context.Background(), e.solvers["m2"], matters.RevealRequest{MatterID: id, ActionDigest: digest,
		Verdict: verdictOf("approve", 0.2), Salt: salt("m1"), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeRevealMismatch)
	if after := e.matter(t, id); len(after.Receipts) != len(before.Receipts) || after.Exchange.Seats[0].Status != matters.SolverCommitted {
		t.Fatal("a refused reveal changed the matter")
	}
	must(e.reveal(id, "m1", verdictOf("approve", 0.2)))
	_, err = e.reveal(id, "m1", verdictOf("approve", 0.2))
	wantCode(t, err, matters.ECodeAlreadyRevealed)
}

func TestExchange_AssignmentRules(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	e.solver(t, "m1", "acme/atlas")
	e.solver(t, "m2", "acme/atlas")
	e.solver(t, "m3", "globex/gamma")
	e.solver(t, "h1", "", "rita")
	id := e.openQ(t, 3, 2, 3, false)
	assign := func(s string) error {
		_, err := e.AssignSeat(ctx, e.req, matters.SeatRequest{MatterID: id, SolverID: s, IdempotencyKey: e.key()})
		return err
	}
	wantCode(t, assign("h1"), matters.ECodeSolverConflict)
	wantCode(t, assign("nobody"), matters.ECodeUnknownSolver)
	if err := assign("m1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, assign("m1"), matters.ECodeSolverAlreadyAssigned)
	// two seats left, one lineage so far: a second acme/atlas leaves
	// one seat for two missing lineages
	wantCode(t, assign("m2"), matters.ECodeLineageDiversity)
	if err := assign("m3"); err != nil {
		t.Fatal(err)
	}
	// v1 routes refuse a quorum matter; the exchange's refuse a v1 one
	_, err := e.Assign(ctx, e.req, matters.AssignRequest{MatterID: id, SolverID: "m2", SolverKind: "model", ConflictFree: ptr(true), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeQuorumMatter)
	_, err = e.Get(ctx, e.other, id)
	wantCode(t, err, matters.ECodeMatterNotFound)
	_, err = e.AssignSeat(ctx, e.other, matters.SeatRequest{MatterID: id, SolverID: "m2", IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeMatterNotFound)
	// a requester without the money cannot open a staked matter
	poor := e.principal(t, "pete", "t1", matters.RoleRequester)
	_, err = e.OpenQuorum(ctx, poor, matters.QuorumOpenRequest{OpenRequest: matters.OpenRequest{ActionDigest: digest, Question: "q?", StakesUSDC: "1",
		Deadline: e.clock.Now().Add(time.Hour).Format(time.RFC3339), RiskClass: "spend", VerdictSchema: xschema, IdempotencyKey: e.key()},
		Quorum: matters.QuorumSpec{Solvers: 3, Agree: 2, PayUSDC: "1"}})
	wantCode(t, err, matters.ECodeInsufficientFunds)
	for _, q := range []matters.QuorumSpec{{Solvers: 4, Agree: 2}, {Solvers: 0, Agree: 0}, {Solvers: 3, Agree: 2, AgreeOn: []string{"p_loss"}}, {Solvers: 3, Agree: 2, PayUSDC: "1.0000001"}} {
		_, err = e.OpenQuorum(ctx, e.req, matters.QuorumOpenRequest{OpenRequest: matters.OpenRequest{ActionDigest: digest, Question: "q?", StakesUSDC: "1",
			Deadline: e.clock.Now().Add(time.Hour).Format(time.RFC3339), RiskClass: "spend", VerdictSchema: xschema, IdempotencyKey: e.key()}, Quorum: q})
		if c := fault.CodeOf(err); c != matters.ECodeInvalidQuorum && c != matters.ECodeInvalidAmount {
			t.Fatalf("quorum %+v: %v", q, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestExchange_DeadlineClosesOrExpires(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)
	// three of five commit: the quorum closes at the deadline; two
	// no-shows forfeit their bonds
	id := e.openQ(t, 5, 3, 0, true)
	e.seat(t, id, ids...)
	for _, s := range ids[:3] {
		e.commit(t, id, s, verdictOf("deny", 0.7))
	}
	e.clock.Advance(time.Hour)
	if m := e.matter(t, id); m.Exchange.Phase != matters.PhaseReveal {
		t.Fatalf("phase %s at the deadline with 3 commitments", m.Exchange.Phase)
	}
	for _, s := range ids[:2] {
		must(e.reveal(id, s, verdictOf("deny", 0.7)))
	}
	e.clock.Advance(time.Hour) // the reveal window: m3 never reveals
	m := e.matter(t, id)
	if m.Status != matters.StatusNoConsensus || m.Exchange.Aggregate.Revealed != 2 {
		t.Fatalf("status %s, aggregate %+v", m.Status, m.Exchange.Aggregate)
	}
	for i, s := range ids {
		want := int64(100 * xbond)
		if i >= 2 {
			want -= xbond
		}
		if got := e.wallet(t, s); got != want {
			t.Fatalf("solver %s holds %d, want %d", s, got, want)
		}
	}
	if got := e.wallet(t, "rita"); got != 1000*xpay+3*xbond {
		t.Fatalf("requester %d: pay back and three forfeited bonds", got)
	}
	// one commitment of three needing two: quorum not met, expired
	id2 := e.openQ(t, 3, 2, 0, true)
	e.seat(t, id2, ids[:3]...)
	e.commit(t, id2, "m1", verdictOf("deny", 0.7))
	e.clock.Advance(time.Hour)
	_, err := e.reveal(id2, "m1", verdictOf("deny", 0.7))
	wantCode(t, err, matters.ECodeQuorumNotMet)
	_, err = e.AssignSeat(context.Background(), e.req, matters.SeatRequest{MatterID: id2, SolverID: "m4", IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeQuorumNotMet)
	_, err = e.Commit(context.Background(), e.solvers["m1"], matters.CommitRequest{MatterID: id, Commitment: strings.Repeat("0", 64), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeMatterNotOpen)
	if m := e.matter(t, id2); m.Status != matters.StatusExpired {
		t.Fatalf("status %s", m.Status)
	}
	if got := e.balance(t, "hold:matters:"+id2); got != 0 {
		t.Fatalf("hold %d", got)
	}
	audit(t, e)
}

// judgedQ brings a staked 3-of-5 matter to judged with votes, and answers
// its id.
func (e *xenv) judgedQ(tb testing.TB, ids, votes []string) string {
	tb.Helper()
	id := e.openQ(tb, len(ids), len(ids)/2+1, 0, true)
	e.seat(tb, id, ids...)
	for i, s := range ids {
		e.commit(tb, id, s, verdictOf(votes[i], 0.25))
	}
	for i, s := range ids {
		must(e.reveal(id, s, verdictOf(votes[i], 0.25)))
	}
	return id
}

func TestExchange_AppealOverturnsThroughTheCourt(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	ids := e.five(t)
	votes := []string{"approve", "approve", "approve", "deny", "deny"}
	id := e.judgedQ(t, ids, votes)
	e.jury.vote.Store("fail")
	r, err := e.Appeal(ctx, e.req, matters.AppealRequest{MatterID: id, Reason: "ACME never delivered", FeeUSDC: "0.5", ActionDigest: digest, IdempotencyKey: "appeal-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := decodeChanged(t, r)
	if c.Matter.Status != matters.StatusOverturned || c.Matter.Exchange.Appeal.Result != "overturned" || c.Matter.Exchange.Appeal.Tier != "tier1-jury" {
		t.Fatalf("matter %+v appeal %+v", c.Matter.Status, c.Matter.Exchange.Appeal)
	}
	for i, s := range ids {
		want := int64(100 * xbond)
		if votes[i] == "approve" {
			want -= xbond
		}
		if got := e.wallet(t, s); got != want {
			t.Fatalf("solver %s holds %d, want %d", s, got, want)
		}
	}
	if got := e.wallet(t, "rita"); got != 1000*xpay+3*xbond {
		t.Fatalf("requester %d: pay back, three bonds, and the fee it paid refunded by the court", got)
	}
	// the court's receipt is the one the matter's receipt names
	m := e.matter(t, id)
	cr, err := e.court.Receipt(ctx, m.Exchange.Appeal.CourtReceipt)
	if err != nil || cr.Proof.SubjectHash != m.Exchange.Appeal.CourtHash {
		t.Fatalf("court receipt %v %v", cr.Proof.SubjectHash, err)
	}
	// a replay answers the same resolution; a second appeal is refused
	r2, err := e.Appeal(ctx, e.req, matters.AppealRequest{MatterID: id, Reason: "ACME never delivered", FeeUSDC: "0.5", ActionDigest: digest, IdempotencyKey: "appeal-1"})
	if err != nil || decodeChanged(t, r2).Receipt.ID != c.Receipt.ID {
		t.Fatalf("replay: %v", err)
	}
	_, err = e.Appeal(ctx, e.req, matters.AppealRequest{MatterID: id, Reason: "again", FeeUSDC: "0.5", ActionDigest: digest, IdempotencyKey: "appeal-2"})
	wantCode(t, err, matters.ECodeMatterNotAppealable)
	k := kinds(t, e, id)
	if k[len(k)-2] != "matter_appealed" || k[len(k)-1] != "appeal_resolved" {
		t.Fatalf("receipts end %v", k[len(k)-2:])
	}
	audit(t, e)
}

func TestExchange_AppealUpheld(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)[:3]
	votes := []string{"deny", "deny", "approve"}
	id := e.judgedQ(t, ids, votes)
	r, err := e.Appeal(context.Background(), e.req, matters.AppealRequest{MatterID: id, Reason: "I disagree", FeeUSDC: "1", ActionDigest: digest, IdempotencyKey: e.key()})
	if err != nil {
		t.Fatal(err)
	}
	if st := decodeChanged(t, r).Matter.Status; st != matters.StatusUpheld {
		t.Fatalf("status %s", st)
	}
	// m1 wrote the agreed verdict: it is paid, and receives the fee
	if got := e.wallet(t, "m1"); got != 100*xbond+xpay+xpay {
		t.Fatalf("m1 holds %d", got)
	}
	if got := e.wallet(t, "m3"); got != 100*xbond {
		t.Fatalf("m3 holds %d", got)
	}
	audit(t, e)
}

func TestExchange_ObserveAndCalibration(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	ids := e.five(t)[:3]
	id := e.openQ(t, 3, 2, 0, false)
	e.seat(t, id, ids...)
	probs := []float64{0.9, 0.8, 0.1}
	votes := []string{"deny", "deny", "approve"}
	for i, s := range ids {
		e.commit(t, id, s, verdictOf(votes[i], probs[i]))
	}
	_, err := e.Observe(ctx, e.req, matters.ObserveRequest{MatterID: id, Outcome: verdictOf("deny", 1), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeNotObservable)
	for i, s := range ids {
		must(e.reveal(id, s, verdictOf(votes[i], probs[i])))
	}
	_, err = e.Observe(ctx, e.solvers["m1"], matters.ObserveRequest{MatterID: id, Outcome: verdictOf("deny", 1), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeForbidden)
	_, err = e.Observe(ctx, e.req, matters.ObserveRequest{MatterID: id, Outcome: json.RawMessage(`{"decision":"maybe"}`), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeVerdictSchemaMismatch)
	must(e.Observe(ctx, e.req, matters.ObserveRequest{MatterID: id, Outcome: verdictOf("deny", 1), IdempotencyKey: e.key()}))
	_, err = e.Observe(ctx, e.op, matters.ObserveRequest{MatterID: id, Outcome: verdictOf("approve", 0), IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeAlreadyObserved)
	for i, s := range ids {
		p, err := e.SolverProfile(ctx, e.req, s)
		if err != nil {
			t.Fatal(err)
		}
		c := p.Calibration
		right := votes[i] == "deny"
		brier := (probs[i] - 1) * (probs[i] - 1)
		if c.Seats != 1 || c.Revealed != 1 || c.Observed != 1 || (c.Correct == 1) != right || c.Forecasts != 1 ||
			*c.Brier-brier > 1e-12 || brier-*c.Brier > 1e-12 || (*c.Agreement == 1) != right {
			t.Fatalf("solver %s calibration %+v (brier %v)", s, c, *c.Brier)
		}
	}
	_, err = e.SolverProfile(ctx, e.other, "m1")
	wantCode(t, err, matters.ECodeSolverNotFound)
}

func TestExchange_Idempotency(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	ids := e.five(t)[:3]
	id := e.openQ(t, 3, 2, 0, true)
	e.seat(t, id, ids...)
	sum, _ := matters.Commitment(id, "m1", verdictOf("deny", 0.5), salt("m1"))
	req := matters.CommitRequest{MatterID: id, Commitment: sum, IdempotencyKey: "c-1"}
	r1 := must(e.Commit(ctx, e.solvers["m1"], req))
	r2 := must(e.Commit(ctx, e.solvers["m1"], req))
	if string(r1.Body) != string(r2.Body) || !r2.Replayed {
		t.Fatal("a replayed commit answered something else")
	}
	req.Commitment = strings.Repeat("a", 64)
	_, err := e.Commit(ctx, e.solvers["m1"], req)
	wantCode(t, err, matters.ECodeIdempotencyConflict)
	_, err = e.Commit(ctx, e.solvers["m1"], matters.CommitRequest{MatterID: id, Commitment: sum, IdempotencyKey: "c-2"})
	wantCode(t, err, matters.ECodeAlreadyCommitted)
	if got := e.balance(t, "hold:matters:"+id); got != 3*xpay+3*xbond {
		t.Fatalf("hold %d", got)
	}
}

func TestExchange_AppealTheCourtRefusesLeavesTheMatterJudged(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	ids := e.five(t)[:3]
	id := e.judgedQ(t, ids, []string{"deny", "deny", "approve"})
	// another request already took the key of this matter's case
	if _, err := e.court.Create(ctx, escrow.CreateRequest{Buyer: "someone", Seller: "else", Price: json.RawMessage("5")},
		idem.Request{Scope: "matters-appeal", Key: "matters-appeal:" + id + ":create", Fingerprint: "squatted"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Appeal(ctx, e.req, matters.AppealRequest{MatterID: id, Reason: "no", FeeUSDC: "1", ActionDigest: digest, IdempotencyKey: e.key()})
	wantCode(t, err, matters.ECodeIdempotencyConflict)
	m := e.matter(t, id)
	if m.Status != matters.StatusJudged || m.Exchange.Appeal != nil {
		t.Fatalf("status %s appeal %+v", m.Status, m.Exchange.Appeal)
	}
	k := kinds(t, e, id)
	if k[len(k)-2] != "matter_appealed" || k[len(k)-1] != "appeal_resolved" {
		t.Fatalf("receipts end %v", k[len(k)-2:])
	}
	must(e.Settle(ctx, e.req, matters.SettleRequest{MatterID: id, IdempotencyKey: e.key()}))
	audit(t, e)
}

func TestExchange_Concurrency(t *testing.T) {
	e := mustXEnv(t)
	ctx := context.Background()
	ids := e.five(t)
	id := e.openQ(t, 5, 3, 0, true)
	e.seat(t, id, ids...)
	for _, s := range ids {
		e.commit(t, id, s, verdictOf("approve", 0.5))
	}
	// five reveals at once: every one lands, and one aggregation
	var wg sync.WaitGroup
	for _, s := range ids {
		wg.Go(func() {
			if _, err := e.reveal(id, s, verdictOf("approve", 0.5)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := strings.Count(strings.Join(kinds(t, e, id), " "), "verdicts_aggregated"); n != 1 {
		t.Fatalf("%d aggregations", n)
	}
	// a wallet that holds one bond pays one bond: of two matters accepted
	// at once, one is refused insufficient_funds
	e.solver(t, "lean", "lab/lean-1")
	drain := e.wallet(t, "lean") - xbond
	if err := e.db.Update(ctx, func(tx store.Tx) error {
		return ledger.Post(tx, ledger.Transfer{ID: "drain-lean", From: ledger.AgentAccount("lean"), To: "rail:dev", Amount: drain, Currency: matters.Currency, At: e.clock.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	a, b := e.openQ(t, 1, 1, 0, true), e.openQ(t, 1, 1, 0, true)
	for _, m := range []string{a, b} {
		must(e.AssignSeat(ctx, e.req, matters.SeatRequest{MatterID: m, SolverID: "lean", IdempotencyKey: e.key()}))
	}
	var okN, poorN atomic.Int64
	for _, m := range []string{a, b} {
		wg.Go(func() {
			_, err := e.AcceptSeat(ctx, e.solvers["lean"], matters.AcceptRequest{MatterID: m, IdempotencyKey: "acc-" + m})
			switch fault.CodeOf(err) {
			case "":
				okN.Add(1)
			case matters.ECodeInsufficientFunds:
				poorN.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if okN.Load() != 1 || poorN.Load() != 1 || e.wallet(t, "lean") != 0 {
		t.Fatalf("accepted %d, refused %d, wallet %d", okN.Load(), poorN.Load(), e.wallet(t, "lean"))
	}
	audit(t, e)
}

// The commitment is the SHA-256 of the RFC 8785 form of {matter_id, salt,
// solver_id, verdict}: members sorted at every level, no whitespace,
// numbers in their shortest form.
func TestExchange_CommitmentDefinition(t *testing.T) {
	got, err := matters.Commitment("mat-1", "m1", json.RawMessage(`{ "p_loss": 0.50, "decision": "deny" }`), "s")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"matter_id":"mat-1","salt":"s","solver_id":"m1","verdict":{"decision":"deny","p_loss":0.5}}`))
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("commitment %s, want %s", got, want)
	}
}

func TestExchange_ConcurrentAppealsOneCase(t *testing.T) {
	e := mustXEnv(t)
	ids := e.five(t)[:3]
	id := e.judgedQ(t, ids, []string{"deny", "deny", "approve"})
	e.jury.vote.Store("fail")
	req := matters.AppealRequest{MatterID: id, Reason: "no", FeeUSDC: "1", ActionDigest: digest, IdempotencyKey: "same"}
	var wg sync.WaitGroup
	var overturned atomic.Int64
	for range 6 {
		wg.Go(func() {
			r, err := e.Appeal(context.Background(), e.req, req)
			if err != nil {
				t.Error(err)
				return
			}
			if decodeChanged(t, r).Matter.Status == matters.StatusOverturned {
				overturned.Add(1)
			}
		})
	}
	wg.Wait()
	if overturned.Load() != 6 {
		t.Fatalf("%d of 6 saw the matter overturned", overturned.Load())
	}
	if n := strings.Count(strings.Join(kinds(t, e, id), " "), "appeal_resolved"); n != 1 {
		t.Fatalf("%d resolutions", n)
	}
	if got := e.wallet(t, "rita"); got != 1000*xpay+2*xbond {
		t.Fatalf("rita holds %d: two bonds, and the one fee it paid refunded", got)
	}
	audit(t, e)
}
