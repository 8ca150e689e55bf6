package market_test

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/assayhq/assay/runtime/market"
)

func TestFingerprint(t *testing.T) {
	got := market.Tokens("Schedule the 12 workers over 3 shifts, a budget of $5; shift=3. The workers!")
	want := []string{"12", "budget", "schedule", "shift", "shifts", "workers"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens %q, want %q", got, want)
	}
	sum := sha256.Sum256([]byte("12 budget schedule shift shifts workers"))
	if fp := market.Fingerprint("Schedule the 12 workers over 3 shifts, a budget of $5; shift=3. The workers!"); fp != hex.EncodeToString(sum[:]) {
		t.Fatalf("fingerprint %s", fp)
	}
	if market.Fingerprint("workers schedule") != market.Fingerprint("The SCHEDULE of workers, workers") {
		t.Fatal("the fingerprint depends on order, case, repeats or stopwords")
	}
}

func TestConstraints(t *testing.T) {
	got := market.Constraints("Schedule 12 workers in shift=3 with a $5.50 budget, cost: 7")
	want := []market.Constraint{{"shift", "3"}, {"cost", "7"}, {"$", "5.5"}, {"worker", "12"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("constraints %v, want %v", got, want)
	}
}

func TestScore(t *testing.T) {
	listing := "schedule 12 workers across shift=3 nurses hospital rota"
	lt, lc, lf := market.Tokens(listing), market.Constraints(listing), market.Fingerprint(listing)
	score := func(q string) market.Match {
		return market.Score(market.Tokens(q), market.Constraints(q), market.Fingerprint(q), lt, lc, lf)
	}
	for _, tc := range []struct{ q, class string }{
		{listing, market.ClassExact},
		{"hospital rota schedule nurses 12 workers shift=3 weekly", market.ClassStrong},
		{"hospital rota schedule nurses with a $5 budget", market.ClassPartial},
		{"hospital rota schedule nurses 15 workers shift=3", market.ClassWeak},
		{"prime numbers below a million", market.ClassWeak},
	} {
		m := score(tc.q)
		if m.Class != tc.class {
			t.Errorf("%q: class %s (confidence %v, diff %+v), want %s", tc.q, m.Class, m.Confidence, m.ConstraintDiff, tc.class)
		}
		if (m.Class == market.ClassExact || m.Class == market.ClassStrong) != (m.Warning == nil) {
			t.Errorf("%q: warning %v for class %s", tc.q, m.Warning, m.Class)
		}
	}
	m := score("hospital rota schedule nurses 15 workers shift=3")
	if len(m.ConstraintDiff.Conflicting) != 1 || m.ConstraintDiff.Conflicting[0] != "worker: you need 15, listing has 12" {
		t.Fatalf("conflicts %q", m.ConstraintDiff.Conflicting)
	}
}

// TestScore_plurals: a word matches in the singular and the plural, and
// counts once however it is spelled.
func TestScore_plurals(t *testing.T) {
	listing := "The first 10 prime numbers, as a JSON list."
	lt, lc, lf := market.Tokens(listing), market.Constraints(listing), market.Fingerprint(listing)
	for _, tc := range []struct {
		q          string
		confidence float64
		class      string
	}{
		{"primes", 0.79, market.ClassStrong}, // 0.75 x 1/1 + 0.25 x 1/6
		{"prime", 0.79, market.ClassStrong},
		{"prime primes", 0.79, market.ClassStrong},        // one word
		{"first primes number", 0.88, market.ClassStrong}, // 0.75 + 0.25 x 3/6
		{"composites", 0, market.ClassWeak},
		{"class", 0, market.ClassWeak}, // "ss" is no plural: never "clas"
	} {
		m := market.Score(market.Tokens(tc.q), market.Constraints(tc.q), market.Fingerprint(tc.q), lt, lc, lf)
		if m.Confidence != tc.confidence || m.Class != tc.class {
			t.Errorf("%q: confidence %v class %s, want %v %s", tc.q, m.Confidence, m.Class, tc.confidence, tc.class)
		}
	}
	if market.Fingerprint("primes") == market.Fingerprint("prime") {
		t.Error("the fingerprint folds plurals: it is the seed's, token for token")
	}
}
