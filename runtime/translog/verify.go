package translog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Policy is what a verifier trusts: the log's key (its name is the
// origin) and the witnesses of which Quorum must have cosigned a
// checkpoint.
type Policy struct {
	LogKey    string
	Witnesses []note.Verifier
	Quorum    int
}

// Open verifies a checkpoint under the policy: the log's signature, and
// at least Quorum cosignatures of the policy's witnesses. It returns the
// checkpoint and the names of the witnesses that cosigned it.
//
// # Errors
//
// A note that does not verify, a checkpoint that does not parse or names
// another origin, too few cosignatures.
func (p Policy) Open(cp []byte) (torchwood.Checkpoint, []string, error) {
	logV, err := note.NewVerifier(p.LogKey)
	if err != nil {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("translog: log key: %w", err)
	}
	n, err := note.Open(cp, note.VerifierList(logV))
	if err != nil {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("translog: the checkpoint is not signed by the log's key: %w", err)
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("translog: %w", err)
	}
	if c.Origin != logV.Name() {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("translog: the checkpoint's origin is %q, the log key's %q", c.Origin, logV.Name())
	}
	var cosigned []string
	if len(p.Witnesses) > 0 {
		wn, err := note.Open(cp, note.VerifierList(p.Witnesses...))
		var unverified *note.UnverifiedNoteError
		switch {
		case errors.As(err, &unverified):
		case err != nil:
			return torchwood.Checkpoint{}, nil, fmt.Errorf("translog: a cosignature does not verify: %w", err)
		default:
			for _, s := range wn.Sigs {
				cosigned = append(cosigned, s.Name)
			}
		}
	}
	if len(cosigned) < p.Quorum {
		return torchwood.Checkpoint{}, cosigned, fmt.Errorf("translog: %d of the trusted witnesses cosigned the checkpoint, %d needed", len(cosigned), p.Quorum)
	}
	return c, cosigned, nil
}

// CheckProof verifies a C2SP tlog-proof of entry under the policy, and
// returns the entry's index and the checkpoint it is proved in.
func (p Policy) CheckProof(entry []byte, proof string) (int64, torchwood.Checkpoint, error) {
	idx, rp, cp, err := ParseProof(proof)
	if err != nil {
		return 0, torchwood.Checkpoint{}, err
	}
	c, _, err := p.Open(cp)
	if err != nil {
		return 0, torchwood.Checkpoint{}, err
	}
	if err := tlog.CheckRecord(rp, c.N, c.Hash, idx, tlog.RecordHash(entry)); err != nil {
		return 0, torchwood.Checkpoint{}, fmt.Errorf("translog: the inclusion proof of entry %d does not lead to the checkpoint's root: %w", idx, err)
	}
	return idx, c, nil
}

// DirTiles is a torchwood.TileReader over a directory that holds a copy of
// a log in the tlog-tiles layout (checkpoint, tile/…), as `assay audit
// --save` writes it: a partial tile missing from it is cut from the full
// or wider tile when that is there. SaveTiles writes the tiles a client
// verified into it.
type DirTiles struct{ Dir string }

// ReadTiles implements torchwood.TileReader.
func (d DirTiles) ReadTiles(_ context.Context, tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := d.read(t)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (d DirTiles) read(t tlog.Tile) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.Dir, torchwood.TilePath(t)))
	if err == nil || t.W == tileWidth || !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	for w := tileWidth; w > t.W; w-- {
		wide := t
		wide.W = w
		b, err := os.ReadFile(filepath.Join(d.Dir, torchwood.TilePath(wide)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		return cut(t, b)
	}
	return nil, fmt.Errorf("translog: %s has no %s", d.Dir, torchwood.TilePath(t))
}

// cut is the first t.W hashes, or entries, of a wider tile's data.
func cut(t tlog.Tile, b []byte) ([]byte, error) {
	if t.L >= 0 {
		if len(b) < t.W*tlog.HashSize {
			return nil, errors.New("translog: a tile shorter than its width")
		}
		return b[:t.W*tlog.HashSize], nil
	}
	rest := b
	for range t.W {
		var err error
		if _, rest, err = torchwood.ReadTileEntry(rest); err != nil {
			return nil, err
		}
	}
	return b[:len(b)-len(rest)], nil
}

// SaveTiles implements torchwood.TileReader: it writes each tile into the
// directory.
func (d DirTiles) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	for i, t := range tiles {
		path := filepath.Join(d.Dir, torchwood.TilePath(t))
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
			_ = os.WriteFile(path, data[i], 0o644)
		}
	}
}

// ReadEndpoint implements torchwood.TileReader: the file at path.
func (d DirTiles) ReadEndpoint(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.Dir, filepath.FromSlash(path)))
}

// Saving is a torchwood.TileReader that reads through tr and writes every
// tile a client verified, partial ones too, into a DirTiles: a copy of the
// log that DirTiles reads offline.
type Saving struct {
	TR  torchwood.TileReader
	Dir DirTiles
}

// ReadTiles implements torchwood.TileReader. Entry bundles are written as
// they are read, since a client checks an entry against the tree without
// saving its bundle; a reader of the copy checks them again.
func (s Saving) ReadTiles(ctx context.Context, tiles []tlog.Tile) ([][]byte, error) {
	data, err := s.TR.ReadTiles(ctx, tiles)
	if err != nil {
		return nil, err
	}
	for i, t := range tiles {
		if t.L == -1 {
			s.Dir.SaveTiles(tiles[i:i+1], data[i:i+1])
		}
	}
	return data, nil
}

// SaveTiles implements torchwood.TileReader.
func (s Saving) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	s.Dir.SaveTiles(tiles, data)
	s.TR.SaveTiles(tiles, data)
}

// ReadEndpoint implements torchwood.TileReader.
func (s Saving) ReadEndpoint(ctx context.Context, path string) ([]byte, error) {
	return s.TR.ReadEndpoint(ctx, path)
}
