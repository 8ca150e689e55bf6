// Package idem keeps the answers to idempotent requests, for every service:
// a mutation that carries an idempotency key stores its answer in the same
// transaction as its effects, and a later request with the same key and the
// same content gets the stored answer again, while one with the same key
// and other content is refused with idempotency_conflict. Keys live in
// scopes (a service, a tenant, a solver), so that one client's key never
// collides with another's.
package idem

import (
	"encoding/json"
	"errors"
	"net/url"
	"unicode"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// MaxKey is the longest idempotency key accepted, in bytes.
const MaxKey = 255

// Request is one request's idempotency key, in its scope, and the
// fingerprint of what it asked (the transport takes e.g. the SHA-256 of the
// method, path and body). A zero Key means the request has none.
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

// ValidKey reports whether k is usable as an idempotency key: 1 to MaxKey
// bytes of printable characters.
func ValidKey(k string) error {
	if k == "" || len(k) > MaxKey {
		return fault.New(fault.Invalid, "invalid_idempotency_key", "Idempotency-Key must be 1 to %d characters", MaxKey)
	}
	for _, r := range k {
		if !unicode.IsPrint(r) {
			return fault.New(fault.Invalid, "invalid_idempotency_key", "Idempotency-Key must be printable")
		}
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
	var rec record
	err := store.GetJSON(tx, key(r), &rec)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case rec.Fingerprint != r.Fingerprint:
		return nil, fault.New(fault.Conflict, "idempotency_conflict",
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
	return store.SetJSON(tx, key(r), record{Fingerprint: r.Fingerprint, Created: rep.Created, Body: rep.Body})
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
