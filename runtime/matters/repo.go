package matters

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// The judgment service's repository: every key it reads and writes is
// here and nowhere else; storage/doc.go lists them. A Matter is one
// record (JSON, under its id), written once by each mutation of it; two
// index keys name it under its tenant, one of them only while it is open.
// A solver is one record; a seat index key names each quorum Matter a
// solver sat on, for its calibration.
const (
	keyMatter = "matters/matter/" // <id> -> Matter
	keyTenant = "matters/tenant/" // <sha256(tenant)>/<id> -> "" (every Matter of a tenant)
	keyOpen   = "matters/open/"   // <sha256(tenant)>/<id> -> "" (the open ones)
	keySolver = "matters/solver/" // <sha256(tenant)>/<solver id, escaped> -> SolverProfile
	keySeat   = "matters/seat/"   // <sha256(tenant)>/<solver id, escaped>/<matter id> -> "" (the Matters a solver sat on)
	// keyReceipt held a Matter's receipts before the receipt repository
	// (receipt.Put) did; Receipts still reads it for Matters of then.
	keyReceipt = "matters/receipt/" // <id>/<seq:04d> -> receipt.Receipt, HTML-escaped
	// Principals and nonces (matters/principal/, matters/nonce/,
	// matters/nonce-at/) are package principal's.
)

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func matterKey(id string) string        { return keyMatter + id }
func tenantPrefix(tenant string) string { return keyTenant + hashHex(tenant) + "/" }
func openPrefix(tenant string) string   { return keyOpen + hashHex(tenant) + "/" }
func solverKey(tenant, id string) string {
	return keySolver + hashHex(tenant) + "/" + url.PathEscape(id)
}
func seatPrefix(tenant, solver string) string {
	return keySeat + hashHex(tenant) + "/" + url.PathEscape(solver) + "/"
}

// receiptID derives the id of a Matter's seq-th receipt: unique, and the
// same on every retry of the transaction that signs it.
func receiptID(matter string, seq int) string {
	return receipt.ID("matters", matter, strconv.Itoa(seq))
}

// getMatter reads Matter id; store.ErrNotFound when there is none.
func getMatter(tx store.Tx, id string) (*Matter, error) {
	var m Matter
	if err := store.GetJSON(tx, matterKey(id), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// addMatter writes a new Matter and names it under its tenant, and under
// its tenant's open Matters.
func addMatter(tx store.Tx, m *Matter) error {
	if err := tx.Set(tenantPrefix(m.Tenant)+m.ID, nil); err != nil {
		return err
	}
	if err := tx.Set(openPrefix(m.Tenant)+m.ID, nil); err != nil {
		return err
	}
	return putMatter(tx, m)
}

// putMatter writes m; a Matter no longer open leaves its tenant's open
// index.
func putMatter(tx store.Tx, m *Matter) error {
	if err := store.SetJSON(tx, matterKey(m.ID), m); err != nil {
		return err
	}
	if m.Status != StatusOpen {
		return tx.Delete(openPrefix(m.Tenant) + m.ID)
	}
	return nil
}

// matterIDs lists the ids of a tenant's Matters (only the open ones when
// open is set), oldest first, at most limit (0: all).
func matterIDs(tx store.Tx, tenant string, open bool, limit int) ([]string, error) {
	prefix := tenantPrefix(tenant)
	if open {
		prefix = openPrefix(tenant)
	}
	return scanIDs(tx, prefix, limit)
}

// scanIDs lists the ids under an index prefix, at most limit (0: all).
func scanIDs(tx store.Tx, prefix string, limit int) ([]string, error) {
	var ids []string
	err := tx.Scan(prefix, false, func(k string, _ []byte) error {
		ids = append(ids, strings.TrimPrefix(k, prefix))
		if limit > 0 && len(ids) >= limit {
			return store.ErrStop
		}
		return nil
	})
	if errors.Is(err, store.ErrStop) {
		err = nil
	}
	return ids, err
}

// getSolver reads a tenant's solver; store.ErrNotFound when there is none.
func getSolver(tx store.Tx, tenant, id string) (SolverProfile, error) {
	var p SolverProfile
	err := store.GetJSON(tx, solverKey(tenant, id), &p)
	return p, err
}

// putSolver writes a solver's profile.
func putSolver(tx store.Tx, p SolverProfile) error {
	return store.SetJSON(tx, solverKey(p.Tenant, p.ID), p)
}

// addSeat records that solver sat on Matter m.
func addSeat(tx store.Tx, m *Matter, solver string) error {
	return tx.Set(seatPrefix(m.Tenant, solver)+m.ID, nil)
}

// seats lists the ids of the Matters a tenant's solver sat on.
func seats(tx store.Tx, tenant, solver string) ([]string, error) {
	return scanIDs(tx, seatPrefix(tenant, solver), 0)
}

// legacyReceipt reads a receipt stored where Matters kept them before the
// receipt repository, repaired to the bytes that were signed.
func legacyReceipt(tx store.Tx, matter string, seq int) (json.RawMessage, error) {
	b, err := tx.Get(fmt.Sprintf("%s%s/%04d", keyReceipt, matter, seq))
	if err != nil {
		return nil, err
	}
	return receipt.Repair(b)
}
