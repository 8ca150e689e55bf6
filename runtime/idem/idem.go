// Package idem keeps the answers to idempotent requests, for every service:
// a mutation that carries an idempotency key stores its answer in the same
// transaction as its effects, and a later request with the same key and the
// same content gets the stored answer again, while one with the same key
// and other content is refused with idempotency_conflict. Keys live in
// the scope of their operation and of the actor that sent them (New), so
// that one client's key never collides with another's, and a retry over
// REST or MCP, which name an operation alike, is the same request.
//
// Mutate is the one mutation kernel of the services: lookup, the change
// and the stored answer in one transaction, with CommitThenFail for a
// change that must commit while the request fails. Fingerprint is the one
// definition of "the same request", whatever the transport.
package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// MaxKey is the longest idempotency key accepted, in bytes.
const MaxKey = 256

// ECodeInvalidKey and ECodeConflict are the codes of a key that breaks
// the grammar and of a key used before with another request.
const (
	ECodeInvalidKey = "invalid_idempotency_key"
	ECodeConflict   = "idempotency_conflict"
)

// Request is one request's idempotency key, in the scope of its operation
// and its actor, and the fingerprint of what it asked (New makes all
// three). A zero Key means the request has none.
type Request struct {
	Scope       string
	Key         string
	Fingerprint string
}

// Reply is a mutation's answer: the JSON body the client gets, the same
// bytes on every replay.
type Reply struct {
	Body json.RawMessage
	// Created: the mutation made something new.
	Created bool
	// Replayed: the body was stored by an earlier request with the same
	// key and content.
	Replayed bool
}

type record struct {
	Fingerprint string          `json:"fingerprint"`
	Created     bool            `json:"created,omitempty"`
	Body        json.RawMessage `json:"body"`
}

// encode writes r's JSON with the body as it is: encoding/json would
// compact it and escape <, > and & in its strings, and a replay would
// answer other bytes than the first request got.
func (r record) encode() ([]byte, error) {
	fp, err := json.Marshal(r.Fingerprint)
	if err != nil {
		return nil, err
	}
	if !json.Valid(r.Body) {
		return json.Marshal(r) // the error encoding/json gives it
	}
	b := make([]byte, 0, len(fp)+len(r.Body)+40)
	b = append(append(b, `{"fingerprint":`...), fp...)
	if r.Created {
		b = append(b, `,"created":true`...)
	}
	b = append(append(b, `,"body":`...), r.Body...)
	return append(b, '}'), nil
}

// ValidKey reports whether k is usable as an idempotency key, by the one
// grammar of every service: 1 to MaxKey bytes of printable UTF-8, with no
// control character (tab and newline included) and no bidi control.
//
// # Errors
//
// invalid_idempotency_key (400).
func ValidKey(k string) error {
	if k == "" || len(k) > MaxKey {
		return fault.New(fault.Invalid, ECodeInvalidKey, "an idempotency key is 1 to %d bytes, not %d", MaxKey, len(k))
	}
	if !utf8.ValidString(k) || strings.ContainsFunc(k, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) || ident.TextMessage(k, MaxKey) != "" {
		return fault.New(fault.Invalid, ECodeInvalidKey, "an idempotency key is printable UTF-8, with no control or bidi characters")
	}
	return nil
}

// key is the store key of a request's record: idem/<scope>/<key>, both
// escaped.
func key(r Request) string {
	return "idem/" + url.PathEscape(r.Scope) + "/" + url.PathEscape(r.Key)
}

// Lookup returns the stored reply for r, nil when there is none (or r has
// no key), or an idempotency_conflict when the key was used in the scope
// for a request with another fingerprint.
func Lookup(tx store.Tx, r Request) (*Reply, error) {
	if r.Key == "" {
		return nil, nil
	}
	b, err := tx.Get(key(r))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return found(r, b)
}

// found is the reply stored for r as b, the value of its key, holds it
// (nil: none), or an idempotency_conflict.
func found(r Request, b []byte) (*Reply, error) {
	if b == nil {
		return nil, nil
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key(r), err)
	}
	if rec.Fingerprint != r.Fingerprint {
		return nil, fault.New(fault.Conflict, ECodeConflict,
			"Idempotency-Key %q was already used with a different request; use a new key", r.Key)
	}
	return &Reply{Body: rec.Body, Created: rec.Created, Replayed: true}, nil
}

// Save stores rep as the answer to r, in the transaction that made it. A
// request without a key stores nothing.
func Save(tx store.Tx, r Request, rep Reply) error {
	if r.Key == "" {
		return nil
	}
	b, err := record{Fingerprint: r.Fingerprint, Created: rep.Created, Body: rep.Body}.encode()
	if err != nil {
		return fmt.Errorf("idem: encode the reply to %s: %w", key(r), err)
	}
	return tx.Set(key(r), b)
}

// Forget deletes the answer stored for r, in the transaction that undoes
// what the request did (a payout that failed after its record committed),
// so that a retry with the same key runs again instead of replaying a
// success that did not happen.
func Forget(tx store.Tx, r Request) error {
	if r.Key == "" {
		return nil
	}
	return tx.Delete(key(r))
}

