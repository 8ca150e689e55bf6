package translog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
)

// Error codes of the log's routes.
const (
	ECodeNoCheckpoint = "log_checkpoint_not_found"
	ECodeTileNotFound = "log_tile_not_found"
	ECodeBadTilePath  = "invalid_tile_path"
)

// ProofFormat is the first line of a C2SP tlog-proof.
const ProofFormat = "c2sp.org/tlog-proof@v1"

// Checkpoint returns the published checkpoint: a C2SP signed note.
//
// # Errors
//
// log_checkpoint_not_found (404) before the first one is published.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, error) {
	var cp []byte
	err := l.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		cp, err = tx.Get(keyCheckpoint)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, ECodeNoCheckpoint, "the log has published no checkpoint yet")
	}
	return cp, err
}

// Tile returns the resource at a C2SP tlog-tiles path below the log's
// prefix: "tile/<L>/<N>[.p/<W>]", a tile of hashes, or
// "tile/entries/<N>[.p/<W>]", an entry bundle.
//
// # Errors
//
// invalid_tile_path (400) for a path that is not one; log_tile_not_found
// (404) for a tile the log does not have (yet).
func (l *Log) Tile(ctx context.Context, path string) ([]byte, error) {
	t, err := torchwood.ParseTilePath(path)
	if err != nil || t.H != TileHeight || torchwood.TilePath(t) != path {
		return nil, fault.New(fault.Invalid, ECodeBadTilePath, "%q is not a C2SP tlog-tiles path: tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], <N> in 3-digit groups like x001/234", path)
	}
	notFound := fault.New(fault.NotFound, ECodeTileNotFound, "the log has no %s", path)
	var data []byte
	n := 0
	err = l.cfg.Store.View(ctx, func(tx store.Tx) error {
		if t.L >= 0 {
			var err error
			data, err = tx.Get(tileKey(t.L, t.N))
			return err
		}
		// An entry bundle: its first W entries, each a key.
		data, n = data[:0], 0
		return tx.Scan(bundlePrefix(t.N), false, func(_ string, e []byte) error {
			var err error
			if data, err = torchwood.AppendTileEntry(data, e); err != nil {
				return err
			}
			if n++; n == t.W {
				return store.ErrStop
			}
			return nil
		})
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	if t.L >= 0 {
		if len(data) < t.W*tlog.HashSize {
			return nil, notFound
		}
		return data[:t.W*tlog.HashSize], nil
	}
	if n < t.W {
		return nil, notFound
	}
	return data, nil
}

// Inclusion is what the log says of one receipt, beside the receipt: its
// entry, index and C2SP tlog-proof once integrated, and the entries that
// supersede it. A verifier checks it against the receipt and the log's key
// (see Verify); nothing in it needs trusting.
type Inclusion struct {
	Origin string `json:"origin"`
	// Status is "included" (in a published checkpoint), "integrated" (in
	// the tree, not yet in a published checkpoint), "pending" (stored,
	// not yet integrated: within about a second) or "absent" (signed
	// while the log was off).
	Status string `json:"status"`
	Index  *int64 `json:"index,omitempty"`
	// Entry is the receipt's log entry (receipt.Entry), as logged.
	Entry string `json:"entry,omitempty"`
	// Proof is a C2SP tlog-proof: the index, the inclusion proof and the
	// checkpoint, cosigned.
	Proof string `json:"proof,omitempty"`
	// SupersededBy are the entries that name this receipt as the one they
	// overturn, each with its own proof.
	SupersededBy []Inclusion `json:"superseded_by,omitempty"`
}

// Inclusion answers what the log holds of the receipt stored as b.
func (l *Log) Inclusion(ctx context.Context, b []byte) (Inclusion, error) {
	r, err := receipt.Parse(b)
	if err != nil {
		return Inclusion{}, err
	}
	var out Inclusion
	err = l.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = l.inclusion(tx, r)
		return err
	})
	return out, err
}

func (l *Log) inclusion(tx store.Tx, r receipt.Receipt) (Inclusion, error) {
	out := Inclusion{Origin: l.Origin(), Status: "absent"}
	id := r.ShortID()
	var idx int64 = -1
	err := tx.Scan(receiptPrefix(id), false, func(_ string, v []byte) error {
		i, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("translog: receipt %s's index %q: %w", id, v, err)
		}
		entry, err := tx.Get(entryKey(i))
		if err != nil {
			return err
		}
		if e, err := receipt.ParseEntry(entry); err != nil || e.Pins(r) != nil {
			return nil
		}
		idx, out.Entry = i, string(entry)
		return store.ErrStop
	})
	if err != nil {
		return out, err
	}
	if idx < 0 {
		pending, err := isPending(tx, r, id)
		if pending {
			out.Status = "pending"
		}
		return out, err
	}
	out.Index, out.Status = &idx, "integrated"
	if err := l.prove(tx, &out, idx); err != nil {
		return out, err
	}
	err = tx.Scan(supersededPrefix(id), false, func(k string, v []byte) error {
		j, err := indexOf(k)
		if err != nil {
			return err
		}
		next := Inclusion{Origin: l.Origin(), Status: "integrated", Index: &j}
		entry, err := tx.Get(entryKey(j))
		if err != nil {
			return err
		}
		next.Entry = string(entry)
		if err := l.prove(tx, &next, j); err != nil {
			return err
		}
		out.SupersededBy = append(out.SupersededBy, next)
		return nil
	})
	return out, err
}

