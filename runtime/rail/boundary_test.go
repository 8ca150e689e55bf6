package rail_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/matters/appealcourt"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/rail"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

// The money boundary's property, across the services: random sequences of
// court, market, judgment and exchange calls, by several agents, each
// made as the agent itself, as another, anonymously or as the operator,
// with amounts from one micro-dollar to the largest each call takes. After
// every step, no agent can withdraw more of the backed currency
// (rail.USDMicro) than was deposited on the rail in all: what the ledger's
// accounts hold of it, the rail's aside, is exactly what was deposited
// less what was withdrawn, no account but the rail's is below zero, and
// no mint ever made any of it.

// boundarySeeds are the sequences the test runs, on each store.
var boundarySeeds = []uint64{1, 7, 42, 20261205}

// boundarySteps is how many calls a sequence makes.
const boundarySteps = 200

func TestBoundary_Property(t *testing.T) {
	for _, seed := range boundarySeeds {
		t.Run(fmt.Sprintf("badger/%d", seed), func(t *testing.T) {
			db, err := storage.Open("", storage.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			runBoundary(t, db, seed)
		})
	}
	if os.Getenv(pgtest.Env) == "" {
		t.Log("PostgreSQL skipped: set " + pgtest.Env)
		return
	}
	for _, seed := range boundarySeeds {
		t.Run(fmt.Sprintf("postgres/%d", seed), func(t *testing.T) {
			pg, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pg.Close() })
			runBoundary(t, pg, seed)
		})
	}
}

// randJuror votes as its seeded source says.
type randJuror struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (j *randJuror) Vote(context.Context, adjudicate.SemanticQuestion) (adjudicate.Vote, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return adjudicate.Vote{Pass: j.rng.IntN(2) == 0, Reason: "random"}, nil
}

// boundary is one sequence's world.
type boundary struct {
	t      *testing.T
	st     store.Store
	rng    *rand.Rand
	court  *escrow.Service
	market *market.Service
	judge  *matters.Service
	agents []principal.Actor
	// deposited and withdrawn are what the rail took in and paid out, in
	// micro-USD, as the market's answers say.
	deposited, withdrawn int64
	contracts            []string
	listings             []string
	matters              []string
	requester            map[string]principal.Actor
	n                    int
	counts               map[string]int
	// won counts the calls that went through, by kind.
	won map[string]int
}

func runBoundary(t *testing.T, st store.Store, seed uint64) {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: t.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{byte(seed)})})
	if err != nil {
		t.Fatal(err)
	}
	reg := principal.New(st, now)
	b := &boundary{t: t, st: st, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[string]int{}, won: map[string]int{}, requester: map[string]principal.Actor{}}
	b.court, err = escrow.New(ctx, escrow.Config{Store: st, Signer: keys, Now: now, Auth: principal.Signed, Identities: reg,
		Juror: &randJuror{rng: rand.New(rand.NewPCG(seed, 1))}})
	if err != nil {
		t.Fatal(err)
	}
	if b.market, err = market.New(market.Config{Store: st, Signer: keys, Now: now, Auth: principal.Signed}); err != nil {
		t.Fatal(err)
	}
	if b.judge, err = matters.New(matters.Config{Store: st, Signer: keys, Now: now, Auth: principal.Signed, Principals: reg,
		Court: appealcourt.New(b.court)}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		pub, _, _ := ed25519.GenerateKey(nil)
		p, err := reg.Add(ctx, principal.Principal{KeyID: fmt.Sprintf("agent-%d", i), PublicKey: base64.StdEncoding.EncodeToString(pub), Tenant: "t1",
			Roles:  []string{principal.RoleRequester, principal.RoleSolver, principal.RoleOperator},
			Scopes: []string{principal.ScopeRead, principal.ScopePrivate, principal.ScopeWrite}})
		if err != nil {
			t.Fatal(err)
		}
		a := principal.FromPrincipal(p)
		b.agents = append(b.agents, a)
		if _, err := b.judge.RegisterSolver(ctx, a, matters.RegisterSolverRequest{SolverKind: "human", IdempotencyKey: b.key()}); err != nil {
			t.Fatal(err)
		}
	}
	ops := []struct {
		name string
		run  func()
	}{
		{"deposit", b.deposit}, {"withdraw", b.withdraw},
		{"contract", b.contract}, {"case", b.caseStep},
		{"publish", b.publish}, {"buy", b.buy},
		{"quorum", b.quorum}, {"appeal", b.appeal},
	}
	for step := range boundarySteps {
		op := ops[b.rng.IntN(len(ops))]
		op.run()
		b.counts[op.name]++
		b.check(step, op.name)
	}
	t.Logf("seed %d: steps %v; went through %v; deposited %d, withdrawn %d micro-USD", seed, b.counts, b.won, b.deposited, b.withdrawn)
}

