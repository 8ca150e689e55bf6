package matters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/assayhq/assay/runtime/receipt"
)

// Key prefixes; storage/doc.go lists them.
const (
	keyMatter = "matters/matter/" // <id> -> Matter
	keyTenant = "matters/tenant/" // <sha256(tenant)>/<id> -> "" (every Matter of a tenant)
	keyOpen   = "matters/open/"   // <sha256(tenant)>/<id> -> "" (the open ones)
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

func matterKey(id string) string           { return keyMatter + id }
func tenantPrefix(tenant string) string    { return keyTenant + hashHex(tenant) + "/" }
func openPrefix(tenant string) string      { return keyOpen + hashHex(tenant) + "/" }
func receiptPrefix(id string) string       { return keyReceipt + id + "/" }
func receiptKey(id string, seq int) string { return fmt.Sprintf("%s%04d", receiptPrefix(id), seq) }

// receiptID derives the id of a Matter's seq-th receipt: unique, and the
// same on every retry of the transaction that signs it.
func receiptID(matter string, seq int) string {
	return receipt.ID("matters", matter, strconv.Itoa(seq))
}