// isPending reports whether receipt r (of short id id) waits in the
// log's pending keys: under the second it was issued, by when it was
// signed (receipt.Put). A receipt signed while the log was off has none.
func isPending(tx store.Tx, r receipt.Receipt, id string) (bool, error) {
	issued, err := time.Parse(time.RFC3339, r.IssuanceDate)
	if err != nil {
		return false, nil
	}
	found := false
	err = tx.Scan(receipt.PendingSecond(issued.Unix()), false, func(k string, _ []byte) error {
		if strings.HasSuffix(k, "-"+id) {
			found = true
			return store.ErrStop
		}
		return nil
	})
	return found, err
}

// prove fills in inc's proof of the entry at idx against the published
// checkpoint, when that includes it.
func (l *Log) prove(tx store.Tx, inc *Inclusion, idx int64) error {
	cp, err := tx.Get(keyCheckpoint)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	c, err := l.open(cp)
	if err != nil {
		return err
	}
	if idx >= c.N {
		return nil
	}
	p, err := tlog.ProveRecord(c.N, idx, newHashReader(tx))
	if err != nil {
		return err
	}
	inc.Status, inc.Proof = "included", FormatProof(idx, p, cp)
	return nil
}

// FormatProof writes a C2SP tlog-proof: the entry's index, its inclusion
// proof and the checkpoint it proves inclusion in.
func FormatProof(index int64, p tlog.RecordProof, checkpoint []byte) string {
	var b strings.Builder
	b.WriteString(ProofFormat + "\nindex " + strconv.FormatInt(index, 10) + "\n")
	for _, h := range p {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(checkpoint)
	return b.String()
}

// ParseProof reads a C2SP tlog-proof (its extra line, if any, ignored).
//
// # Errors
//
// Text that is not one.
func ParseProof(text string) (index int64, p tlog.RecordProof, checkpoint []byte, err error) {
	bad := errors.New("translog: not a " + ProofFormat + " proof")
	head, cp, ok := strings.Cut(text, "\n\n")
	if !ok {
		return 0, nil, nil, bad
	}
	lines := strings.Split(head, "\n")
	if len(lines) < 2 || lines[0] != ProofFormat {
		return 0, nil, nil, bad
	}
	lines = lines[1:]
	if strings.HasPrefix(lines[0], "extra ") {
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return 0, nil, nil, bad
	}
	index, err = strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil || index < 0 || strconv.FormatInt(index, 10) != strings.TrimPrefix(lines[0], "index ") {
		return 0, nil, nil, bad
	}
	for _, line := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(h) != tlog.HashSize || len(p) == 63 {
			return 0, nil, nil, bad
		}
		p = append(p, tlog.Hash(h))
	}
	return index, p, []byte(cp), nil
}

// Key is the log's public description: what GET /log/key answers.
type Key struct {
	Origin      string       `json:"origin"`
	VerifierKey string       `json:"verifier_key"`
	Witnesses   []WitnessKey `json:"witnesses"`
	Quorum      int          `json:"quorum"`
}

// WitnessKey is a witness as Key lists it.
type WitnessKey struct {
	Name        string `json:"name"`
	VerifierKey string `json:"verifier_key"`
	URL         string `json:"url"`
}

// Key describes the log: its origin, its key, its witnesses.
func (l *Log) Key() Key {
	k := Key{Origin: l.Origin(), VerifierKey: l.vkey, Witnesses: []WitnessKey{}, Quorum: l.cfg.Quorum}
	for _, w := range l.cfg.Witnesses {
		k.Witnesses = append(k.Witnesses, WitnessKey{Name: w.Name(), VerifierKey: w.vkey, URL: w.url})
	}
	return k
}

// MarshalInclusion is the bundle {"receipt": …, "log": …} of a receipt's
// stored bytes and what the log says of it: the receipt as it was signed,
// the log beside it.
func MarshalInclusion(member string, b []byte, inc Inclusion) ([]byte, error) {
	logJSON, err := receipt.Marshal(inc)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString(`{"` + member + `":`)
	out.Write(bytes.TrimSpace(b))
	out.WriteString(`,"log":`)
	out.Write(logJSON)
	out.WriteString("}")
	if !json.Valid(out.Bytes()) {
		return nil, errors.New("translog: the bundle is not JSON")
	}
	return out.Bytes(), nil
}
