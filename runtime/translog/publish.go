package translog

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/store"
)

// publish signs a checkpoint of the integrated tree when it is larger than
// the published one, has the witnesses cosign it, and publishes it. It
// returns the published size, or 0 when it published nothing.
func (l *Log) publish(ctx context.Context) (int64, error) {
	var st state
	var cur []byte
	err := l.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		if st, err = readState(tx); err != nil {
			return err
		}
		cur, err = tx.Get(keyCheckpoint)
		if errors.Is(err, store.ErrNotFound) {
			cur, err = nil, nil
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	if cur != nil {
		c, err := l.open(cur)
		if err != nil {
			return 0, fmt.Errorf("translog: the published checkpoint: %w", err)
		}
		if c.N >= st.Size {
			l.remember(cur)
			l.included()
			return 0, nil
		}
	}
	text := torchwood.Checkpoint{Origin: l.Origin(), Tree: tlog.Tree{N: st.Size, Hash: st.Hash}}.String()
	signed, err := note.Sign(&note.Note{Text: text}, l.cfg.Key.Signer())
	if err != nil {
		return 0, fmt.Errorf("translog: sign checkpoint: %w", err)
	}
	cosigned, sizes, err := l.cosign(ctx, signed, st)
	if err != nil {
		return 0, err
	}
	err = l.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := l.hold(tx); err != nil {
			return err
		}
		old, err := tx.Get(keyCheckpoint)
		if err == nil {
			c, err := l.open(old)
			if err != nil {
				return err
			}
			if c.N >= st.Size {
				return errNotLeader // another node published as large a tree meanwhile
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		for name, size := range sizes {
			if err := tx.Set(witnessKey(name), []byte(strconv.FormatInt(size, 10))); err != nil {
				return err
			}
		}
		return tx.Set(keyCheckpoint, cosigned)
	})
	if errors.Is(err, errNotLeader) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	l.remember(cosigned)
	l.included()
	l.cfg.Logger.Info("transparency log: checkpoint published", "origin", l.Origin(), "size", st.Size, "cosignatures", len(sizes))
	return st.Size, nil
}

// included reports the entries this node integrated as included, now
// that a checkpoint of the whole tree is published.
func (l *Log) included() {
	if l.cfg.Included == nil || len(l.stored) == 0 {
		return
	}
	now := l.cfg.Now()
	for _, at := range l.stored {
		l.cfg.Included(now.Sub(at))
	}
	l.stored = l.stored[:0]
}

func (l *Log) remember(cp []byte) {
	l.published = cp
}

// open verifies a checkpoint with the log's key and parses it.
func (l *Log) open(cp []byte) (torchwood.Checkpoint, error) {
	v, err := note.NewVerifier(l.vkey)
	if err != nil {
		return torchwood.Checkpoint{}, err
	}
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		return torchwood.Checkpoint{}, err
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return torchwood.Checkpoint{}, err
	}
	if c.Origin != l.Origin() {
		return torchwood.Checkpoint{}, fmt.Errorf("translog: a checkpoint of origin %q, not %q", c.Origin, l.Origin())
	}
	return c, nil
}

// cosign asks every witness to cosign the signed checkpoint of st, and
// returns it with their cosignatures and the size each witness cosigned.
//
// # Errors
//
// Fewer cosignatures than the quorum: nothing is published.
func (l *Log) cosign(ctx context.Context, signed []byte, st state) ([]byte, map[string]int64, error) {
	sizes := map[string]int64{}
	if len(l.cfg.Witnesses) == 0 {
		return signed, sizes, nil
	}
	out := bytes.Clone(signed)
	var errs []error
	for _, w := range l.cfg.Witnesses {
		lines, err := l.askWitness(ctx, w, signed, st)
		if err != nil {
			errs = append(errs, fmt.Errorf("witness %s: %w", w.Name(), err))
			continue
		}
		out = append(out, lines...)
		sizes[w.Name()] = st.Size
	}
	if len(sizes) < l.cfg.Quorum {
		return nil, nil, fmt.Errorf("translog: %d of %d witnesses cosigned the checkpoint of size %d, %d needed: %w",
			len(sizes), len(l.cfg.Witnesses), st.Size, l.cfg.Quorum, errors.Join(errs...))
	}
	for _, err := range errs {
		l.cfg.Logger.Warn("transparency log: a witness did not cosign", "err", err)
	}
	return out, sizes, nil
}

