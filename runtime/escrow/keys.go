package escrow

import (
	"hash/fnv"
	"net/url"
	"strconv"
)

// Key prefixes; storage/doc.go lists them.
const (
	keyContract     = "escrow/contract/"      // <id> -> Contract
	keyDelivery     = "escrow/delivery/"      // <id> -> delivery
	keyAdjudication = "escrow/adjudication/"  // <id> -> adjudication
	keyActivity     = "escrow/activity/"      // <seq:020d>-<node> -> Event
	keyReputation   = "escrow/reputation/"    // <did>/<role>/<shard:02d> -> counts
	keyNegative     = "escrow/negative/"      // <did> -> "1": the agent lost a decision
	keyNegativeMark = "escrow/meta/negatives" // -> "1": every agent with a negative has its key
)

// repShards is how many counters one agent's reputation in one role is
// split into, so that concurrent disputes of one seller rarely conflict.
const repShards = 16

func contractKey(id string) string     { return keyContract + id }
func deliveryKey(id string) string     { return keyDelivery + id }
func adjudicationKey(id string) string { return keyAdjudication + id }
func activityKey(seq uint64, node string) string {
	var n [20]byte
	digits := strconv.AppendUint(n[:0], seq, 10)
	k := make([]byte, 0, len(keyActivity)+21+len(node))
	k = append(k, keyActivity...)
	for range 20 - len(digits) {
		k = append(k, '0')
	}
	k = append(append(append(k, digits...), '-'), node...)
	return string(k)
}

func reputationPrefix(did string) string { return keyReputation + url.PathEscape(did) + "/" }

func negativeKey(did string) string { return keyNegative + url.PathEscape(did) }

func reputationKey(did string, r role, contract string) string {
	h := fnv.New32a()
	h.Write([]byte(contract))
	shard := h.Sum32() % repShards
	return reputationPrefix(did) + string(r) + "/" + string([]byte{'0' + byte(shard/10), '0' + byte(shard%10)})
}

// holdAccount is the ledger account that holds a contract's escrow.
func holdAccount(contract string) string { return "hold:escrow:" + contract }
