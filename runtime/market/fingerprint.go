package market

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Stopwords are dropped from a problem statement before it is
// fingerprinted: English articles, pronouns, auxiliaries, conjunctions and
// prepositions, and the filler of problem statements ("find", "given",
// "compute" are kept: they carry the task). The list is part of the
// fingerprint contract: changing it changes every fingerprint.
var Stopwords = []string{
	"a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
	"be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
	"can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further",
	"had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
	"i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself",
	"no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own",
	"please", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves",
	"then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
	"was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
	"you", "your", "yours", "yourself", "yourselves",
}

var (
	stopwords = func() map[string]bool {
		m := make(map[string]bool, len(Stopwords))
		for _, w := range Stopwords {
			m[w] = true
		}
		return m
	}()
	tokenRE = regexp.MustCompile(`[a-z0-9]+`)
)

// Tokens returns the seed's normalised token set of a problem statement:
// the sorted, distinct, lowercase ASCII alphanumeric runs, without
// Stopwords and without tokens of one character.
func Tokens(problem string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokenRE.FindAllString(strings.ToLower(problem), -1) {
		if len(t) < 2 || stopwords[t] || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Fingerprint is the seed's fingerprint of a problem statement: the
// lowercase hex SHA-256 of its Tokens joined by single spaces.
func Fingerprint(problem string) string {
	sum := sha256.Sum256([]byte(strings.Join(Tokens(problem), " ")))
	return hex.EncodeToString(sum[:])
}

// Constraint is a name with a number in a problem statement: "shift=3",
// "12 workers" (worker=12), "$5" ($=5).
type Constraint struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (c Constraint) String() string { return c.Name + "=" + c.Value }

var (
	assignRE = regexp.MustCompile(`([a-z][a-z_]*)\s*[=:]\s*\$?\s*(\d+(?:\.\d+)?)`)
	dollarRE = regexp.MustCompile(`\$\s*(\d+(?:\.\d+)?)`)
	countRE  = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*([a-z][a-z_]*)`)
)

// Constraints returns the constraints of a text, each name once (the
// first wins), in order of appearance: "name=N" and "name: N" assignments,
// dollar amounts ($=N), and counts "N things" (thing=N; a plural s is
// dropped).
func Constraints(text string) []Constraint {
	s := strings.ToLower(text)
	var out []Constraint
	seen := map[string]bool{}
	add := func(name, value string) {
		if stopwords[name] || seen[name] {
			return
		}
		seen[name] = true
		out = append(out, Constraint{Name: name, Value: normNumber(value)})
	}
	blank := func(s string, idx [][]int) string {
		b := []byte(s)
		for _, m := range idx {
			for i := m[0]; i < m[1]; i++ {
				b[i] = ' '
			}
		}
		return string(b)
	}
	for _, m := range assignRE.FindAllStringSubmatch(s, -1) {
		add(singular(m[1]), m[2])
	}
	s = blank(s, assignRE.FindAllStringIndex(s, -1))
	for _, m := range dollarRE.FindAllStringSubmatch(s, -1) {
		add("$", m[1])
	}
	s = blank(s, dollarRE.FindAllStringIndex(s, -1))
	for _, m := range countRE.FindAllStringSubmatch(s, -1) {
		add(singular(m[2]), m[1])
	}
	return out
}

func singular(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

func normNumber(v string) string {
	if strings.Contains(v, ".") {
		v = strings.TrimRight(strings.TrimRight(v, "0"), ".")
	}
	if v == "" {
		return "0"
	}
	return v
}

// Match is how well a listing answers a query, in the seed's shape.
type Match struct {
	Confidence     float64        `json:"confidence"`
	Class          string         `json:"class"`
	ConstraintDiff ConstraintDiff `json:"constraint_diff"`
	Warning        *string        `json:"warning"`
	Basis          string         `json:"basis"`
}

// ConstraintDiff compares a query's constraints with a listing's.
type ConstraintDiff struct {
	Matched     []string `json:"matched"`
	Missing     []string `json:"missing"`
	Conflicting []string `json:"conflicting"`
}

// Match classes, strongest first.
const (
	ClassExact   = "exact"
	ClassStrong  = "strong"
	ClassPartial = "partial"
	ClassWeak    = "weak"
)

// Thresholds of the classes, on confidence.
const (
	StrongConfidence  = 0.6
	PartialConfidence = 0.3
)

// Basis is every match's basis: how the score is computed and what it can
// miss.
const Basis = "lexical v1: confidence = 0.75 x (share of the query's words the listing has) + 0.25 x (Jaccard similarity of the word sets), " +
	"after the fingerprint's normalisation, a word's plural s folded (primes finds prime); exact = equal fingerprints; constraints are names with numbers (name=N, N names, $N) compared by value. " +
	"Blind spots: paraphrases that share no vocabulary, constraints written in words, units."

// Score compares a query (its tokens, its constraints, its fingerprint)
// with a listing's.
func Score(qTokens []string, qCons []Constraint, qFP string, lTokens []string, lCons []Constraint, lFP string) Match {
	m := Match{Basis: Basis, ConstraintDiff: ConstraintDiff{Matched: []string{}, Missing: []string{}, Conflicting: []string{}}}
	have := map[string]string{}
	for _, c := range lCons {
		have[c.Name] = c.Value
	}
	for _, c := range qCons {
		v, ok := have[c.Name]
		switch {
		case !ok:
			m.ConstraintDiff.Missing = append(m.ConstraintDiff.Missing, c.String())
		case v == c.Value:
			m.ConstraintDiff.Matched = append(m.ConstraintDiff.Matched, c.String())
		default:
			m.ConstraintDiff.Conflicting = append(m.ConstraintDiff.Conflicting, fmt.Sprintf("%s: you need %s, listing has %s", c.Name, c.Value, v))
		}
	}
	if qFP != "" && qFP == lFP {
		m.Confidence, m.Class = 1, ClassExact
		return m
	}
	if len(qTokens) > 0 {
		qt := terms(qTokens)
		m.Confidence = confidence(overlap(qt, lTokens), len(qt), len(lTokens))
	}
	d := m.ConstraintDiff
	switch {
	case len(d.Conflicting) > 0:
		m.Class = ClassWeak
		w := "CONSTRAINT CONFLICT: the listing solved different numbers: " + strings.Join(d.Conflicting, "; ")
		m.Warning = &w
	case m.Confidence >= StrongConfidence && len(d.Missing) == 0:
		m.Class = ClassStrong
	case m.Confidence >= PartialConfidence:
		m.Class = ClassPartial
		w := "PARTIAL MATCH: verify before relying on it"
		if len(d.Missing) > 0 {
			w += "; unverified constraints: " + strings.Join(d.Missing, ", ")
		}
		m.Warning = &w
	default:
		m.Class = ClassWeak
		w := "WEAK MATCH: little shared vocabulary; do not rely on it"
		m.Warning = &w
	}
	return m
}

// confidence is a non-exact match's confidence: inter of the query's q
// tokens are among the listing's l tokens (q > 0).
func confidence(inter, q, l int) float64 {
	c := 0.75*float64(inter)/float64(q) + 0.25*float64(inter)/float64(q+l-inter)
	return math.Round(c*100) / 100
}
