// Package ledger moves money by double-entry postings in integer minor units.
// Every transfer writes two legs, a debit and a credit of the same amount,
// so the sum over all accounts is zero after every transaction. Legs are
// append-only and keyed uniquely, so concurrent transfers never contend for
// a balance key; a balance is the sum of its account's legs.
//
// Accounts are named by strings with a kind prefix: "rail:dev" (money
// outside Assay, on a payment rail), "hold:escrow:<contract>" (funds held
// for a case), "agent:<did>" (what Assay owes an agent). Any string is a
// valid account name; it is escaped in keys.
//
// # Bounds
//
// Money cannot overflow. A transfer moves 1 to MaxAmount (2^53-1) minor
// units, so every amount is exact in a JSON number of any language. No
// account's balance in a currency ever passes ±MaxBalance (2^62): each
// account keeps, beside its legs, up to Shards (512) counters of what its
// legs add up to; a transfer adds to one counter of each of its two
// accounts, chosen by the transfer's id, and a transfer that would take a
// counter past ±MaxBalance/Shards (2^53, room for one transfer of the
// largest amount) is refused with balance_limit and nothing is written.
// The counters are many so that concurrent transfers through one account
// (a rail, a popular agent) seldom touch the same one: legs stay
// append-only and transfers seldom conflict. An account meets its bound
// a little before MaxBalance when its transfers are of the largest
// amounts (two of them whose ids hash alike), and for ordinary amounts
// never in practice. The money in circulation in a currency is what the
// rail accounts paid in, so it is at most MaxBalance per rail; MaxTotal
// bounds the ledger's total, what Check reports. All arithmetic on amounts
// is checked; sums over many legs are exact (math/big), and Check reports
// any balance or sum out of its bounds rather than a wrapped-around
// number.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// AgentPrefix starts the name of an agent's account.
const AgentPrefix = "agent:"

// AgentAccount is the account of what Assay owes the agent did, in every
// service: the court pays verdicts into it and the market keeps its wallet
// there, so that an agent has one balance.
func AgentAccount(did string) string { return AgentPrefix + did }

const (
	prefix      = "ledger/entry/"
	shardPrefix = "ledger/shard/"
	lockPrefix  = "ledger/lock/"
)

// Lock makes every transaction that debits account conflict with every
// other that does, whichever service makes them: each reads and rewrites
// the account's lock counter, so the store serialises them, and a Balance
// read after Lock in the same transaction is the balance the debit will
// act on. A balance is the sum of the account's legs, and a scan of them
// does not conflict with a concurrent transaction that adds a leg (a
// phantom), so a check of funds without Lock may pass twice on one
// balance. Call it before reading the balance a debit depends on.
func Lock(tx store.Tx, account string) error {
	k := LockKey(account)
	var n int64
	if err := store.GetJSON(tx, k, &n); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return store.SetJSON(tx, k, n+1)
}

// LockKey is the key Lock reads and rewrites for account, for a
// transaction that reads it ahead (store.Tx.GetMany).
func LockKey(account string) string { return lockPrefix + url.PathEscape(account) }

// The bounds (see the package doc).
const (
	// MaxAmount is the most one transfer moves: 2^53-1, exact in a
	// float64, so that a JSON client in any language reads it exactly.
	MaxAmount = 1<<53 - 1
	// MaxBalance bounds every account's balance in a currency, above and
	// below: 2^62, so that a balance plus any amount fits in an int64.
	MaxBalance = 1 << 62
	// MaxTotal bounds the sum of the positive balances in a currency that
	// Check accepts as sound.
	MaxTotal = 1 << 62
	// Shards is how many counters bound each account: MaxBalance /
	// Shards is 2^53, just over MaxAmount.
	Shards = 512
)

// ECodeBalanceLimit is the code of a transfer refused because an account's
// balance would pass MaxBalance.
const ECodeBalanceLimit = "balance_limit"

// Transfer moves Amount of Currency from one account to another.
type Transfer struct {
	// ID names the transfer; unique, and the same for both legs.
	ID       string
	From, To string
	Amount   int64
	Currency string
	Memo     string
	At       time.Time
}

// Leg is one side of a transfer as stored: positive credits the account,
// negative debits it.
type Leg struct {
	Transfer string    `json:"transfer"`
	Account  string    `json:"account"`
	Counter  string    `json:"counter"`
	Amount   int64     `json:"amount"`
	Currency string    `json:"currency"`
	Memo     string    `json:"memo,omitempty"`
	At       time.Time `json:"at"`
}