func (b *boundary) key() string { b.n++; return "k" + strconv.Itoa(b.n) }

// agent is a random agent.
func (b *boundary) agent() principal.Actor { return b.agents[b.rng.IntN(len(b.agents))] }

// caller is who makes a call that is agent's: mostly the agent, else
// another agent, the anonymous caller or the operator.
func (b *boundary) caller(agent principal.Actor) principal.Actor {
	switch b.rng.IntN(8) {
	case 0:
		return principal.Actor{}
	case 1:
		return principal.Operator()
	case 2:
		return b.agent()
	}
	return agent
}

// amount is a random amount up to limit: the extremes (one unit, the
// limit and one less), any amount, and most often one of at most $50,
// so that sequences also go through.
func (b *boundary) amount(limit int64) int64 {
	switch b.rng.IntN(8) {
	case 0:
		return 1
	case 1:
		return limit
	case 2:
		return max(limit-1, 1)
	case 3:
		return 1 + b.rng.Int64N(limit)
	}
	return 1 + b.rng.Int64N(min(limit, 50*int64(market.USD1)))
}

func usd(micros int64) json.RawMessage {
	return json.RawMessage(strconv.Quote(market.USD(micros).String()))
}

// expected fails the test on an error that is no refusal: every refusal
// of a random call is a coded 4xx-kind fault.
func (b *boundary) expected(what string, err error) bool {
	if err == nil {
		b.won[what]++
		return true
	}
	switch fault.KindOf(err) {
	case fault.Invalid, fault.Unauthorized, fault.Forbidden, fault.NotFound, fault.Conflict, fault.Unprocessable, fault.TooLarge:
		return false
	}
	if fault.CodeOf(err) == matters.ECodeAppealUnavailable {
		return false
	}
	b.t.Fatalf("%s: %v (kind %s, code %s)", what, err, fault.KindOf(err), fault.CodeOf(err))
	return false
}

func (b *boundary) deposit() {
	a := b.agent()
	amount := b.amount(int64(market.MaxAmount))
	r, err := b.market.Deposit(context.Background(), b.caller(a), a.Agent, market.AmountRequest{AmountUSD: usd(amount)}, idem.Request{})
	if b.expected("deposit", err) && !r.Replayed {
		b.deposited += amount
	}
}

func (b *boundary) withdraw() {
	a := b.agent()
	bal := b.balance(ledger.AgentAccount(a.Agent))
	amount := b.amount(max(bal+1, 1))
	r, err := b.market.Withdraw(context.Background(), b.caller(a), a.Agent, market.AmountRequest{AmountUSD: usd(amount)}, idem.Request{})
	if b.expected("withdraw", err) && !r.Replayed {
		b.withdrawn += amount
	}
}

// contract creates a court contract between two agents, in the backed
// currency or a notional one, at a random price up to the largest, and
// tries to fund it.
func (b *boundary) contract() {
	ctx := context.Background()
	buyer, seller := b.agent(), b.agent()
	if buyer.Agent == seller.Agent {
		return
	}
	currency := rail.USDMicro
	if b.rng.IntN(3) == 0 {
		currency = "credits"
	}
	price := b.amount(escrow.MaxPrice)
	r, err := b.court.Create(ctx, escrow.CreateRequest{Buyer: buyer.Agent, Seller: seller.Agent, Currency: currency,
		Price: json.RawMessage(strconv.FormatInt(price, 10)), Acceptance: json.RawMessage(`{"assertions":[{"path":"rows","op":"gte","value":3}]}`)}, idem.Request{})
	if !b.expected("create", err) {
		return
	}
	var c escrow.Created
	if err := json.Unmarshal(r.Body, &c); err != nil {
		b.t.Fatal(err)
	}
	b.contracts = append(b.contracts, c.ContractID)
	_, err = b.court.Fund(ctx, b.caller(buyer), c.ContractID, idem.Request{})
	b.expected("fund", err)
}

