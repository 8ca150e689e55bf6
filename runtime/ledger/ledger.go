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
package ledger

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

const prefix = "ledger/entry/"

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

// Post writes a transfer's two legs in tx.
func Post(tx store.Tx, t Transfer) error {
	switch {
	case t.ID == "" || strings.Contains(t.ID, "/"):
		return fault.New(fault.Internal, "ledger", "transfer id %q is empty or has a slash", t.ID)
	case t.Amount <= 0:
		return fault.New(fault.Invalid, "invalid_amount", "a transfer moves a positive amount, not %d", t.Amount)
	case t.From == t.To:
		return fault.New(fault.Internal, "ledger", "transfer %s from %s to itself", t.ID, t.From)
	case t.Currency == "":
		return fault.New(fault.Invalid, "invalid_currency", "a transfer needs a currency")
	}
	for i, leg := range []Leg{
		{Transfer: t.ID, Account: t.From, Counter: t.To, Amount: -t.Amount, Currency: t.Currency, Memo: t.Memo, At: t.At},
		{Transfer: t.ID, Account: t.To, Counter: t.From, Amount: t.Amount, Currency: t.Currency, Memo: t.Memo, At: t.At},
	} {
		key := fmt.Sprintf("%s%s/%s/%d", prefix, url.PathEscape(leg.Account), t.ID, i)
		if _, err := tx.Get(key); err == nil {
			return fault.New(fault.Internal, "ledger", "transfer %s posted twice", t.ID)
		}
		if err := store.SetJSON(tx, key, leg); err != nil {
			return err
		}
	}
	return nil
}

// Account is an account's balances by currency, and its legs.
type Account struct {
	ID       string           `json:"id"`
	Balances map[string]int64 `json:"balances"`
	Entries  []Leg            `json:"entries"`
}

// Get returns an account; an account with no legs has empty balances.
func Get(tx store.Tx, account string) (Account, error) {
	a := Account{ID: account, Balances: map[string]int64{}, Entries: []Leg{}}
	err := tx.Scan(prefix+url.PathEscape(account)+"/", false, func(_ string, v []byte) error {
		var leg Leg
		if err := json.Unmarshal(v, &leg); err != nil {
			return err
		}
		a.Balances[leg.Currency] += leg.Amount
		a.Entries = append(a.Entries, leg)
		return nil
	})
	sort.SliceStable(a.Entries, func(i, j int) bool { return a.Entries[i].At.Before(a.Entries[j].At) })
	return a, err
}

// Balance returns one account's balance in one currency.
func Balance(tx store.Tx, account, currency string) (int64, error) {
	a, err := Get(tx, account)
	return a.Balances[currency], err
}

// Sums returns, per currency, the sum of every leg in the ledger. Every
// value is zero unless the ledger is broken.
func Sums(tx store.Tx) (map[string]int64, error) {
	sums := map[string]int64{}
	err := tx.Scan(prefix, false, func(_ string, v []byte) error {
		var leg Leg
		if err := json.Unmarshal(v, &leg); err != nil {
			return err
		}
		sums[leg.Currency] += leg.Amount
		return nil
	})
	return sums, err
}