// CheckAmount returns an invalid_amount error unless n is from 1 to
// MaxAmount.
func CheckAmount(n int64) error {
	if n <= 0 || n > MaxAmount {
		return fault.New(fault.Invalid, "invalid_amount", "a transfer moves from 1 to %d minor units, not %d", int64(MaxAmount), n)
	}
	return nil
}

// Add returns a+b and whether it is exact (did not overflow an int64).
func Add(a, b int64) (int64, bool) {
	s := a + b
	// Overflow happened iff a and b have the same sign and s another.
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// Post writes a transfer's two legs in tx.
//
// # Errors
//
// invalid_amount (the amount is not 1 to MaxAmount), invalid_currency;
// balance_limit (conflict kind) when either account's balance would pass
// MaxBalance; a ledger error of internal kind for a transfer a service
// should never build (no id, from an account to itself, posted twice).
// On any error nothing is written.
func Post(tx store.Tx, t Transfer) error {
	switch {
	case t.ID == "" || strings.Contains(t.ID, "/"):
		return fault.New(fault.Internal, "ledger", "transfer id %q is empty or has a slash", t.ID)
	case t.Amount <= 0 || t.Amount > MaxAmount:
		return CheckAmount(t.Amount)
	case t.From == t.To:
		return fault.New(fault.Internal, "ledger", "transfer %s from %s to itself", t.ID, t.From)
	case t.Currency == "":
		return fault.New(fault.Invalid, "invalid_currency", "a transfer needs a currency")
	}
	legs := []Leg{
		{Transfer: t.ID, Account: t.From, Counter: t.To, Amount: -t.Amount, Currency: t.Currency, Memo: t.Memo, At: t.At},
		{Transfer: t.ID, Account: t.To, Counter: t.From, Amount: t.Amount, Currency: t.Currency, Memo: t.Memo, At: t.At},
	}
	// Read and check everything before writing anything: the keys
	// ReadKeys names, then written with the second leg's key.
	keys := append(appendReadKeys(make([]string, 0, 4), t), legKey(legs[1], 1))
	vals, err := tx.GetMany(keys[:3]...) // one round trip where the store's reads are round trips
	if err != nil {
		return err
	}
	if vals[0] != nil {
		return fault.New(fault.Internal, "ledger", "transfer %s posted twice", t.ID)
	}
	var counters [2]int64
	for i, leg := range legs {
		n, err := parseCounter(keys[1+i], vals[1+i])
		if err != nil {
			return err
		}
		next, ok := Add(n, leg.Amount)
		if !ok || next > MaxBalance/Shards || next < -MaxBalance/Shards {
			dir := "above"
			if leg.Amount < 0 {
				dir = "below"
			}
			return fault.New(fault.Conflict, ECodeBalanceLimit, "transfer %s of %d %s would take account %s near or %s its bound of ±%d; nothing was moved",
				t.ID, t.Amount, t.Currency, leg.Account, dir, int64(MaxBalance))
		}
		counters[i] = next
	}
	legKeys := [2]string{keys[0], keys[3]}
	for i, leg := range legs {
		b, err := encodeLeg(leg)
		if err != nil {
			return err
		}
		if err := tx.Set(legKeys[i], b); err != nil {
			return err
		}
		// A counter is a JSON number, written as strconv writes it.
		if err := tx.Set(keys[1+i], strconv.AppendInt(nil, counters[i], 10)); err != nil {
			return err
		}
	}
	return nil
}

// ReadKeys returns the keys that Post reads for t, in the order it reads
// them, so that a transaction that knows its transfer before it starts
// can read them ahead (store.Tx.GetMany): the first leg's key (the two legs
// are only ever written together, in one transaction, so the first tells
// whether the transfer was posted), then the counter of each account's
// shard that the transfer moves.
func ReadKeys(t Transfer) []string { return appendReadKeys(make([]string, 0, 3), t) }

// appendReadKeys appends ReadKeys(t) to keys.
func appendReadKeys(keys []string, t Transfer) []string {
	shard := shardOf(t.ID)
	return append(keys, legKey(Leg{Transfer: t.ID, Account: t.From}, 0), shardKey(t.From, t.Currency, shard), shardKey(t.To, t.Currency, shard))
}

// parseCounter reads a shard counter's value; an absent one (nil) is zero.
func parseCounter(key string, b []byte) (int64, error) {
	if b == nil {
		return 0, nil
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return n, nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, fmt.Errorf("ledger: decode %s: %w", key, err)
	}
	return n, nil
}

func legKey(leg Leg, i int) string {
	return prefix + url.PathEscape(leg.Account) + "/" + leg.Transfer + "/" + strconv.Itoa(i)
}

func shardKey(account, currency string, shard uint32) string {
	return shardPrefix + url.PathEscape(account) + "/" + url.PathEscape(currency) + "/" + strconv.FormatUint(uint64(shard), 10)
}

// shardOf is FNV-1a of the transfer's id, modulo Shards.
func shardOf(transfer string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(transfer); i++ {
		h = (h ^ uint32(transfer[i])) * 16777619
	}
	return h % Shards
}

// Account is an account's balances by currency, and its legs.
type Account struct {
	ID       string           `json:"id"`
	Balances map[string]int64 `json:"balances"`
	Entries  []Leg            `json:"entries"`
}

// Get returns an account; an account with no legs has empty balances.
//
// # Errors
//
// ledger_out_of_bounds (internal kind) when a balance passes MaxBalance,
// which Post never lets happen: the ledger is broken.
func Get(tx store.Tx, account string) (Account, error) {
	a := Account{ID: account, Balances: map[string]int64{}, Entries: []Leg{}}
	sums := map[string]*big.Int{}
	err := tx.Scan(prefix+url.PathEscape(account)+"/", false, func(k string, v []byte) error {
		leg, err := decodeLeg(k, v)
		if err != nil {
			return err
		}
		addBig(sums, leg.Currency, leg.Amount)
		a.Entries = append(a.Entries, leg)
		return nil
	})
	if err != nil {
		return a, err
	}
	for cur, s := range sums {
		if !inBounds(s, MaxBalance) {
			return a, fault.New(fault.Internal, "ledger_out_of_bounds", "account %s holds %s %s, past the bound of ±%d", account, s, cur, int64(MaxBalance))
		}
		a.Balances[cur] = s.Int64()
	}
	sort.SliceStable(a.Entries, func(i, j int) bool { return a.Entries[i].At.Before(a.Entries[j].At) })
	return a, nil
}

// Balance returns one account's balance in one currency.
func Balance(tx store.Tx, account, currency string) (int64, error) {
	a, err := Get(tx, account)
	return a.Balances[currency], err
}

// Sums returns, per currency, the sum of every leg in the ledger, exact
// (a sum beyond an int64 is reported as math.MaxInt64 or math.MinInt64).
// Every value is zero unless the ledger is broken. Check also checks the
// bounds of every balance.
func Sums(tx store.Tx) (map[string]int64, error) {
	a, err := Check(tx)
	if err != nil {
		return nil, err
	}
	return a.Sums, nil
}

// SumsOf is Sums on a snapshot of st.
func SumsOf(ctx context.Context, st store.Store) (map[string]int64, error) {
	var sums map[string]int64
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		sums, err = Sums(tx)
		return err
	})
	return sums, err
}

