package escrow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/store"
)

// Standing is an agent's standing in the court.
type Standing string

// Standings, as the seed defines them.
const (
	StandingNew    Standing = "NEW"
	StandingGood   Standing = "GOOD"
	StandingWatch  Standing = "WATCH"
	StandingBanned Standing = "BANNED"
)

type role string

const (
	roleSeller role = "seller"
	roleBuyer  role = "buyer"
)

// RoleReputation is an agent's Beta reputation in one role.
type RoleReputation struct {
	Score       float64  `json:"score"`
	Confidence  float64  `json:"confidence"`
	SampleCount int64    `json:"sample_count"`
	Positive    int64    `json:"positive"`
	Negative    int64    `json:"negative"`
	Standing    Standing `json:"standing"`
}

// Reputation is an agent's standing and its reputation as seller and buyer.
type Reputation struct {
	Agent    string         `json:"agent"`
	Standing Standing       `json:"standing"`
	AsSeller RoleReputation `json:"as_seller"`
	AsBuyer  RoleReputation `json:"as_buyer"`
}

type counts struct {
	Positive int64 `json:"positive"`
	Negative int64 `json:"negative"`
}

func roleReputation(c counts) RoleReputation {
	n := c.Positive + c.Negative
	score := float64(c.Positive+1) / float64(n+2)
	r := RoleReputation{
		Score:       round2(score),
		Confidence:  round2(float64(n) / float64(n+4)),
		SampleCount: n,
		Positive:    c.Positive,
		Negative:    c.Negative,
	}
	switch {
	case n == 0:
		r.Standing = StandingNew
	case c.Negative >= 3 && score < 0.40:
		r.Standing = StandingBanned
	case score >= 0.70:
		r.Standing = StandingGood
	default:
		r.Standing = StandingWatch
	}
	return r
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// reputationTx reads an agent's reputation in tx.
func reputationTx(tx store.Tx, did string) (Reputation, error) {
	var seller, buyer counts
	prefix := reputationPrefix(did)
	err := tx.Scan(prefix, false, func(k string, v []byte) error {
		var c counts
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		acc := &buyer
		if strings.HasPrefix(k[len(prefix):], string(roleSeller)+"/") {
			acc = &seller
		}
		acc.Positive += c.Positive
		acc.Negative += c.Negative
		return nil
	})
	if err != nil {
		return Reputation{}, err
	}
	r := Reputation{Agent: did, AsSeller: roleReputation(seller), AsBuyer: roleReputation(buyer)}
	switch {
	case r.AsSeller.Standing == StandingBanned || r.AsBuyer.Standing == StandingBanned:
		r.Standing = StandingBanned
	case r.AsSeller.Standing == StandingNew && r.AsBuyer.Standing == StandingNew:
		r.Standing = StandingNew
	default:
		r.Standing = StandingGood
	}
	return r, nil
}

// Reputation returns an agent's reputation; an unknown agent is NEW.
func (s *Service) Reputation(ctx context.Context, did string) (Reputation, error) {
	if err := validDID("agent", did); err != nil {
		return Reputation{}, err
	}
	var r Reputation
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = reputationTx(tx, did)
		return err
	})
	return r, err
}

// outcome is one agent's outcome in one role, as a decision counts it.
type outcome struct {
	did      string
	role     role
	positive bool
}

// outcomes returns what a final decision on contract c counts for: a
// buyer's accept is a positive for the seller (the buyer's own judgement
// of the delivery; it counts nothing for the buyer); a dispute verdict
// (d.counts: tier0, tier1-jury, an operator's resolution) is a positive
// for the side it favours and a negative for the other. A lapsed deadline
// or review window counts for no one.
func outcomes(c *Contract, d decision) []outcome {
	switch {
	case d.tier == TierBuyerAccept:
		return []outcome{{c.Seller, roleSeller, true}}
	case d.counts:
		sellerWon := d.verdict == adjudicate.VerdictRelease
		return []outcome{{c.Seller, roleSeller, sellerWon}, {c.Buyer, roleBuyer, !sellerWon}}
	}
	return nil
}

// recordReputation records the outcomes of a final decision on c.
func recordReputation(tx store.Tx, c *Contract, d decision) error {
	for _, o := range outcomes(c, d) {
		if err := addReputation(tx, o.did, o.role, c.ID, o.positive); err != nil {
			return err
		}
	}
	return nil
}

// addReputation records one outcome for an agent in a role. A negative
// also marks the agent (negativeKey) with a write that reads nothing, so
// that it conflicts with no other decision.
func addReputation(tx store.Tx, did string, r role, contract string, positive bool) error {
	key := reputationKey(did, r, contract)
	var c counts
	if err := store.GetJSON(tx, key, &c); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if positive {
		c.Positive++
	} else {
		c.Negative++
		if err := tx.Set(negativeKey(did), []byte("1")); err != nil {
			return err
		}
	}
	return store.SetJSON(tx, key, c)
}

// markNegatives marks, once per store, every agent with a negative in its
// reputation, for a store whose reputation was recorded before the marks
// were (Create trusts them): afterwards the store carries
// keyNegativeMark and this reads one key. Marking is idempotent, so nodes
// that start together may all do it.
func markNegatives(ctx context.Context, st store.Store) error {
	err := st.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get(keyNegativeMark)
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return st.Update(ctx, func(tx store.Tx) error {
		var marks []string
		err := tx.Scan(keyReputation, false, func(k string, v []byte) error {
			var c counts
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("escrow: decode %s: %w", k, err)
			}
			if c.Negative > 0 {
				// <did>/<role>/<shard>, the did escaped as negativeKey escapes it
				did := strings.TrimPrefix(k, keyReputation)
				if i := strings.IndexByte(did, '/'); i >= 0 {
					did = did[:i]
				}
				marks = append(marks, keyNegative+did)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range marks {
			if err := tx.Set(k, []byte("1")); err != nil {
				return err
			}
		}
		return tx.Set(keyNegativeMark, []byte("1"))
	})
}
