package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/replays"
)

func TestParseLimits(t *testing.T) {
	t.Parallel()
	def := defaultLimits()
	with := func(f func(*limitsSpec)) limitsSpec {
		l := defaultLimits()
		f(&l)
		return l
	}
	for _, tc := range []struct {
		name, in string
		want     limitsSpec
		err      string
	}{
		{"OKDefault", "", def, ""},
		{"OKOff", "off", limitsSpec{Rates: map[api.RateClass]api.Rate{}}, ""},
		{"OKDecisions", "concurrent-decisions=4", with(func(l *limitsSpec) { l.Decisions = 4 }), ""},
		{"OKDecisionsOff", "concurrent-decisions=off", with(func(l *limitsSpec) { l.Decisions = 0 }), ""},
		{"ErrDecisions", "concurrent-decisions=1/s", limitsSpec{}, "positive whole number"},
		{"OKOneClass", "reads=5/1s", with(func(l *limitsSpec) { l.Rates[api.RateReads] = api.Rate{N: 5, Per: time.Second} }), ""},
		{"OKBareUnit", "decisions=2/m", with(func(l *limitsSpec) { l.Rates[api.RateDecisions] = api.Rate{N: 2, Per: time.Minute} }), ""},
		{"OKClassOff", "uploads=off", with(func(l *limitsSpec) { l.Rates[api.RateUploads] = api.Rate{} }), ""},
		{"OKQuotas", "agent-bytes=1GiB/1h, address-bytes=512KiB/10m", with(func(l *limitsSpec) {
			l.Quotas = replays.Quotas{Agent: replays.Quota{Bytes: 1 << 30, Per: time.Hour}, Address: replays.Quota{Bytes: 512 << 10, Per: 10 * time.Minute}}
		}), ""},
		{"OKQuotaInBytes", "address-bytes=1500/24h", with(func(l *limitsSpec) { l.Quotas.Address = replays.Quota{Bytes: 1500, Per: 24 * time.Hour} }), ""},
		{"ErrUnknown", "lookups=1/s", limitsSpec{}, "unknown limit"},
		{"ErrTwice", "reads=1/s,reads=2/s", limitsSpec{}, "each name once"},
		{"ErrNoPeriod", "reads=100", limitsSpec{}, "AMOUNT/PERIOD"},
		{"ErrZero", "writes=0/1s", limitsSpec{}, "positive whole number"},
		{"ErrNegativePeriod", "writes=1/-1s", limitsSpec{}, "positive duration"},
		{"ErrSizeUnit", "agent-bytes=16MB/24h", limitsSpec{}, "KiB, MiB or GiB"},
		{"ErrNoValue", "reads", limitsSpec{}, "NAME=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLimits(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseLimits(%q) = %v, want an error with %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseLimits(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			// What String writes parses back to the same limits.
			again, err := parseLimits(got.String())
			if err != nil || again.String() != got.String() {
				t.Errorf("parseLimits(%q) = %s, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseProxies(t *testing.T) {
	t.Parallel()
	got, err := parseProxies(" 10.0.0.0/8, 192.0.2.7,::1 ,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "::1/128", "2001:db8::/32"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range got {
		if got[i].String() != want[i] {
			t.Errorf("%v, want %v", got, want)
		}
	}
	if _, err := parseProxies("10.0.0.0/33"); err == nil {
		t.Error("a bad prefix was taken")
	}
	if got, err := parseProxies(""); err != nil || got != nil {
		t.Errorf("none: %v %v", got, err)
	}
}
