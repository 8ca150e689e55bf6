package escrow

import (
	"context"
	"encoding/json"
	"errors"
	"unicode"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// Idem is a request's idempotency key and the fingerprint of what it asked:
// api/ takes the SHA-256 of the method, path and body. A zero Idem means
// the request has no key.
type Idem struct {
	Key         string
	Fingerprint string
}

// Reply is a mutation's answer: the JSON body the client gets, the same
// bytes on every replay.
type Reply struct {
	Body json.RawMessage
	// Created: the mutation made something new (a checker upload).
	Created bool
	// Replayed: the body was stored by an earlier request with the same
	// idempotency key and body.
	Replayed bool
}

type idemRecord struct {
	Fingerprint string          `json:"fingerprint"`
	Created     bool            `json:"created,omitempty"`
	Body        json.RawMessage `json:"body"`
}

// ValidIdemKey reports whether k is usable as an Idempotency-Key: 1 to
// MaxIdemKey printable characters.
func ValidIdemKey(k string) error {
	if k == "" || len(k) > MaxIdemKey {
		return fault.New(fault.Invalid, "invalid_idempotency_key", "Idempotency-Key must be 1 to %d characters", MaxIdemKey)
	}
	for _, r := range k {
		if !unicode.IsPrint(r) {
			return fault.New(fault.Invalid, "invalid_idempotency_key", "Idempotency-Key must be printable")
		}
	}
	return nil
}

// lookupIdem returns the stored reply for idem, nil when there is none, or
// an idempotency_conflict when the key was used for another request.
func lookupIdem(tx store.Tx, idem Idem) (*Reply, error) {
	if idem.Key == "" {
		return nil, nil
	}
	var rec idemRecord
	err := store.GetJSON(tx, idemKey(idem.Key), &rec)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case rec.Fingerprint != idem.Fingerprint:
		return nil, fault.New(fault.Conflict, "idempotency_conflict",
			"Idempotency-Key %q was already used with a different request; use a new key", idem.Key)
	}
	return &Reply{Body: rec.Body, Created: rec.Created, Replayed: true}, nil
}

// replay looks idem up on a snapshot, before any slow work.
func (s *Service) replay(ctx context.Context, idem Idem) (*Reply, error) {
	if idem.Key == "" {
		return nil, nil
	}
	var r *Reply
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = lookupIdem(tx, idem)
		return err
	})
	return r, err
}

// settled is what a transaction function returns when it committed a lazy
// settlement (a deadline that had passed) and the request itself must
// still fail with err: the settlement commits, the error is answered, and
// no idempotency record is kept.
type settled struct{ err error }

func (e *settled) Error() string { return e.err.Error() }

// mutate runs fn in one store transaction that first checks idem and, when
// fn succeeds, stores its reply under idem.
func (s *Service) mutate(ctx context.Context, idem Idem, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	var (
		out   Reply
		after error
	)
	err := s.st.Update(ctx, func(tx store.Tx) error {
		out, after = Reply{}, nil
		if r, err := lookupIdem(tx, idem); err != nil {
			return err
		} else if r != nil {
			out = *r
			return nil
		}
		r, err := fn(tx)
		var st *settled
		if errors.As(err, &st) {
			after = st.err
			return nil
		} else if err != nil {
			return err
		}
		if idem.Key != "" {
			if err := store.SetJSON(tx, idemKey(idem.Key), idemRecord{Fingerprint: idem.Fingerprint, Created: r.Created, Body: r.Body}); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	if err != nil {
		return Reply{}, err
	}
	if after != nil {
		return Reply{}, after
	}
	return out, nil
}
