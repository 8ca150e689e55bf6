package market

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// The market's repository: its keys and records; storage/doc.go lists
// them. A listing is one record with its artifact, its search record and
// its index entries beside it (index.go keeps the token index); a
// purchase is one record, named by its buyer and, while its window is
// open, by its listing and by when it settles; a challenge is one record
// with its evidence beside it. The payment paths (trade.go, payback.go)
// still name some keys themselves.
const (
	keyListing   = "market/listing/"   // <id> -> Listing
	keyArtifact  = "market/artifact/"  // <id> -> the artifact as published (JSON)
	keySearch    = "market/search/"    // <id> -> searchDoc
	keyFP        = "market/fp/"        // <fingerprint>/<id> -> ""
	keyPurchase  = "market/purchase/"  // <id> -> Purchase
	keyBought    = "market/bought/"    // <listing>/<buyer> -> purchase id
	keyOpen      = "market/open/"      // <listing>/<purchase> -> "": purchases whose window is open
	keyDue       = "market/due/"       // <unixnano:020d>/<purchase> -> "": when a hold closes
	keyChallenge = "market/challenge/" // <id> -> Challenge
	keyEvidence  = "market/evidence/"  // <challenge id> -> evidence as sent (JSON)
	keyConfirm   = "market/confirm/"   // <listing>/<identity> -> confirmRecord: a buyer's confirmation toward level 3
	keyAgent     = "market/agent/"     // <did> -> agentRecord
)

func esc(s string) string           { return url.PathEscape(s) }
func listingKey(id string) string   { return keyListing + id }
func purchaseKey(id string) string  { return keyPurchase + id }
func challengeKey(id string) string { return keyChallenge + id }
func agentKey(did string) string    { return keyAgent + esc(did) }
func boughtKey(listing, buyer string) string {
	return keyBought + listing + "/" + esc(buyer)
}
func openKey(listing, purchase string) string { return keyOpen + listing + "/" + purchase }
func dueKey(at time.Time, purchase string) string {
	return fmt.Sprintf("%s%020d/%s", keyDue, at.UnixNano(), purchase)
}

// confirmKey records that who confirmed listing: one per distinct buyer.
func confirmKey(listing, who string) string { return keyConfirm + listing + "/" + esc(who) }

func loadListing(tx store.Tx, id string) (*Listing, error) {
	var l Listing
	err := store.GetJSON(tx, listingKey(id), &l)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, ECodeListingNotFound, "no listing %s", id)
	}
	l.relevel()
	return &l, err
}

// putListing writes a listing's record.
func putListing(tx store.Tx, l *Listing) error { return store.SetJSON(tx, listingKey(l.ID), l) }

// addListing writes a new listing: its record, its artifact, its search
// record and its index entries (by fingerprint, by token).
func addListing(tx store.Tx, l *Listing, art []byte, search *searchDoc) error {
	if err := tx.Set(keyArtifact+l.ID, art); err != nil {
		return err
	}
	if err := tx.Set(keyFP+l.Fingerprint+"/"+l.ID, nil); err != nil {
		return err
	}
	if err := store.SetJSON(tx, keySearch+l.ID, search); err != nil {
		return err
	}
	if err := indexListing(tx, l.ID, search); err != nil {
		return err
	}
	return putListing(tx, l)
}

// artifact reads a listing's artifact as published.
func artifact(tx store.Tx, listing string) ([]byte, error) { return tx.Get(keyArtifact + listing) }

// searchRecord reads a listing's search record.
func searchRecord(tx store.Tx, listing string) (searchDoc, error) {
	var d searchDoc
	err := store.GetJSON(tx, keySearch+listing, &d)
	return d, err
}

// eachSearchRecord calls fn with every listing's id and search record, as
// stored, in id order.
func eachSearchRecord(tx store.Tx, fn func(id string, v []byte) error) error {
	return tx.Scan(keySearch, false, func(k string, v []byte) error { return fn(k[len(keySearch):], v) })
}

// fingerprintPrefix is where the listings of a problem fingerprint are
// named.
func fingerprintPrefix(fp string) string { return keyFP + fp + "/" }

// eachListing calls fn with every listing's record as stored, in id
// order, until fn returns an error (store.ErrStop ends it cleanly).
func eachListing(tx store.Tx, fn func(v []byte) error) error {
	return tx.Scan(keyListing, false, func(_ string, v []byte) error { return fn(v) })
}

// eachPurchase calls fn with every purchase's record as stored.
func eachPurchase(tx store.Tx, fn func(v []byte) error) error {
	return tx.Scan(keyPurchase, false, func(_ string, v []byte) error { return fn(v) })
}

// eachChallenge calls fn with every challenge's record as stored.
func eachChallenge(tx store.Tx, fn func(v []byte) error) error {
	return tx.Scan(keyChallenge, false, func(_ string, v []byte) error { return fn(v) })
}

// boughtBy returns the id of buyer's purchase of listing;
// store.ErrNotFound when there is none.
func boughtBy(tx store.Tx, listing, buyer string) (string, error) {
	b, err := tx.Get(boughtKey(listing, buyer))
	return string(b), err
}

// openPurchases lists the ids of listing's purchases whose window is
// open, at most one when first is set.
func openPurchases(tx store.Tx, listing string, first bool) ([]string, error) {
	var ids []string
	err := tx.Scan(keyOpen+listing+"/", false, func(k string, _ []byte) error {
		ids = append(ids, k[strings.LastIndexByte(k, '/')+1:])
		if first {
			return store.ErrStop
		}
		return nil
	})
	if errors.Is(err, store.ErrStop) {
		err = nil
	}
	return ids, err
}

// putPurchase writes a purchase's record.
func putPurchase(tx store.Tx, p *Purchase) error { return store.SetJSON(tx, purchaseKey(p.ID), p) }

// holdDue names p among the purchases that settle when their window
// closes, and dropDue takes it out (a challenge holds it).
func holdDue(tx store.Tx, p *Purchase) error { return tx.Set(dueKey(p.WindowClosesAt, p.ID), nil) }
func dropDue(tx store.Tx, p *Purchase) error { return tx.Delete(dueKey(p.WindowClosesAt, p.ID)) }

func loadChallenge(tx store.Tx, id string) (*Challenge, error) {
	var c Challenge
	err := store.GetJSON(tx, challengeKey(id), &c)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, ECodeChallengeNotFound, "no challenge %s", id)
	}
	return &c, err
}

// putChallenge writes a challenge's record.
func putChallenge(tx store.Tx, c *Challenge) error { return store.SetJSON(tx, challengeKey(c.ID), c) }

// putEvidence keeps a challenge's evidence as sent.
func putEvidence(tx store.Tx, challenge string, ev []byte) error {
	return tx.Set(keyEvidence+challenge, ev)
}

// confirmed reports whether who has confirmed listing.
func confirmed(tx store.Tx, listing, who string) (bool, error) {
	_, err := tx.Get(confirmKey(listing, who))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// confirm records who's confirmation of listing.
func confirm(tx store.Tx, listing, who string, c confirmRecord) error {
	return store.SetJSON(tx, confirmKey(listing, who), c)
}
