package market_test

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/market"
)

func TestParseUSD(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want market.USD
	}{
		{`2.50`, 2_500_000}, {`"2.50"`, 2_500_000}, {`0`, 0}, {`0.000001`, 1}, {`12`, 12_000_000},
		{`0.1`, 100_000}, {`9007199254.740991`, market.MaxUSD}, {`1.999999`, 1_999_999},
	} {
		got, err := market.ParseUSD(json.RawMessage(tc.in), "price_usd")
		if err != nil || got != tc.want {
			t.Errorf("ParseUSD(%s) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `null`, `-1`, `1e3`, `0.0000001`, `1.`, `.5`, `01.5`, `"abc"`, `9007199254.740992`, `99999999999999999999`, `true`, `+1`, `1.2.3`} {
		if got, err := market.ParseUSD(json.RawMessage(bad), "price_usd"); err == nil {
			t.Errorf("ParseUSD(%s) = %d, want an error", bad, got)
		} else if fault.KindOf(err) != fault.Invalid {
			t.Errorf("ParseUSD(%s): kind %s", bad, fault.KindOf(err))
		}
	}
}

func TestParseAmount(t *testing.T) {
	for in, want := range map[string]market.USD{`"1000000000"`: market.MaxAmount, `999999999.999999`: market.MaxAmount - 1, `0.000001`: 1} {
		if got, err := market.ParseAmount(json.RawMessage(in), "amount_usd"); err != nil || got != want {
			t.Errorf("ParseAmount(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{`1000000000.000001`, `9007199254.740991`, `9223372036854.775807`, `99999999999999999999`} {
		_, err := market.ParseAmount(json.RawMessage(bad), "amount_usd")
		if fault.CodeOf(err) != "amount_too_large" || fault.KindOf(err) != fault.Invalid {
			t.Errorf("ParseAmount(%s): %v, want amount_too_large", bad, err)
		}
	}
}

func TestAdd(t *testing.T) {
	for _, tc := range [][2]market.USD{{market.MaxTotal, 1}, {math.MaxInt64, 1}, {1, math.MaxInt64}, {0, -1}, {market.MaxTotal - 1, 2}} {
		if got, err := market.Add(tc[0], tc[1]); fault.CodeOf(err) != "amount_too_large" {
			t.Errorf("Add(%d, %d) = %d, %v; want amount_too_large", tc[0], tc[1], got, err)
		}
	}
	if got, err := market.Add(market.MaxTotal-1, 1); err != nil || got != market.MaxTotal {
		t.Errorf("Add to MaxTotal = %d, %v", got, err)
	}
}

// TestFeeBond_NoOverflow: Fee and Bond agree with exact big-integer
// arithmetic for every price up to int64's largest.
func TestFeeBond_NoOverflow(t *testing.T) {
	ref := func(p market.USD, pct, add int64) market.USD {
		n := new(big.Int).Mul(big.NewInt(int64(p)), big.NewInt(pct))
		n.Add(n, big.NewInt(add)).Quo(n, big.NewInt(100))
		return market.USD(n.Int64())
	}
	prices := []market.USD{0, 1, 16, 17, 99, 100, 101, market.MaxAmount, market.MaxAmount - 1, market.MaxTotal, math.MaxInt64, math.MaxInt64 - 99}
	for p := market.USD(math.MaxInt64); p > 0; p /= 7 {
		prices = append(prices, p, p-1)
	}
	for _, p := range prices {
		if got, want := market.Fee(p), ref(p, 3, 50); got != want {
			t.Errorf("Fee(%d) = %d, want %d", p, got, want)
		}
		if got, want := market.Bond(p), max(ref(p, 20, 99), market.MinBond); got != want {
			t.Errorf("Bond(%d) = %d, want %d", p, got, want)
		}
	}
}

func TestUSD_String(t *testing.T) {
	for u, want := range map[market.USD]string{0: "0", 1: "0.000001", 2_500_000: "2.5", 12_000_000: "12", 1_234_567: "1.234567", -500_000: "-0.5"} {
		if got := u.String(); got != want {
			t.Errorf("%d.String() = %s, want %s", int64(u), got, want)
		}
		b, _ := json.Marshal(u)
		if string(b) != want {
			t.Errorf("json %s, want %s", b, want)
		}
		if u >= 0 {
			back, err := market.ParseUSD(b, "x")
			if err != nil || back != u {
				t.Errorf("round trip %s: %d %v", b, back, err)
			}
		}
	}
}

func TestFeeBondWindow(t *testing.T) {
	for _, tc := range []struct{ price, fee, bond market.USD }{
		{2_500_000, 75_000, 500_000},     // $2.50: fee $0.075, bond the $0.50 floor
		{10_000_000, 300_000, 2_000_000}, // $10: fee $0.30, bond $2
		{2_500_001, 75_000, 500_001},     // 20% rounds up, 3% half up
		{17, 1, 500_000},                 // 0.51 micro rounds up to 1
		{16, 0, 500_000},                 // 0.48 micro rounds down to 0
		{0, 0, 500_000},
	} {
		if got := market.Fee(tc.price); got != tc.fee {
			t.Errorf("Fee(%d) = %d, want %d", tc.price, got, tc.fee)
		}
		if got := market.Bond(tc.price); got != tc.bond {
			t.Errorf("Bond(%d) = %d, want %d", tc.price, got, tc.bond)
		}
	}
	for _, tc := range []struct {
		level int
		price market.USD
		want  time.Duration
	}{
		{1, 100 * market.USD1, time.Hour}, {3, 1, time.Hour},
		{2, 4_999_999, 24 * time.Hour}, {2, 5 * market.USD1, 72 * time.Hour},
	} {
		if got := market.Window(tc.level, tc.price); got != tc.want {
			t.Errorf("Window(%d, %d) = %v, want %v", tc.level, tc.price, got, tc.want)
		}
	}
}