// caseStep moves a random contract on: fund, deliver, accept or dispute,
// as a random caller.
func (b *boundary) caseStep() {
	if len(b.contracts) == 0 {
		return
	}
	ctx := context.Background()
	id := b.contracts[b.rng.IntN(len(b.contracts))]
	c, err := b.court.Get(ctx, id)
	if err != nil {
		b.t.Fatal(err)
	}
	who := func(agent string) principal.Actor {
		for _, a := range b.agents {
			if a.Agent == agent {
				return b.caller(a)
			}
		}
		return principal.Actor{}
	}
	switch b.rng.IntN(4) {
	case 0:
		_, err = b.court.Fund(ctx, who(c.Buyer), id, idem.Request{})
	case 1:
		_, err = b.court.Deliver(ctx, who(c.Seller), id, escrow.DeliverRequest{Deliverable: json.RawMessage(fmt.Sprintf(`{"rows":%d}`, b.rng.IntN(6)))}, idem.Request{})
	case 2:
		_, err = b.court.Accept(ctx, who(c.Buyer), id, idem.Request{})
	default:
		_, err = b.court.Dispute(ctx, who(c.Buyer), id, escrow.DisputeRequest{Reason: "random"}, idem.Request{})
	}
	b.expected("case", err)
}

// publish lists a level-2 artifact (its bond from the seller's wallet).
func (b *boundary) publish() {
	a := b.agent()
	price := b.amount(int64(market.MaxAmount) / 2)
	r, err := b.market.Publish(context.Background(), b.caller(a), market.PublishRequest{Agent: a.Agent, Title: "squares",
		ProblemStatement: fmt.Sprintf("a table of the first %d squares", b.rng.IntN(1000)+3), Artifact: json.RawMessage(`"1 4 9"`),
		ArtifactType: "dataset", PriceUSD: usd(price)}, idem.Request{})
	if !b.expected("publish", err) {
		return
	}
	var out struct {
		Listing struct {
			ID string `json:"listing_id"`
		} `json:"listing"`
	}
	if err := json.Unmarshal(r.Body, &out); err != nil {
		b.t.Fatal(err)
	}
	b.listings = append(b.listings, out.Listing.ID)
}

func (b *boundary) buy() {
	if len(b.listings) == 0 {
		return
	}
	a := b.agent()
	_, err := b.market.Buy(context.Background(), b.caller(a), b.listings[b.rng.IntN(len(b.listings))], market.PurchaseRequest{Agent: a.Agent}, idem.Request{})
	b.expected("buy", err)
}

var boundarySchema = json.RawMessage(`{"type":"object","required":["decision"],"properties":{"decision":{"type":"string","enum":["approve","deny"]}}}`)

const boundaryDigest = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"

