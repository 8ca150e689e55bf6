package matters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
)

// Key prefixes; storage/doc.go lists them.
const (
	keyMatter    = "matters/matter/"    // <id> -> Matter
	keyTenant    = "matters/tenant/"    // <sha256(tenant)>/<id> -> "" (every Matter of a tenant)
	keyOpen      = "matters/open/"      // <sha256(tenant)>/<id> -> "" (the open ones)
	keyReceipt   = "matters/receipt/"   // <id>/<seq:04d> -> receipt.Receipt
	keyPrincipal = "matters/principal/" // <key id, escaped> -> Principal
	keyNonce     = "matters/nonce/"     // <key id, escaped>/<nonce, escaped> -> created (unix seconds)
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
	return keyNonce + url.PathEscape(keyID) + "/" + url.PathEscape(nonce)
}

// receiptID derives the id of a Matter's seq-th receipt: unique, and the
// same on every retry of the transaction that signs it.
func receiptID(matter string, seq int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "matters/%s/%d", matter, seq))
	return hex.EncodeToString(sum[:8])
}
