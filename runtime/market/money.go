package market

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/rail"
)

// Currency is the ledger currency of the market: integer micro-USD.
const Currency = rail.USDMicro

// Micro is one micro-USD; USD is one dollar in micros.
const (
	Micro USD = 1
	Cent  USD = 10_000
	USD1  USD = 1_000_000
)

// MaxUSD is the largest amount ParseUSD reads: receipts carry amounts as
// exact JSON numbers, which RFC 8785 bounds at 2^53-1 (about $9 billion).
const MaxUSD USD = 1<<53 - 1

// Bounds on money, in micro-USD. Every amount a client states and every
// balance stays far inside int64 (about 9.2 x 10^18 micro-USD, $9.2
// trillion), so no sum the market computes can overflow, and every
// amount a receipt carries stays under MaxUSD.
const (
	// MaxAmount bounds one deposit, one withdrawal, a price and a
	// recompute estimate: $1,000,000,000. A price's 3% fee and its bond
	// stay under it too (price + fee is at most $1,030,000,000).
	MaxAmount USD = 1_000_000_000 * USD1
	// MaxWallet bounds what deposits can bring a wallet to:
	// $5,000,000,000. Money the market itself pays into a wallet (sale
	// proceeds, refunds, bonds) is never refused, since refusing it would
	// strand it in a hold; it is bounded by MaxTotal.
	MaxWallet USD = 5_000_000_000 * USD1
	// MaxTotal bounds all the money in the market (deposits less
	// withdrawals): $1,000,000,000,000, a ninth of int64. Every wallet,
	// hold and the platform's account sits between 0 and MaxTotal.
	MaxTotal USD = 1_000_000_000_000 * USD1
)

// The market's bounds sit inside the ledger's (runtime/ledger): a posting
// the market makes is at most price + fee, within ledger.MaxAmount, and
// no balance passes MaxTotal, within ledger.MaxBalance. These constants
// do not compile if that ever stops being so.
const (
	_ = uint64(ledger.MaxAmount - (MaxAmount + MaxAmount*FeePercent/100))
	_ = uint64(ledger.MaxBalance - MaxTotal)
	_ = uint64(ledger.MaxTotal - MaxTotal)
	_ = uint64(MaxUSD - MaxWallet)
)

// Add returns a + b, or amount_too_large when the sum would leave
// [0, MaxTotal] or overflow: the one way the market adds money.
func Add(a, b USD) (USD, error) {
	sum := a + b
	if (b > 0 && sum < a) || (b < 0 && sum > a) || sum < 0 || sum > MaxTotal {
		return 0, fault.New(fault.Invalid, ECodeAmountTooLarge, "$%s + $%s is beyond the market's bound of $%s", a, b, MaxTotal)
	}
	return sum, nil
}

// USD is an amount in integer micro-USD. In JSON it is a decimal number of
// dollars with at most six fractional digits ("2.5", not 2500000), written
// exactly: no float ever holds it.
type USD int64

// String returns the amount as a decimal number of dollars, without
// trailing zeros: 2.5, 0.000001, 12.
func (u USD) String() string {
	neg := u < 0
	if neg {
		u = -u
	}
	s := strconv.FormatInt(int64(u/USD1), 10)
	if frac := int64(u % USD1); frac != 0 {
		f := strings.TrimRight(strconv.FormatInt(1_000_000+frac, 10)[1:], "0")
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes the amount as a JSON number of dollars.
func (u USD) MarshalJSON() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalJSON reads a JSON number (or a string holding one) of dollars;
// see ParseUSD.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(b, "amount")
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUSD reads a non-negative decimal number of dollars, given as a JSON
// number or a JSON string, exactly: "2.50" is 2,500,000 micros. It refuses
// more than six fractional digits (nothing is rounded), exponents, signs,
// and amounts over MaxUSD. field names the value in error messages.
func ParseUSD(raw json.RawMessage, field string) (USD, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, fault.New(fault.Invalid, ECodeMissingField, "%s is required: a decimal number of US dollars, e.g. 2.50", field)
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	bad := func(why string) (USD, error) {
		return 0, fault.New(fault.Invalid, ECodeInvalidAmount, "%s must be a decimal number of US dollars with at most 6 fractional digits, e.g. 2.50: %s", field, why)
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || !digits(whole) || !digits(frac) {
		return bad("not " + truncate(s, 40))
	}
	if len(whole) > 1 && whole[0] == '0' {
		return bad("leading zeros")
	}
	if len(frac) > 6 {
		return bad(truncate(s, 40) + " has " + strconv.Itoa(len(frac)) + " fractional digits, and amounts are never rounded")
	}
	tooLarge := func() (USD, error) {
		return 0, fault.New(fault.Invalid, ECodeAmountTooLarge, "%s is %s; the largest amount is %s", field, truncate(s, 40), MaxUSD)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > int64(MaxUSD/USD1) {
		return tooLarge()
	}
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	v := USD(w)*USD1 + USD(f)
	if v > MaxUSD {
		return tooLarge()
	}
	return v, nil
}

// ParseAmount is ParseUSD for an amount a client states (a deposit, a
// withdrawal, a price, an estimate): at most MaxAmount.
//
// # Errors
//
// missing_field, invalid_amount, amount_too_large (400).
func ParseAmount(raw json.RawMessage, field string) (USD, error) {
	v, err := ParseUSD(raw, field)
	if err == nil && v > MaxAmount {
		err = fault.New(fault.Invalid, ECodeAmountTooLarge, "%s is $%s; one amount is at most $%s", field, v, MaxAmount)
	}
	return v, err
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Money rules of the seed, in micro-USD.
const (
	FeePercent  = 3               // the platform's take on a settled sale
	BondPercent = 20              // a level-2 bond is this share of the price...
	MinBond     = 500_000 * Micro // ...and at least $0.50
	// Level2Threshold: a level-2 sale under it holds 24 h, from it 72 h.
	Level2Threshold = 5 * USD1
)

// Fee is the 3% platform fee on price, rounded half up to the micro-USD:
// the one rounding in the market, and documented here. It is computed
// without overflow for any non-negative price: (price x 3 + 50) / 100 as
// 3 x (price / 100) + ((price mod 100) x 3 + 50) / 100, which is the same.
func Fee(price USD) USD { return price/100*FeePercent + (price%100*FeePercent+50)/100 }

// Bond is a level-2 listing's bond: max(20% of price, $0.50), with 20%
// rounded up to the micro-USD so that the bond never falls short of it;
// computed without overflow, as Fee is.
func Bond(price USD) USD { return max(price/100*BondPercent+(price%100*BondPercent+99)/100, MinBond) }

// Window is the challenge window of a sale, which is also its settlement
// hold: 1 h for levels 1 and 3; for level 2, 24 h under $5 and 72 h from $5.
func Window(level int, price USD) time.Duration {
	if level == 2 {
		if price < Level2Threshold {
			return 24 * time.Hour
		}
		return 72 * time.Hour
	}
	return time.Hour
}
