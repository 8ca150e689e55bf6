package market

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/assayhq/assay/runtime/store"
)

// hit is a listing a search may return. The token index knows a hit's
// confidence but not its constraint diff: m is nil until the listing is
// returned and its search record read.
type hit struct {
	id    string
	exact bool
	conf  float64
	m     *Match
}

// hitOrder is the order of results: exact hits first, then by confidence,
// then by listing id.
func hitOrder(a, b hit) int {
	switch {
	case a.exact != b.exact:
		if a.exact {
			return -1
		}
		return 1
	case a.conf > b.conf:
		return -1
	case a.conf < b.conf:
		return 1
	}
	return strings.Compare(a.id, b.id)
}

// fpHits appends the listings whose fingerprint is fp, active or not.
func fpHits(tx store.Tx, fp string, hits []hit) ([]hit, error) {
	m := Score(nil, nil, fp, nil, nil, fp)
	p := fingerprintPrefix(fp)
	err := tx.Scan(p, false, func(k string, _ []byte) error {
		hits = append(hits, hit{id: k[len(p):], exact: true, conf: m.Confidence, m: &m})
		return nil
	})
	return hits, err
}

// A search compares words, not spellings: a query's tokens and a
// listing's match when they are the same word, singular or plural, so
// that "primes" finds "the first 10 prime numbers". The fingerprint keeps
// the tokens as they are (it is the seed's contract); only the overlap
// that confidence counts folds them. The token index keeps a listing's
// tokens as they are too, and a query reads the postings of each of its
// words' spellings (variants).