// quorum opens a staked quorum Matter of three seats (the pay from the
// requester's wallet, each bond from a solver's) and brings it as far as
// it goes to judged.
func (b *boundary) quorum() {
	ctx := context.Background()
	req := b.agent()
	var solvers []principal.Actor
	for _, a := range b.agents {
		if a.Agent != req.Agent && len(solvers) < 3 {
			solvers = append(solvers, a)
		}
	}
	pay, bond := market.USD(b.amount(int64(market.MaxAmount)/8)), market.USD(b.amount(int64(market.MaxAmount)/8))
	r, err := b.judge.OpenQuorum(ctx, b.caller(req), matters.QuorumOpenRequest{OpenRequest: matters.OpenRequest{
		ActionDigest: boundaryDigest, Question: "pay?", StakesUSDC: "1", Deadline: "2026-05-01T13:00:00Z", RiskClass: "spend",
		VerdictSchema: boundarySchema, IdempotencyKey: b.key()},
		Quorum: matters.QuorumSpec{Solvers: 3, Agree: 2, AgreeOn: []string{"decision"}, PayUSDC: pay.String(), BondUSDC: bond.String()}})
	if !b.expected("open quorum", err) {
		return
	}
	var ch matters.Changed
	if err := json.Unmarshal(r.Body, &ch); err != nil {
		b.t.Fatal(err)
	}
	id := ch.Matter.ID
	b.matters = append(b.matters, id)
	b.requester[id] = req
	for _, s := range solvers {
		if _, err := b.judge.AssignSeat(ctx, req, matters.SeatRequest{MatterID: id, SolverID: s.Agent, IdempotencyKey: b.key()}); !b.expected("seat", err) {
			return
		}
		if _, err := b.judge.AcceptSeat(ctx, s, matters.AcceptRequest{MatterID: id, IdempotencyKey: b.key()}); !b.expected("accept seat", err) {
			return
		}
	}
	verdicts := make([]json.RawMessage, len(solvers))
	for i, s := range solvers {
		verdicts[i] = json.RawMessage(fmt.Sprintf(`{"decision":%q}`, []string{"approve", "deny"}[b.rng.IntN(2)]))
		sum, err := matters.Commitment(id, s.Agent, verdicts[i], strings.Repeat("5a", 16)+s.Agent)
		if err != nil {
			b.t.Fatal(err)
		}
		if _, err := b.judge.Commit(ctx, s, matters.CommitRequest{MatterID: id, Commitment: sum, IdempotencyKey: b.key()}); !b.expected("commit", err) {
			return
		}
	}
	for i, s := range solvers {
		_, err := b.judge.Reveal(ctx, s, matters.RevealRequest{MatterID: id, ActionDigest: boundaryDigest, Verdict: verdicts[i],
			Salt: strings.Repeat("5a", 16) + s.Agent, IdempotencyKey: b.key()})
		if !b.expected("reveal", err) {
			return
		}
	}
}

// appeal appeals a random Matter with a random fee, as a random caller:
// the fee is the court case's price, taken from the appellant's wallet.
func (b *boundary) appeal() {
	if len(b.matters) == 0 {
		return
	}
	ctx := context.Background()
	id := b.matters[b.rng.IntN(len(b.matters))]
	fee := market.USD(b.amount(int64(market.MaxAmount)))
	_, err := b.judge.Appeal(ctx, b.caller(b.requester[id]), matters.AppealRequest{MatterID: id, Reason: "disagree", FeeUSDC: fee.String(),
		ActionDigest: boundaryDigest, IdempotencyKey: b.key()})
	b.expected("appeal", err)
}

func (b *boundary) balance(account string) int64 {
	var n int64
	err := b.st.View(context.Background(), func(tx store.Tx) error {
		var err error
		n, err = ledger.Balance(tx, account, rail.USDMicro)
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// check holds the boundary after a step.
func (b *boundary) check(step int, op string) {
	var audit ledger.Audit
	held := int64(0)
	err := b.st.View(context.Background(), func(tx store.Tx) error {
		var err error
		if audit, err = ledger.Check(tx); err != nil {
			return err
		}
		return ledger.Legs(tx, func(leg ledger.Leg) error {
			if leg.Currency == rail.USDMicro && !strings.HasPrefix(leg.Account, "rail:") {
				held += leg.Amount
				if strings.HasPrefix(leg.Account, rail.MintPrefix) {
					return fmt.Errorf("%s was minted into %s by %s", rail.USDMicro, leg.Account, leg.Transfer)
				}
			}
			return nil
		})
	})
	if err != nil {
		b.t.Fatalf("step %d (%s): %v", step, op, err)
	}
	if !audit.Balanced {
		b.t.Fatalf("step %d (%s): the ledger is not balanced: %+v", step, op, audit)
	}
	if want := b.deposited - b.withdrawn; held != want {
		b.t.Fatalf("step %d (%s): the accounts hold %d micro-USD; %d were deposited and %d withdrawn", step, op, held, b.deposited, b.withdrawn)
	}
	for _, a := range b.agents {
		if bal := b.balance(ledger.AgentAccount(a.Agent)); bal < 0 || bal > b.deposited-b.withdrawn {
			b.t.Fatalf("step %d (%s): %s can withdraw %d micro-USD of %d deposited less withdrawn", step, op, a.Agent, bal, b.deposited-b.withdrawn)
		}
	}
}
