package market

import (
	"context"
	"errors"
	"strconv"

	"github.com/assayhq/assay/runtime/store"
)

// The token index: one posting per (token, active listing), so that a query
// reads the postings of its own tokens instead of every search record.
//
// A posting's value is the listing's token count, which with the number of
// the query's tokens it holds is all the confidence needs; the class and the
// constraint diff are computed from the search record, and only for the
// listings a search returns.
//
// Postings are written in the transaction that publishes a listing and
// deleted in the one that retires or pulls it: a listing stops being active
// only there, and never becomes active again. Exact hits come from the
// fingerprint index (market/fp/), which keeps every listing.
//
// A store written before the index existed is indexed by New, in
// transactions of indexBatch listings, each recording how far it got under
// keyIndexState; until the last one marks the index complete, Search scans
// every search record as before, so nothing is ever missed.

const (
	keyToken      = "market/tok/"      // <token>/<id> -> the listing's token count: postings of active listings
	keyIndexState = "market/tok-index" // -> indexState
	indexBatch    = 500
)

func tokenKey(tok, id string) string { return keyToken + tok + "/" + id }

// indexState is how far building the token index of a store written
// before it has got.
type indexState struct {
	Complete bool   `json:"complete"`
	After    string `json:"after,omitempty"` // the last listing id indexed
}

// indexListing writes a listing's postings.
func indexListing(tx store.Tx, id string, d *searchDoc) error {
	n := []byte(strconv.Itoa(len(d.Tokens)))
	for _, t := range d.Tokens {
		if err := tx.Set(tokenKey(t, id), n); err != nil {
			return err
		}
	}
	return nil
}

// unindexListing deletes a listing's postings: call it where a listing
// stops being active.
func unindexListing(tx store.Tx, id string) error {
	var d searchDoc
	if err := store.GetJSON(tx, keySearch+id, &d); errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	for _, t := range d.Tokens {
		if err := tx.Delete(tokenKey(t, id)); err != nil {
			return err
		}
	}
	return nil
}

// indexComplete reports whether the token index holds every active
// listing.
func indexComplete(tx store.Tx) (bool, error) {
	var st indexState
	err := store.GetJSON(tx, keyIndexState, &st)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return st.Complete, err
}

// buildIndex indexes the active listings of a store written before the
// token index existed, indexBatch listings per transaction, resuming where
// an interrupted build stopped, and marks the index complete. Listings
// published meanwhile index themselves; each batch reads the status of its
// listings, so a concurrent retirement conflicts with it rather than
// leaving a posting behind.
func (s *Service) buildIndex(ctx context.Context) error {
	var (
		st  indexState
		ids []string
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		if err := store.GetJSON(tx, keyIndexState, &st); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if st.Complete {
			return nil
		}
		return tx.Scan(keySearch, false, func(k string, _ []byte) error {
			if id := k[len(keySearch):]; id > st.After {
				ids = append(ids, id)
			}
			return nil
		})
	})
	if err != nil || st.Complete {
		return err
	}
	for len(ids) > 0 {
		batch := ids[:min(indexBatch, len(ids))]
		ids = ids[len(batch):]
		err := s.st.Update(ctx, func(tx store.Tx) error {
			for _, id := range batch {
				l, err := loadListing(tx, id)
				if err != nil {
					return err
				}
				if l.Status != ListingActive {
					continue
				}
				var d searchDoc
				if err := store.GetJSON(tx, keySearch+id, &d); err != nil {
					return err
				}
				if err := indexListing(tx, id, &d); err != nil {
					return err
				}
			}
			return store.SetJSON(tx, keyIndexState, indexState{After: batch[len(batch)-1]})
		})
		if err != nil {
			return err
		}
	}
	return s.st.Update(ctx, func(tx store.Tx) error { return store.SetJSON(tx, keyIndexState, indexState{Complete: true}) })
}
