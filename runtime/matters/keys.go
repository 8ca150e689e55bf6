package matters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/assayhq/assay/runtime/receipt"
)

// Key prefixes; storage/doc.go lists them.
const (
	keyMatter = "matters/matter/" // <id> -> Matter
	keyTenant = "matters/tenant/" // <sha256(tenant)>/<id> -> "" (every Matter of a tenant)
	keyOpen   = "matters/open/"   // <sha256(tenant)>/<id> -> "" (the open ones)
	// keyReceipt held a Matter's receipts before the receipt repository
	// (receipt.Put) did; Receipts still reads it for Matters of then.
	keyReceipt   = "matters/receipt/"   // <id>/<seq:04d> -> receipt.Receipt, HTML-escaped
	keyPrincipal = "matters/principal/" // <key id, escaped> -> Principal
	keyNonce     = "matters/nonce/"     // <key id, escaped>/<nonce, escaped> -> created (RFC 3339)
	keyNonceAt   = "matters/nonce-at/"  // <created unix seconds:020d>/<nonce key suffix> -> "" (nonces by age, for pruning)
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
func principalKey(keyID string) string     { return keyPrincipal + url.PathEscape(keyID) }
func nonceKey(keyID, nonce string) string {
	return keyNonce + nonceSuffix(keyID, nonce)
}
func nonceSuffix(keyID, nonce string) string {
	return url.PathEscape(keyID) + "/" + url.PathEscape(nonce)
}

// nonceAtKey orders a nonce by its signature's created second; the zero
// padding makes key order time order.
func nonceAtKey(created time.Time, keyID, nonce string) string {
	return fmt.Sprintf("%s%020d/%s", keyNonceAt, max(created.Unix(), 0), nonceSuffix(keyID, nonce))
}

// receiptID derives the id of a Matter's seq-th receipt: unique, and the
// same on every retry of the transaction that signs it.
func receiptID(matter string, seq int) string {
	return receipt.ID("matters", matter, strconv.Itoa(seq))
}
