package market_test

import (
	"encoding/json"
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