// Audit is what Check found.
type Audit struct {
	// Sums is, per currency, the sum of every leg: zero when sound. A sum
	// beyond an int64 is reported as math.MaxInt64 or math.MinInt64.
	Sums map[string]int64 `json:"sums"`
	// Balanced is true when every sum is zero, every leg's amount and
	// every account's balance is within its bound and every currency's
	// total is at most MaxTotal.
	Balanced bool `json:"balanced"`
	// OutOfBounds names, in order, what passed a bound, e.g.
	// "account agent:did:x holds 9300000000000000000 credits".
	OutOfBounds []string `json:"out_of_bounds,omitempty"`
}

// Legs calls fn with every leg of the ledger, in key order, until fn
// returns an error.
func Legs(tx store.Tx, fn func(Leg) error) error {
	return tx.Scan(prefix, false, func(k string, v []byte) error {
		leg, err := decodeLeg(k, v)
		if err != nil {
			return err
		}
		return fn(leg)
	})
}

// Check reads the whole ledger and checks it with exact arithmetic: the
// sums per currency, each leg's amount, each account's balance and each
// currency's total (the sum of the positive balances).
func Check(tx store.Tx) (Audit, error) {
	sums := map[string]*big.Int{}
	balances := map[[2]string]*big.Int{}
	var bad []string
	err := tx.Scan(prefix, false, func(k string, v []byte) error {
		leg, err := decodeLeg(k, v)
		if err != nil {
			return err
		}
		if leg.Amount == 0 || leg.Amount > MaxAmount || leg.Amount < -MaxAmount {
			bad = append(bad, fmt.Sprintf("leg %s of account %s moves %d %s", leg.Transfer, leg.Account, leg.Amount, leg.Currency))
		}
		addBig(sums, leg.Currency, leg.Amount)
		ac := [2]string{leg.Account, leg.Currency}
		if balances[ac] == nil {
			balances[ac] = new(big.Int)
		}
		balances[ac].Add(balances[ac], big.NewInt(leg.Amount))
		return nil
	})
	if err != nil {
		return Audit{}, err
	}
	totals := map[string]*big.Int{}
	keys := make([][2]string, 0, len(balances))
	for k := range balances {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		b := balances[k]
		if !inBounds(b, MaxBalance) {
			bad = append(bad, fmt.Sprintf("account %s holds %s %s", k[0], b, k[1]))
		}
		if b.Sign() > 0 {
			if totals[k[1]] == nil {
				totals[k[1]] = new(big.Int)
			}
			totals[k[1]].Add(totals[k[1]], b)
		}
	}
	curs := make([]string, 0, len(sums))
	for cur := range sums {
		curs = append(curs, cur)
	}
	sort.Strings(curs)
	a := Audit{Sums: map[string]int64{}, Balanced: true}
	for _, cur := range curs {
		if t := totals[cur]; t != nil && !inBounds(t, MaxTotal) {
			bad = append(bad, fmt.Sprintf("the total of %s is %s", cur, t))
		}
		s := sums[cur]
		switch {
		case s.IsInt64():
			a.Sums[cur] = s.Int64()
		case s.Sign() > 0:
			a.Sums[cur] = math.MaxInt64
		default:
			a.Sums[cur] = math.MinInt64
		}
		if s.Sign() != 0 {
			a.Balanced = false
		}
	}
	if len(bad) > 0 {
		a.Balanced, a.OutOfBounds = false, bad
	}
	return a, nil
}

