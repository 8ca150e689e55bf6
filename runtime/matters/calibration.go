package matters

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// ObserveRequest is the body of POST …/exchange/observe: what actually
// happened, in the shape of the Matter's verdict.
type ObserveRequest struct {
	MatterID       string          `json:"matter_id"`
	Outcome        json.RawMessage `json:"outcome"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// Observe records a quorum Matter's outcome, once, by its requester or an
// operator, and signs outcome_observed. The outcome must match the
// verdict schema; it is what the solvers' calibration is scored against.
// A Matter is observable once its reveals are aggregated.
//
// # Errors
//
// missing_field, invalid_outcome (400); verdict_schema_mismatch (422);
// forbidden, insufficient_scope (403); matter_not_found (404);
// matter_not_observable, already_observed, quorum_matter_required,
// idempotency_conflict (409).
func (s *Service) Observe(ctx context.Context, actor Actor, req ObserveRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		validID("matter_id", req.MatterID),
	); err != nil {
		return Reply{}, err
	}
	if isNull(req.Outcome) || !isObject(req.Outcome) || len(req.Outcome) > MaxVerdictBytes {
		return Reply{}, invalid(ECodeInvalidOutcome, "outcome is required: a JSON object in the shape of the verdict, at most %d bytes", MaxVerdictBytes)
	}
	canon, err := receipt.CanonicalJSON(req.Outcome)
	if err != nil {
		return Reply{}, invalid(ECodeInvalidOutcome, "outcome: %v", err)
	}
	return s.keyed(ctx, "observe", a, a.KeyID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		m, err := s.loadQuorum(tx, a, req.MatterID, now)
		if err != nil {
			return Reply{}, err
		}
		if err := ownerOrOperator(a, m); err != nil {
			return Reply{}, err
		}
		x := m.Exchange
		if x.Aggregate == nil {
			return Reply{}, idem.CommitThenFail(fault.New(fault.Conflict, ECodeNotObservable, "matter %s is %s: an outcome is observed once its verdicts are aggregated", m.ID, m.Status))
		}
		if x.Observed != nil {
			return Reply{}, fault.New(fault.Conflict, ECodeAlreadyObserved, "matter %s's outcome was observed at %s", m.ID, x.Observed.At.Format(time.RFC3339))
		}
		sc, err := compileVerdictSchema(m.VerdictSchema)
		if err != nil {
			return Reply{}, err
		}
		if err := sc.Validate(canon); err != nil {
			return Reply{}, fault.New(fault.Unprocessable, ECodeVerdictSchemaMismatch, "the outcome does not match verdict_schema: %v", err)
		}
		x.Observed = &Observation{Outcome: canon, Hash: hashHex(string(canon)), ObservedBy: hashHex(a.KeyID), At: now}
		return s.recorded(tx, m, KindObserved, now, s.xfill(m, nil, nil, func(xs *ExchangeSubject) { xs.OutcomeHash = x.Observed.Hash }), false)
	})
}

// Calibration is a solver's record, computed only from its reveals, the
// aggregations, the court's rulings and observed outcomes.
type Calibration struct {
	// Seats: quorum Matters the solver sat on; Revealed: where it
	// revealed a verdict.
	Seats    int `json:"seats"`
	Revealed int `json:"revealed"`
	// Agreement is the share of its reveals in judged Matters that
	// agreed with the quorum's verdict (null with none).
	Judged    int      `json:"judged"`
	Agreed    int      `json:"agreed"`
	Agreement *float64 `json:"agreement"`
	// AppealsLost counts Matters whose verdict the solver was in the
	// majority of and the court overturned.
	AppealsLost int `json:"appeals_lost"`
	// Observed counts its reveals on Matters with an observed outcome;
	// Accuracy is the share of them whose agree_on fields equal the
	// outcome's (null with none).
	Observed int      `json:"observed"`
	Correct  int      `json:"correct"`
	Accuracy *float64 `json:"accuracy"`
	// Brier is the mean of (p − o)² over its probabilistic fields (a
	// number with minimum 0 and maximum 1 in the schema) of observed
	// Matters whose outcome holds 0 or 1 there (null with none).
	Forecasts int      `json:"forecasts"`
	Brier     *float64 `json:"brier"`
}

// Profile is a solver's public profile.
type Profile struct {
	Solver      SolverProfile `json:"solver"`
	Calibration Calibration   `json:"calibration"`
}

// SolverProfile answers a registered solver of the actor's tenant and its
// calibration.
//
// # Errors
//
// insufficient_scope (403); solver_not_found (404).
func (s *Service) SolverProfile(ctx context.Context, actor Actor, id string) (Profile, error) {
	a, err := s.caller(actor)
	if err != nil {
		return Profile{}, err
	}
	if err := need(a, ScopeRead); err != nil {
		return Profile{}, err
	}
	var out Profile
	err = s.st.View(ctx, func(tx store.Tx) error {
		p, err := getProfile(tx, a.Tenant, id)
		if fault.CodeOf(err) == ECodeUnknownSolver {
			return fault.New(fault.NotFound, ECodeSolverNotFound, "no solver %q in this tenant", id)
		}
		if err != nil {
			return err
		}
		ids, err := seats(tx, a.Tenant, id)
		if err != nil {
			return err
		}
		var c Calibration
		var brier float64
		for _, mid := range ids {
			m, err := load(tx, a, mid)
			if err != nil {
				return err
			}
			if err := score(&c, &brier, m, id); err != nil {
				return err
			}
		}
		c.Agreement, c.Accuracy = ratio(c.Agreed, c.Judged), ratio(c.Correct, c.Observed)
		if c.Forecasts > 0 {
			b := brier / float64(c.Forecasts)
			c.Brier = &b
		}
		out = Profile{Solver: p, Calibration: c}
		return nil
	})
	return out, err
}

func ratio(n, d int) *float64 {
	if d == 0 {
		return nil
	}
	r := float64(n) / float64(d)
	return &r
}

// score adds one Matter to a solver's calibration.
func score(c *Calibration, brier *float64, m *Matter, solver string) error {
	x := m.Exchange
	_, st := x.seat(solver)
	if st == nil {
		return nil
	}
	c.Seats++
	if st.Status != SolverRevealed {
		return nil
	}
	c.Revealed++
	if x.Aggregate != nil && x.Aggregate.Result == StatusJudged && st.Majority != nil {
		c.Judged++
		if *st.Majority {
			c.Agreed++
			if x.Appeal != nil && x.Appeal.Result == "overturned" {
				c.AppealsLost++
			}
		}
	}
	if x.Observed == nil {
		return nil
	}
	c.Observed++
	mine, err := agreement(st.Verdict, x.Quorum.AgreeOn)
	if err != nil {
		return err
	}
	truth, err := agreement(x.Observed.Outcome, x.Quorum.AgreeOn)
	if err != nil {
		return err
	}
	if mine == truth {
		c.Correct++
	}
	var verdict, outcome map[string]json.RawMessage
	if json.Unmarshal(st.Verdict, &verdict) != nil || json.Unmarshal(x.Observed.Outcome, &outcome) != nil {
		return nil
	}
	for _, f := range probabilityFields(m.VerdictSchema) {
		var p, o float64
		if json.Unmarshal(verdict[f], &p) != nil || json.Unmarshal(outcome[f], &o) != nil || (o != 0 && o != 1) {
			continue
		}
		c.Forecasts++
		*brier += math.Pow(p-o, 2)
	}
	return nil
}

// probabilityFields names the schema's top-level properties that are
// probabilities: type number with minimum 0 and maximum 1.
func probabilityFields(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]struct {
			Type    any      `json:"type"`
			Minimum *float64 `json:"minimum"`
			Maximum *float64 `json:"maximum"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []string
	for name, p := range s.Properties {
		if p.Type == "number" && p.Minimum != nil && *p.Minimum == 0 && p.Maximum != nil && *p.Maximum == 1 {
			out = append(out, name)
		}
	}
	return out
}