// terms returns a query's tokens as a search counts them: each folded to
// its singular (singular), each once, in order.
func terms(qt []string) []string {
	out := make([]string, 0, len(qt))
	for _, t := range qt {
		if f := singular(t); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// variants returns the tokens that fold to term: term itself and its
// plural, where they do.
func variants(term string) []string {
	var out []string
	for _, v := range []string{term, term + "s"} {
		if singular(v) == term {
			out = append(out, v)
		}
	}
	return out
}

// overlap counts the terms (folded, distinct) that one of a listing's
// tokens folds to. It is at most the number of terms, and at most the
// number of tokens, since a token folds to one term only.
func overlap(terms, tokens []string) int {
	have := make(map[string]bool, len(tokens))
	for _, t := range tokens {
		have[singular(t)] = true
	}
	n := 0
	for _, t := range terms {
		if have[t] {
			n++
		}
	}
	return n
}

// queryHits finds the hits of a query: from the token index when it is
// complete, else by scanning every search record.
func (s *Service) queryHits(tx store.Tx, qt []string, qc []Constraint, fp string, limit int) ([]hit, error) {
	if s.scanOnly {
		return scanHits(tx, qt, qc, fp)
	}
	if ok, err := indexComplete(tx); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return scanHits(tx, qt, qc, fp)
	}
	return indexHits(tx, terms(qt), fp, limit, s.common)
}

// scanHits scores every search record: the reference the token index must
// agree with.
func scanHits(tx store.Tx, qt []string, qc []Constraint, fp string) ([]hit, error) {
	var hits []hit
	err := eachSearchRecord(tx, func(id string, v []byte) error {
		var d searchDoc
		if err := json.Unmarshal(v, &d); err != nil {
			return err
		}
		m := Score(qt, qc, fp, d.Tokens, d.Constraints, d.Fingerprint)
		if m.Class == ClassExact || m.Confidence > 0 {
			hits = append(hits, hit{id: id, exact: m.Class == ClassExact, conf: m.Confidence, m: &m})
		}
		return nil
	})
	return hits, err
}

// commonPostings is how many postings a token may have before a search
// stops reading them to find candidates (Service.common, which tests
// lower): a listing that holds only the query's common tokens is probed
// only when it could rank.
const commonPostings = 1 << 15

// indexHits finds the hits scanHits would rank first, from the fingerprint
// index and the postings of the query's terms (terms): a listing none of
// whose tokens is a query term has confidence 0, so only an exact hit can
// be one.
//
// The listings of the terms with at most commonPostings postings are the
// candidates; the query's common terms (more postings) are probed for
// each candidate in order of the best confidence it could have, until none
// left could enter the first limit. A listing that is no candidate holds
// only common terms, so its confidence is at most their share of the
// query's: when the limit-th candidate beats that, the candidates are the
// answer; otherwise every posting of every query term is read, which
// costs what the scan would but without decoding search records.
func indexHits(tx store.Tx, qt []string, fp string, limit, maxPostings int) ([]hit, error) {
	hits, err := fpHits(tx, fp, nil)
	if err != nil {
		return nil, err
	}
	exact := make(map[string]bool, len(hits))
	for i := range hits {
		// The constraint diff of an exact hit is the query's against the
		// listing's, as for any other.
		hits[i].m = nil
		exact[hits[i].id] = true
	}
	if len(qt) == 0 {
		return hits, nil
	}
	cands, common, err := candidates(tx, qt, maxPostings)
	if err != nil {
		return nil, err
	}
	if len(common) > 0 {
		if more, ok, err := pruned(tx, qt, common, cands, exact, limit); err != nil || ok {
			return append(hits, more...), err
		}
		if cands, _, err = candidates(tx, qt, -1); err != nil {
			return nil, err
		}
	}
	for id, c := range cands {
		if exact[id] {
			continue
		}
		if conf := confidence(c.inter, len(qt), c.tokens); conf > 0 {
			hits = append(hits, hit{id: id, conf: conf})
		}
	}
	return hits, nil
}

// cand is a listing found in postings: how many of the query's terms it
// holds, of how many tokens.
type cand struct{ inter, tokens int }

// candidates reads the postings of the query's terms, every variant of
// each: those of a term with more than max postings (max >= 0) are left
// out and the term is returned as common. A listing counts a term once,
// whichever of its variants it holds.
func candidates(tx store.Tx, qt []string, max int) (map[string]*cand, []string, error) {
	cands := map[string]*cand{}
	var common []string
	type posting struct {
		id     string
		tokens int
	}
	var ps []posting
	for _, t := range qt {
		ps = ps[:0]
		full := true
		for _, v := range variants(t) {
			p := keyToken + v + "/"
			err := tx.Scan(p, false, func(k string, val []byte) error {
				if len(ps) == max {
					full = false
					return store.ErrStop
				}
				ps = append(ps, posting{k[len(p):], atoi(val)})
				return nil
			})
			if err != nil {
				return nil, nil, err
			}
			if !full {
				break
			}
		}
		if !full {
			common = append(common, t)
			continue
		}
		seen := make(map[string]bool, len(ps))
		for _, x := range ps {
			if seen[x.id] {
				continue // the listing holds two variants of t
			}
			seen[x.id] = true
			if c := cands[x.id]; c != nil {
				c.inter++
			} else {
				cands[x.id] = &cand{inter: 1, tokens: x.tokens}
			}
		}
	}
	return cands, common, nil
}

// pruned ranks the candidates against the common terms, probing the
// common terms' postings of the candidates that could still enter the
// first limit. ok is false when a listing that is no candidate could.
func pruned(tx store.Tx, qt, common []string, cands map[string]*cand, exact map[string]bool, limit int) (hits []hit, ok bool, err error) {
	q := len(qt)
	type bound struct {
		id string
		c  *cand
		ub float64
	}
	bs := make([]bound, 0, len(cands))
	for id, c := range cands {
		if !exact[id] {
			bs = append(bs, bound{id, c, confidence(min(c.inter+len(common), c.tokens), q, c.tokens)})
		}
	}
	slices.SortFunc(bs, func(a, b bound) int { return cmp.Compare(b.ub, a.ub) })
	var top []float64 // the best limit confidences so far, best first
	for _, b := range bs {
		if len(top) == limit && b.ub < top[limit-1] {
			break
		}
		inter := b.c.inter
		for _, t := range common {
			for _, v := range variants(t) {
				if _, err := tx.Get(tokenKey(v, b.id)); err == nil {
					inter++
					break
				} else if !errors.Is(err, store.ErrNotFound) {
					return nil, false, err
				}
			}
		}
		conf := confidence(inter, q, b.c.tokens)
		if conf <= 0 {
			continue
		}
		hits = append(hits, hit{id: b.id, conf: conf})
		j, _ := slices.BinarySearchFunc(top, conf, func(a, b float64) int { return cmp.Compare(b, a) })
		if j < limit {
			top = slices.Insert(top, j, conf)[:min(len(top)+1, limit)]
		}
	}
	// A listing that is no candidate holds at most the common terms, so
	// its confidence is at most their share of the query's terms.
	outside := math.Round(float64(len(common))/float64(q)*100+1e-6) / 100
	return hits, len(top) == limit && top[limit-1] > outside, nil
}

// atoi parses a posting's token count.
func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}
