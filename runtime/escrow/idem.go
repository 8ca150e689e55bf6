package escrow

import (
	"context"
	"errors"

	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// Idem is a request's idempotency key and the fingerprint of what it asked:
// api/ takes the SHA-256 of the method, path and body. A zero Idem means
// the request has no key. The court's keys live in the scope "escrow".
type Idem struct {
	Key         string
	Fingerprint string
}

func (i Idem) request() idem.Request {
	return idem.Request{Scope: "escrow", Key: i.Key, Fingerprint: i.Fingerprint}
}

// Reply is a mutation's answer: the JSON body the client gets, the same
// bytes on every replay.
type Reply = idem.Reply

// ValidIdemKey reports whether k is usable as an Idempotency-Key.
func ValidIdemKey(k string) error { return idem.ValidKey(k) }

func lookupIdem(tx store.Tx, i Idem) (*Reply, error) { return idem.Lookup(tx, i.request()) }

// replay looks idem up on a snapshot, before any slow work.
func (s *Service) replay(ctx context.Context, i Idem) (*Reply, error) {
	if i.Key == "" {
		return nil, nil
	}
	var r *Reply
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = lookupIdem(tx, i)
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
func (s *Service) mutate(ctx context.Context, i Idem, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	var (
		out   Reply
		after error
	)
	err := s.st.Update(ctx, func(tx store.Tx) error {
		out, after = Reply{}, nil
		if r, err := lookupIdem(tx, i); err != nil {
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
		if err := idem.Save(tx, i.request(), r); err != nil {
			return err
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
