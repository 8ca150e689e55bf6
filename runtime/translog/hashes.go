package translog

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/store"
)

// TileHeight is the height of the log's tiles: 256 hashes, as C2SP
// tlog-tiles fixes it.
const TileHeight = 8

// tileWidth is the number of hashes (or entries) in a full tile.
const tileWidth = 1 << TileHeight

// Keys of the log. receipt.PendingPrefix holds the entries not yet
// integrated.
const (
	keyState      = "tlog/state"      // the tree as integrated: {"size", "hash"}
	keyLease      = "tlog/lease"      // which node integrates, until when
	keyCheckpoint = "tlog/checkpoint" // the published checkpoint: a signed note
	keyTile       = "tlog/tile/"      // <L:02d>/<N:020d> -> the tile's hashes, as wide as the tree has them
	keyEntry      = "tlog/entry/"     // <N:020d>/<i:03d> -> the entry at index N*256+i: entry bundle N, one key an entry
	keyReceipt    = "tlog/receipt/"   // <id>/<16 hex digits of the entry's record hash> -> the index of that entry of receipt id
	keySuperseded = "tlog/superseded/"
	keyWitness    = "tlog/witness/" // <name, escaped> -> the size the witness last cosigned
)

func tileKey(level int, n int64) string {
	return keyTile + pad(int64(level), 2) + "/" + pad(n, 20)
}

// entryKey is where the entry at index n is kept: each entry a key of its
// own, so that an integration writes only its new entries, never a whole
// bundle again.
func entryKey(n int64) string { return bundlePrefix(n/tileWidth) + pad(n%tileWidth, 3) }

// bundlePrefix starts the keys of entry bundle n's entries, in order.
func bundlePrefix(n int64) string { return keyEntry + pad(n, 20) + "/" }

// receiptKey is where the index of receipt id's entry of record hash h is
// kept: a point read finds an entry logged already (logged once), and a
// scan of receiptPrefix(id) finds every entry of the receipt.
func receiptKey(id string, h tlog.Hash) string { return receiptPrefix(id) + hex.EncodeToString(h[:8]) }

func receiptPrefix(id string) string { return keyReceipt + id + "/" }

func supersededPrefix(id string) string { return keySuperseded + id + "/" }

func witnessKey(name string) string { return keyWitness + url.PathEscape(name) }

func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// state is the tree as the last integration left it.
type state struct {
	Size int64     `json:"size"`
	Hash tlog.Hash `json:"hash"`
}

func readState(tx store.Tx) (state, error) {
	var st state
	err := store.GetJSON(tx, keyState, &st)
	if errors.Is(err, store.ErrNotFound) {
		return state{Hash: emptyHash()}, nil
	}
	return st, err
}

// emptyHash is the root of the empty tree: the SHA-256 of nothing, RFC
// 6962's.
func emptyHash() tlog.Hash {
	h, _ := tlog.TreeHash(0, nil)
	return h
}

// hashReader reads the log's stored hashes in a transaction, from the
// tiles the store holds and, first, from those an integration has just
// made (fresh).
type hashReader struct {
	tx    store.Tx
	fresh map[int64]tlog.Hash
	tiles map[[2]int64][]byte
}

func newHashReader(tx store.Tx) *hashReader {
	return &hashReader{tx: tx, fresh: map[int64]tlog.Hash{}, tiles: map[[2]int64][]byte{}}
}

// ReadHashes implements tlog.HashReader.
func (r *hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if h, ok := r.fresh[x]; ok {
			out[i] = h
			continue
		}
		t := tlog.TileForIndex(TileHeight, x)
		data, err := r.tile(t.L, t.N)
		if err != nil {
			return nil, err
		}
		if len(data) < t.W*tlog.HashSize {
			return nil, fmt.Errorf("translog: hash %d is not stored (tile %d/%d holds %d hashes)", x, t.L, t.N, len(data)/tlog.HashSize)
		}
		if out[i], err = tlog.HashFromTile(t, data, x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tile reads the stored tile (level, n), as wide as it is; nil when there
// is none.
func (r *hashReader) tile(level int, n int64) ([]byte, error) {
	k := [2]int64{int64(level), n}
	if d, ok := r.tiles[k]; ok {
		return d, nil
	}
	d, err := r.tx.Get(tileKey(level, n))
	if errors.Is(err, store.ErrNotFound) {
		d, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.tiles[k] = d
	return d, nil
}

// lease says which node integrates, until when (its clock, Unix
// nanoseconds).
type lease struct {
	Node  string `json:"node"`
	Until int64  `json:"until"`
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("translog: " + err.Error())
	}
	return b
}