// New is a request's idempotency: key, validated by ValidKey, in the
// scope of the operation op and the actor (its name, or "" for a caller
// that proved nothing), and the request's fingerprint over op and its
// content. It is the one place a scope and a fingerprint are made, for
// every service and every transport: REST and MCP name an operation by
// the same op, so that a retry over either is the same request. An empty
// key gives a zero Request.
//
// # Errors
//
// invalid_idempotency_key (400).
func New(op, actor, key string, content []byte) (Request, error) {
	if key == "" {
		return Request{}, nil
	}
	if err := ValidKey(key); err != nil {
		return Request{}, err
	}
	sum := sha256.Sum256([]byte(actor))
	return Request{Scope: op + ":" + hex.EncodeToString(sum[:]), Key: key, Fingerprint: Fingerprint(op, content)}, nil
}

// Fingerprint is what "the same request" means: the hex SHA-256 of the
// operation, a newline and the request's content (its RFC 8785 form
// where it is JSON, so that member order and spacing do not make two
// requests differ).
func Fingerprint(op string, content []byte) string {
	if c, err := receipt.CanonicalJSON(content); err == nil {
		content = c
	}
	h := sha256.New()
	h.Write([]byte(op + "\n"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// FingerprintJSON is Fingerprint over v marshalled as JSON.
func FingerprintJSON(op string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	return Fingerprint(op, b)
}

// committed is what CommitThenFail returns.
type committed struct{ err error }

func (e *committed) Error() string { return e.err.Error() }
func (e *committed) Unwrap() error { return e.err }

// CommitThenFail is what a Mutate function returns when what it did must
// commit (a deadline that had passed, settled or expired on the way) while
// the request itself fails with err: the transaction commits, Mutate
// returns err, and no reply is stored under the key, so that a retry runs
// again and meets the new state.
func CommitThenFail(err error) error { return &committed{err} }

// Replay looks r up on a snapshot of st: the stored reply, nil when there
// is none, or an idempotency_conflict. Services call it before slow work
// (a checker run), and Mutate looks again inside its transaction.
func Replay(ctx context.Context, st store.Store, r Request) (*Reply, error) {
	if r.Key == "" {
		return nil, nil
	}
	var rep *Reply
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		rep, err = Lookup(tx, r)
		return err
	})
	return rep, err
}

// Mutate runs fn in one transaction of st that first looks r up (a stored
// reply is answered and fn does not run) and, when fn succeeds, stores its
// reply under r in the same transaction. When fn returns CommitThenFail(err)
// the transaction commits without a reply and Mutate returns err.
func Mutate(ctx context.Context, st store.Store, r Request, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	return MutateReading(ctx, st, r, nil, fn)
}

// MutateReading is Mutate for an fn whose reads are known before it runs:
// reads (nil: none) names them, and the transaction reads them with r's
// stored reply in one store.Tx.GetMany (one round trip on PostgreSQL)
// before the lookup.
func MutateReading(ctx context.Context, st store.Store, r Request, reads func() []string, fn func(tx store.Tx) (Reply, error)) (Reply, error) {
	var (
		out   Reply
		after error
	)
	err := st.Update(ctx, func(tx store.Tx) error {
		out, after = Reply{}, nil
		if keys := ahead(r, reads); len(keys) > 1 {
			if _, err := tx.GetMany(keys...); err != nil {
				return err
			}
		}
		if rep, err := Lookup(tx, r); err != nil {
			return err
		} else if rep != nil {
			out = *rep
			return nil
		}
		rep, err := fn(tx)
		var c *committed
		if errors.As(err, &c) {
			after = c.err
			return nil
		} else if err != nil {
			return err
		}
		if err := Save(tx, r, rep); err != nil {
			return err
		}
		out = rep
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

// ahead is what MutateReading reads ahead: what reads names, and r's
// stored reply when r has a key.
func ahead(r Request, reads func() []string) []string {
	var keys []string
	if reads != nil {
		keys = reads()
	}
	if r.Key != "" {
		keys = append(keys, key(r))
	}
	return keys
}

// Lapse is the one way a mutation meets an object past its deadline
// (a contract's deliver_by or review window, a Matter's deadline): when
// due, settle settles the object in tx (a refund, a release, an expiry),
// and the request fails with refuse's error once that settlement has
// committed (CommitThenFail), so that a retry meets the settled state.
// It returns nil when the object is not due.
func Lapse(due bool, settle func() error, refuse func() error) error {
	if !due {
		return nil
	}
	if err := settle(); err != nil {
		return err
	}
	return CommitThenFail(refuse())
}

// Keeper looks up stored replies on a store, for a transport that checks
// for a replay before it calls a service: the one replay pre-check, made
// before any slow work (an adjudication, a collection on a rail).
type Keeper struct{ st store.Store }

// NewKeeper returns a Keeper of the replies stored in st.
func NewKeeper(st store.Store) Keeper { return Keeper{st: st} }

// Replay is Replay on the Keeper's store.
func (k Keeper) Replay(ctx context.Context, r Request) (*Reply, error) { return Replay(ctx, k.st, r) }