func addBig(m map[string]*big.Int, k string, n int64) {
	if m[k] == nil {
		m[k] = new(big.Int)
	}
	m[k].Add(m[k], big.NewInt(n))
}

func inBounds(n *big.Int, bound int64) bool {
	return n.IsInt64() && n.Int64() <= bound && n.Int64() >= -bound
}

// storedLeg is a leg as stored: a CBOR array of what its key does not say
// (the key names the account and the transfer), about a third of the
// bytes of its JSON.
type storedLeg struct {
	_        struct{} `cbor:",toarray"`
	Counter  string
	Amount   int64
	Currency string
	Memo     string
	At       int64 // Unix seconds
	AtNanos  int64 `cbor:",omitempty"`
}

func encodeLeg(l Leg) ([]byte, error) {
	b, err := cbor.Marshal(storedLeg{Counter: l.Counter, Amount: l.Amount, Currency: l.Currency, Memo: l.Memo, At: l.At.Unix(), AtNanos: int64(l.At.Nanosecond())})
	if err != nil {
		return nil, fmt.Errorf("ledger: encode leg of %s: %w", l.Transfer, err)
	}
	return b, nil
}

// decodeLeg reads the leg stored under key as v: a CBOR array, or the
// JSON object a leg was stored as before (which names its own account and
// transfer).
func decodeLeg(key string, v []byte) (Leg, error) {
	var leg Leg
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, &leg); err != nil {
			return leg, fmt.Errorf("ledger: decode %s: %w", key, err)
		}
		return leg, nil
	}
	var st storedLeg
	if err := cbor.Unmarshal(v, &st); err != nil {
		return leg, fmt.Errorf("ledger: decode %s: %w", key, err)
	}
	// <escaped account>/<transfer>/<leg>: a transfer id has no slash.
	rest := strings.TrimPrefix(key, prefix)
	j := strings.LastIndexByte(rest, '/')
	i := -1
	if j > 0 {
		i = strings.LastIndexByte(rest[:j], '/')
	}
	if i < 0 {
		return leg, fmt.Errorf("ledger: a leg under the key %s, which names no account and transfer", key)
	}
	acct, err := url.PathUnescape(rest[:i])
	if err != nil {
		return leg, fmt.Errorf("ledger: decode %s: %w", key, err)
	}
	return Leg{Transfer: rest[i+1 : j], Account: acct, Counter: st.Counter, Amount: st.Amount, Currency: st.Currency,
		Memo: st.Memo, At: time.Unix(st.At, st.AtNanos).UTC()}, nil
}
