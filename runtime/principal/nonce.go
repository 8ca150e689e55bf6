package principal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// MaxClockSkew bounds how far a signature's created may be from the
// registry's clock, either way. A nonce whose created is older than twice
// that can never be replayed (its signature is refused as stale), so
// UseNonce prunes it.
const MaxClockSkew = 5 * time.Minute

// MaxNoncePrune bounds how many stale nonces one UseNonce deletes.
const MaxNoncePrune = 64

func nonceKey(keyID, nonce string) string { return keyNonce + nonceSuffix(keyID, nonce) }

func nonceSuffix(keyID, nonce string) string {
	return url.PathEscape(keyID) + "/" + url.PathEscape(nonce)
}

// nonceAtKey orders a nonce by its signature's created second; the zero
// padding makes key order time order.
func nonceAtKey(created time.Time, keyID, nonce string) string {
	return fmt.Sprintf("%s%020d/%s", keyNonceAt, max(created.Unix(), 0), nonceSuffix(keyID, nonce))
}

// UseNonce records that the signature of keyID (a registered key id or a
// did:key) used nonce, durably, and refuses a nonce that was used before.
// In the same transaction it deletes up to MaxNoncePrune nonces whose
// created is more than 2×MaxClockSkew before the registry's clock, oldest
// first, scanning the by-age index only up to the first one still kept;
// one caller prunes at a time, so that concurrent signatures do not
// contend for the same old keys.
//
// # Errors
//
// nonce_replayed (401).
func (r *Registry) UseNonce(ctx context.Context, keyID, nonce string, created time.Time) error {
	prune := r.pruning.TryLock()
	if prune {
		defer r.pruning.Unlock()
	}
	return r.st.Update(ctx, func(tx store.Tx) error {
		k := nonceKey(keyID, nonce)
		if _, err := tx.Get(k); err == nil {
			return fault.New(fault.Unauthorized, ECodeNonceReplayed, "the signature's nonce was already used; sign each request with a fresh nonce")
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if prune {
			if err := pruneNonces(tx, r.now().Add(-2*MaxClockSkew)); err != nil {
				return err
			}
		}
		if err := tx.Set(nonceAtKey(created, keyID, nonce), nil); err != nil {
			return err
		}
		return tx.Set(k, []byte(created.UTC().Format(time.RFC3339)))
	})
}

// pruneNonces deletes up to MaxNoncePrune nonces created before cutoff.
func pruneNonces(tx store.Tx, cutoff time.Time) error {
	bound := fmt.Sprintf("%s%020d/", keyNonceAt, max(cutoff.Unix(), 0))
	var stale []string
	err := tx.Scan(keyNonceAt, false, func(k string, _ []byte) error {
		if k >= bound || len(stale) == MaxNoncePrune {
			return store.ErrStop
		}
		stale = append(stale, k)
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrStop) {
		return err
	}
	for _, k := range stale {
		rest := strings.TrimPrefix(k, keyNonceAt)
		_, suffix, _ := strings.Cut(rest, "/")
		if err := tx.Delete(keyNonce + suffix); err != nil {
			return err
		}
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
