package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
)

// logSource is a transparency log a client reads: over HTTP at its
// tlog-tiles prefix (a court's <base>/log), or a directory holding a copy
// in the same layout (assay audit --save).
type logSource struct {
	tiles torchwood.TileReader
	court string // the court's base URL, "" for a directory
	dir   string // the directory, "" over HTTP
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// openLogSource opens --log: a URL (the court's base or its /log prefix)
// or a directory.
func openLogSource(spec string) (*logSource, error) {
	if isURL(spec) {
		base := strings.TrimSuffix(strings.TrimRight(spec, "/"), "/log")
		f, err := torchwood.NewTileFetcher(base+"/log/", torchwood.WithUserAgent("assay/"+version))
		if err != nil {
			return nil, err
		}
		return &logSource{tiles: f, court: base}, nil
	}
	if fi, err := os.Stat(spec); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--log %s: neither an http(s) URL nor a directory", spec)
	}
	return &logSource{tiles: translog.DirTiles{Dir: spec}, dir: spec}, nil
}

// logKey is the key to trust: pinned, or else the one the log publishes
// (GET /log/key, or key.json in a directory), which proves only that the
// log is self-consistent, as a receipt verified without --key does.
func (s *logSource) logKey(ctx context.Context, pinned string) (key string, fromLog bool, err error) {
	if pinned != "" {
		return pinned, false, nil
	}
	var b []byte
	if s.court != "" {
		b, err = httpGet(ctx, s.court+"/log/key")
	} else {
		b, err = os.ReadFile(filepath.Join(s.dir, "key.json"))
	}
	if err != nil {
		return "", false, fmt.Errorf("no --log-key given, and the log's own key is not to be had: %w", err)
	}
	var k translog.Key
	if err := json.Unmarshal(b, &k); err != nil || k.VerifierKey == "" {
		return "", false, errors.New("no --log-key given, and the log's published key does not parse")
	}
	return k.VerifierKey, true, nil
}

// checkpoint reads the log's checkpoint and verifies it under pol.
func (s *logSource) checkpoint(ctx context.Context, pol translog.Policy) (torchwood.Checkpoint, []string, []byte, error) {
	cp, err := s.tiles.ReadEndpoint(ctx, "checkpoint")
	if err != nil {
		return torchwood.Checkpoint{}, nil, nil, fmt.Errorf("the log's checkpoint: %w", err)
	}
	c, names, err := pol.Open(cp)
	return c, names, cp, err
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxReceiptBytes))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return b, &statusError{url: url, status: res.StatusCode, body: b}
	}
	return b, nil
}

type statusError struct {
	url    string
	status int
	body   []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s: %d %.200s", e.url, e.status, e.body)
}

// policyFlags are the flags that say which log and witnesses to trust.
type policyFlags struct {
	logKey    string
	witnesses []string
	quorum    int
}

func (p *policyFlags) register(fsAdd func(name, usage string, fn func(string) error), str func(p *string, name, value, usage string), integer func(p *int, name string, value int, usage string)) {
	str(&p.logKey, "log-key", "", "pin the log's signed-note verifier `VKEY` (GET /log/key shows it); without it the log's own published key is used, which shows the log consistent, not that it is the court's")
	fsAdd("witness", "trust a witness's cosignature key `VKEY` (repeatable)", func(v string) error {
		p.witnesses = append(p.witnesses, v)
		return nil
	})
	integer(&p.quorum, "witness-quorum", 0, "how many of the trusted witnesses must have cosigned the checkpoint (default: all given)")
}

// policy builds the verifying policy with the log key key.
func (p *policyFlags) policy(key string) (translog.Policy, error) {
	pol := translog.Policy{LogKey: key, Quorum: p.quorum}
	if _, err := note.NewVerifier(key); err != nil {
		return pol, fmt.Errorf("log key %q: %w", key, err)
	}
	for _, w := range p.witnesses {
		v, err := translog.NewCosignatureVerifier(w)
		if err != nil {
			return pol, fmt.Errorf("--witness %q: %w", w, err)
		}
		pol.Witnesses = append(pol.Witnesses, v)
	}
	if pol.Quorum == 0 {
		pol.Quorum = len(pol.Witnesses)
	}
	if pol.Quorum < 0 || pol.Quorum > len(pol.Witnesses) {
		return pol, fmt.Errorf("--witness-quorum %d of %d witnesses", pol.Quorum, len(pol.Witnesses))
	}
	return pol, nil
}

// findEntry looks through the whole log for entry, for a directory copy
// without an index: its index, or -1.
func findEntry(ctx context.Context, tr torchwood.TileReader, tree tlog.Tree, entry []byte) (int64, error) {
	client, err := torchwood.NewClient(tr)
	if err != nil {
		return -1, err
	}
	for next := int64(0); next < tree.N; {
		start := next
		for i, e := range client.Entries(ctx, tree, next) {
			if string(e) == string(entry) {
				return i, nil
			}
			next = i + 1
		}
		if err := client.Err(); err != nil {
			return -1, err
		}
		if next == start {
			break
		}
	}
	return -1, nil
}

// logCheck is what assay verify says of a receipt's place in the log.
type logCheck struct {
	Included     bool     `json:"included"`
	Index        *int64   `json:"index,omitempty"`
	TreeSize     int64    `json:"tree_size,omitempty"`
	CosignedBy   []string `json:"cosigned_by,omitempty"`
	SupersededBy []string `json:"superseded_by,omitempty"`
	KeyPinned    bool     `json:"log_key_pinned"`
	Reason       string   `json:"reason,omitempty"`
}

// entryFor is the log entry that must record data's receipt: the one the
// bundle carries when it pins the receipt, else the receipt's own.
func entryFor(data []byte, inc *translog.Inclusion) ([]byte, error) {
	var doc struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	raw := data
	if json.Unmarshal(data, &doc) == nil && doc.Receipt != nil {
		raw = doc.Receipt
	}
	var probe struct {
		Subject json.RawMessage `json:"credentialSubject"`
		Proof   struct {
			Type string `json:"type"`
		} `json:"proof"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	if inc != nil && inc.Entry != "" {
		e, err := receipt.ParseEntry([]byte(inc.Entry))
		if err != nil {
			return nil, err
		}
		if probe.Proof.Type == receipt.Suite {
			r, err := receipt.Parse(raw)
			if err != nil {
				return nil, err
			}
			if err := e.Pins(r); err != nil {
				return nil, err
			}
		} else if err := e.PinsSubject(probe.Subject); err != nil {
			return nil, err
		}
		return []byte(inc.Entry), nil
	}
	if probe.Proof.Type != receipt.Suite {
		return nil, errors.New("a Data Integrity credential names no log entry by itself: give the bundle GET /receipts/{id}?format=di&log=true answers")
	}
	r, err := receipt.Parse(raw)
	if err != nil {
		return nil, err
	}
	return receipt.EntryOf(r).Marshal(), nil
}
