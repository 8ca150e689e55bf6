package matters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// RegisterSolverRequest is the body of POST …/exchange/solvers.
type RegisterSolverRequest struct {
	SolverID       string   `json:"solver_id"`
	SolverKind     string   `json:"solver_kind"`
	Lineage        *Lineage `json:"lineage,omitempty"`
	Qualifications []string `json:"qualifications,omitempty"`
	// Conflicts are the requester ids the solver will not judge for.
	Conflicts      []string `json:"conflicts,omitempty"`
	IdempotencyKey string   `json:"idempotency_key"`
}

// SolverSubject is the credentialSubject of solver_registered.
type SolverSubject struct {
	Schema              string   `json:"schema"`
	Kind                string   `json:"kind"`
	TenantHash          string   `json:"tenant_id_sha256"`
	SolverHash          string   `json:"solver_id_sha256"`
	SolverKind          string   `json:"solver_kind"`
	Lineage             *Lineage `json:"lineage,omitempty"`
	Qualifications      []string `json:"qualifications"`
	ConflictHashes      []string `json:"conflicts_sha256"`
	Version             int      `json:"version"`
	PreviousReceiptHash string   `json:"previous_receipt_hash"`
	At                  string   `json:"at"`
}

// Registered is the answer to a registration.
type Registered struct {
	Solver  SolverProfile   `json:"solver"`
	Receipt receipt.Receipt `json:"receipt"`
}

func labels(field string, vs []string) error {
	if len(vs) > MaxListEntries {
		return invalid(ECodeInvalidList, "%s holds at most %d entries", field, MaxListEntries)
	}
	for i, v := range vs {
		if msg := ident.TextMessage(v, MaxLabelBytes); msg != "" || v == "" {
			if v == "" {
				msg = "is empty"
			}
			return invalid(ECodeInvalidList, "%s[%d] %s", field, i, msg)
		}
	}
	return nil
}

func getProfile(tx store.Tx, tenant, id string) (SolverProfile, error) {
	p, err := getSolver(tx, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, invalid(ECodeUnknownSolver, "solver %q is not registered in this tenant (POST %s/exchange/solvers)", id, RoutePrefix)
	}
	return p, err
}

// RegisterSolver registers a solver, or registers it again with new
// particulars (a new version); the solver itself or an operator may.
// solver_registered chains each version to the one before.
//
// # Errors
//
// missing_field, invalid_solver_kind, invalid_lineage, invalid_list,
// invalid_idempotency_key (400); solver_mismatch, forbidden,
// insufficient_scope (403); idempotency_conflict (409).
func (s *Service) RegisterSolver(ctx context.Context, actor Actor, req RegisterSolverRequest) (Reply, error) {
	a, err := s.writer(actor)
	if err := firstErr(
		err, // the caller's own, first
		needRole(a, RoleSolver, RoleOperator),
	); err != nil {
		return Reply{}, err
	}
	if !a.Has(RoleOperator) || req.SolverID == "" {
		sid, err := solverID(a, req.SolverID)
		if err != nil {
			return Reply{}, err
		}
		req.SolverID = sid
	}
	if err := firstErr(
		validID("solver_id", req.SolverID),
		validSolverKind(req.SolverKind),
	); err != nil {
		return Reply{}, err
	}
	switch l := req.Lineage; {
	case req.SolverKind == "model" && (l == nil || l.Provider == "" || l.BaseModel == ""):
		return Reply{}, invalid(ECodeInvalidLineage, "a model solver declares its lineage: {provider, base_model}")
	case req.SolverKind == "human" && l != nil:
		return Reply{}, invalid(ECodeInvalidLineage, "a human solver has no model lineage")
	case l != nil:
		if err := labels("lineage", []string{l.Provider, l.BaseModel}); err != nil {
			return Reply{}, invalid(ECodeInvalidLineage, "lineage: %s", fault.MessageOf(err))
		}
	}
	if err := labels("qualifications", req.Qualifications); err != nil {
		return Reply{}, err
	}
	if err := labels("conflicts", req.Conflicts); err != nil {
		return Reply{}, err
	}
	return s.keyed(ctx, "register", a, req.SolverID, req.IdempotencyKey, req, func(tx store.Tx, now time.Time) (Reply, error) {
		if !a.Open {
			pr, err := principal.Get(tx, req.SolverID)
			if err != nil || pr.Tenant != a.Tenant || !pr.Active() || !pr.Has(RoleSolver) {
				return Reply{}, invalid(ECodeUnknownSolver, "solver_id must be the key id of an active solver principal of this tenant")
			}
		}
		prev := ""
		p, err := getSolver(tx, a.Tenant, req.SolverID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			p = SolverProfile{ID: req.SolverID, Tenant: a.Tenant, RegisteredAt: now, Receipts: []string{}}
		case err != nil:
			return Reply{}, err
		default:
			if n := len(p.Receipts); n > 0 {
				b, err := receipt.Get(tx, p.Receipts[n-1])
				if err != nil {
					return Reply{}, err
				}
				var r receipt.Receipt
				if err := json.Unmarshal(b, &r); err != nil {
					return Reply{}, err
				}
				prev = r.Proof.SubjectHash
			}
		}
		p.Kind, p.Lineage, p.UpdatedAt = req.SolverKind, req.Lineage, now
		p.Qualifications = append([]string{}, req.Qualifications...)
		p.Conflicts = append([]string{}, req.Conflicts...)
		p.Version++
		conflicts := make([]string, len(p.Conflicts))
		for i, c := range p.Conflicts {
			conflicts[i] = hashHex(c)
		}
		rid := receipt.ID("matters-solver", hashHex(a.Tenant), req.SolverID, strconv.Itoa(p.Version))
		r, err := s.signer.Sign(receiptTypes[KindSolverRegistered], rid, SolverSubject{
			Schema: ReceiptSchema, Kind: KindSolverRegistered, TenantHash: hashHex(a.Tenant), SolverHash: hashHex(p.ID),
			SolverKind: p.Kind, Lineage: p.Lineage, Qualifications: p.Qualifications, ConflictHashes: conflicts,
			Version: p.Version, PreviousReceiptHash: prev, At: now.Format(time.RFC3339Nano),
		})
		if err != nil {
			return Reply{}, fmt.Errorf("matters: sign %s: %w", KindSolverRegistered, err)
		}
		if _, err := receipt.Put(tx, r, now); err != nil {
			return Reply{}, err
		}
		p.Receipts = append(p.Receipts, rid)
		if err := putSolver(tx, p); err != nil {
			return Reply{}, err
		}
		b, err := receipt.Marshal(Registered{Solver: p, Receipt: r})
		return Reply{Body: b, Created: p.Version == 1}, err
	})
}