// askWitness sends the checkpoint to w with a consistency proof from the
// size w last cosigned, once more from the size w says when that was not
// it, and returns w's verified cosignature lines.
func (l *Log) askWitness(ctx context.Context, w Witness, signed []byte, st state) ([]byte, error) {
	var old int64
	err := l.cfg.Store.View(ctx, func(tx store.Tx) error {
		b, err := tx.Get(witnessKey(w.Name()))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		old, err = strconv.ParseInt(string(b), 10, 64)
		return err
	})
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if old > st.Size {
			return nil, fmt.Errorf("it has cosigned a tree of size %d, larger than this log's %d", old, st.Size)
		}
		proof, err := l.consistency(ctx, old, st.Size)
		if err != nil {
			return nil, err
		}
		var body bytes.Buffer
		fmt.Fprintf(&body, "old %d\n", old)
		for _, h := range proof {
			body.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
		}
		body.WriteString("\n")
		body.Write(signed)
		status, reply, err := w.post(ctx, l.cfg.Client, body.Bytes())
		if err != nil {
			return nil, err
		}
		switch {
		case status == http.StatusOK:
			return w.verify(signed, reply)
		case status == http.StatusConflict && attempt == 0:
			if old, err = strconv.ParseInt(strings.TrimSuffix(string(reply), "\n"), 10, 64); err != nil {
				return nil, fmt.Errorf("409 with a body that is not a size: %q", reply)
			}
			continue
		}
		return nil, fmt.Errorf("answered %d: %.200s", status, reply)
	}
}

// consistency proves that the tree of size n extends the one of size old.
func (l *Log) consistency(ctx context.Context, old, n int64) (tlog.TreeProof, error) {
	if old == 0 || old == n {
		return nil, nil
	}
	var p tlog.TreeProof
	err := l.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		p, err = tlog.ProveTree(n, old, newHashReader(tx))
		return err
	})
	return p, err
}

// Witness is a C2SP tlog-witness the log asks to cosign its checkpoints:
// its submission URL and its Ed25519 cosignature key (C2SP
// tlog-cosignature).
type Witness struct {
	url      string
	verifier note.Verifier
	vkey     string
}

// ParseWitness reads a witness as "VKEY@URL": its signed-note verifier key
// (type 0x04, an Ed25519 cosignature key, as `assay witness` prints it)
// and its submission prefix, e.g.
// "witness.example/w1+1a2b3c4d+BAzE…@https://witness.example/".
//
// # Errors
//
// A spec without "@http", a key that is not a cosignature key.
func ParseWitness(spec string) (Witness, error) {
	i := strings.Index(spec, "@http")
	if i < 0 {
		return Witness{}, fmt.Errorf("translog: witness %q: want VKEY@URL, the URL starting http:// or https://", spec)
	}
	v, err := NewCosignatureVerifier(spec[:i])
	if err != nil {
		return Witness{}, fmt.Errorf("translog: witness %q: %w", spec, err)
	}
	return Witness{url: strings.TrimSuffix(spec[i+1:], "/"), verifier: v, vkey: spec[:i]}, nil
}

// Name is the witness's key name.
func (w Witness) Name() string { return w.verifier.Name() }

// VerifierKey is the witness's cosignature key, as it was given.
func (w Witness) VerifierKey() string { return w.vkey }

// URL is the witness's submission prefix.
func (w Witness) URL() string { return w.url }

// Verifier checks the witness's cosignatures.
func (w Witness) Verifier() note.Verifier { return w.verifier }

func (w Witness) post(ctx context.Context, c *http.Client, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	return res.StatusCode, b, err
}

// verify checks a witness's reply to add-checkpoint: signature lines, of
// which the witness's own must verify on the checkpoint. It returns those.
func (w Witness) verify(signed, reply []byte) ([]byte, error) {
	n, err := note.Open(append(bytes.Clone(signed), reply...), note.VerifierList(w.verifier))
	if err != nil {
		return nil, fmt.Errorf("its reply does not verify: %w", err)
	}
	var out []byte
	for _, s := range n.Sigs {
		out = append(out, []byte("— "+s.Name+" "+s.Base64+"\n")...)
	}
	return out, nil
}
