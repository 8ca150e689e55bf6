package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
)

func init() {
	register("audit", "follow a court's transparency log: consistency, every entry served, every agent's receipt logged", cmdAudit)
}

// auditIndex is what an auditor keeps of the entries it read: by receipt
// id, the indexes and entries.
type auditIndex struct {
	Size    int64                     `json:"size"`
	Entries map[string][]indexedEntry `json:"entries"`
}

type indexedEntry struct {
	Index int64  `json:"index"`
	Entry string `json:"entry"`
}

// auditReport is what assay audit prints.
type auditReport struct {
	Origin       string   `json:"origin"`
	Size         int64    `json:"size"`
	PreviousSize int64    `json:"previous_size"`
	CosignedBy   []string `json:"cosigned_by"`
	EntriesRead  int64    `json:"entries_read"`
	ReceiptsSeen int      `json:"receipts_checked"`
	Pending      []string `json:"pending,omitempty"`
	Problems     []string `json:"problems"`
	SplitView    bool     `json:"split_view"`
}

func cmdAudit(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logAt := fs.String("log", envOr("ASSAY_BASE", ""), "the court's `URL` (its base, or its /log)")
	state := fs.String("state", "assay-audit", "the auditor's `DIR`: the last checkpoint it verified, the entries it read, the log's key, a copy of the tiles (assay verify --log DIR reads it)")
	served := fs.String("served", "new", "fetch from the court the receipt of every entry read this run (`new`), of every entry ever read (all), or none")
	grace := fs.Duration("grace", time.Minute, "a served receipt issued this recently that is not in the log yet is pending, not missing")
	var agents, compare []string
	fs.Func("agent", "check that every receipt the court serves for the agent `DID` is in the log (repeatable)", func(v string) error {
		agents = append(agents, v)
		return nil
	})
	fs.Func("compare", "another view of the log's checkpoint at `URL`, e.g. a witness's <prefix>/<sha256 of the origin>/checkpoint: it must be consistent with this one (repeatable)", func(v string) error {
		compare = append(compare, v)
		return nil
	})
	var pf policyFlags
	pf.register(fs.Func, fs.StringVar, fs.IntVar)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assay audit --log URL [--state DIR] [--log-key VKEY] [--witness VKEY]... [--agent DID]... [--compare URL]...")
		fmt.Fprintln(stderr, "\nFollows a court's transparency log: verifies its checkpoint (the log's key, the witnesses'")
		fmt.Fprintln(stderr, "cosignatures), proves it consistent with the last one this auditor saw (kept in DIR), reads")
		fmt.Fprintln(stderr, "every new entry against the tree, checks that the court still serves each entry's receipt")
		fmt.Fprintln(stderr, "as logged, that no receipt id is logged twice with other bytes, and that every receipt the")
		fmt.Fprintln(stderr, "court serves for each --agent is in the log. It prints a JSON report; a split view (a")
		fmt.Fprintln(stderr, "checkpoint that does not extend the one seen before, or another view's) is reported and")
		fmt.Fprintln(stderr, "the state is kept as it was. Exit status: 0 no problem, 1 problems, 2 usage or unreachable.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if !isURL(*logAt) {
		fmt.Fprintln(stderr, "assay audit: --log must be the court's http(s) URL")
		return exitUsage
	}
	if *served != "new" && *served != "all" && *served != "none" {
		fmt.Fprintln(stderr, "assay audit: --served must be new, all or none")
		return exitUsage
	}
	rep, err := audit(context.Background(), auditConfig{log: *logAt, state: *state, served: *served, grace: *grace, agents: agents, compare: compare, policy: pf})
	if err != nil {
		fmt.Fprintf(stderr, "assay audit: %v\n", err)
		return exitUsage
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
	if len(rep.Problems) > 0 {
		return exitNo
	}
	return exitOK
}

type auditConfig struct {
	log, state, served string
	grace              time.Duration
	agents, compare    []string
	policy             policyFlags
}

func audit(ctx context.Context, cfg auditConfig) (*auditReport, error) {
	src, err := openLogSource(cfg.log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.state, 0o755); err != nil {
		return nil, err
	}
	dir := translog.DirTiles{Dir: cfg.state}
	tiles := translog.Saving{TR: src.tiles, Dir: dir}
	key, err := auditKey(ctx, src, cfg)
	if err != nil {
		return nil, err
	}
	pol, err := cfg.policy.policy(key)
	if err != nil {
		return nil, err
	}
	rep := &auditReport{Problems: []string{}}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	cur, names, cpBytes, err := src.checkpoint(ctx, pol)
	if err != nil {
		problem("the log's checkpoint does not verify: %v", err)
		return rep, nil
	}
	rep.Origin, rep.Size, rep.CosignedBy = cur.Origin, cur.N, names

	// The last checkpoint this auditor verified: the new one must extend it.
	if prev, err := os.ReadFile(filepath.Join(cfg.state, "checkpoint")); err == nil {
		p, _, err := translog.Policy{LogKey: key}.Open(prev)
		if err != nil {
			return nil, fmt.Errorf("%s/checkpoint: %w", cfg.state, err)
		}
		rep.PreviousSize = p.N
		if err := consistent(ctx, tiles, p, cur); err != nil {
			rep.SplitView = true
			problem("split view: the log's checkpoint of size %d does not extend the one of size %d this auditor saw before (%v)\nbefore:\n%s\nnow:\n%s", cur.N, p.N, err, prev, cpBytes)
			return rep, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, u := range cfg.compare {
		b, err := httpGet(ctx, u)
		if err != nil {
			problem("--compare %s: %v", u, err)
			continue
		}
		other, _, err := translog.Policy{LogKey: key}.Open(b)
		if err != nil {
			problem("--compare %s: the checkpoint there does not verify with the log's key: %v", u, err)
			continue
		}
		if err := consistent(ctx, tiles, other, cur); err != nil {
			rep.SplitView = true
			problem("split view: the checkpoint at %s (size %d) and the log's (size %d) are not one history (%v)", u, other.N, cur.N, err)
		}
	}
	if rep.SplitView {
		return rep, nil
	}

	idx, err := readAuditIndex(cfg.state)
	if err != nil {
		return nil, err
	}
	if idx.Size > cur.N {
		idx = &auditIndex{Entries: map[string][]indexedEntry{}}
	}
	start := idx.Size
	client, err := torchwood.NewClient(tiles)
	if err != nil {
		return nil, err
	}
	var fresh []string
	for next := idx.Size; next < cur.N; {
		from := next
		for i, e := range client.Entries(ctx, cur.Tree, next) {
			next = i + 1
			entry, err := receipt.ParseEntry(e)
			if err != nil {
				problem("entry %d is not a receipt's entry: %v", i, err)
				continue
			}
			for _, old := range idx.Entries[entry.ID] {
				problem("receipt %s is logged twice with other bytes: entries %d and %d (the court signed two receipts under one id)", entry.ID, old.Index, i)
			}
			idx.Entries[entry.ID] = append(idx.Entries[entry.ID], indexedEntry{Index: i, Entry: string(e)})
			fresh = append(fresh, entry.ID)
		}
		if err := client.Err(); err != nil {
			problem("reading the entries from %d: %v", from, err)
			break
		}
		if next == from {
			break
		}
	}
	idx.Size = max(start, cur.N)
	rep.EntriesRead = cur.N - start

	// Every entry's receipt is still served, as logged.
	ids := fresh
	if cfg.served == "all" {
		ids = ids[:0]
		for id := range idx.Entries {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	}
	if cfg.served != "none" {
		for _, id := range ids {
			b, err := httpGet(ctx, src.court+"/receipts/"+url.PathEscape(id))
			var se *statusError
			if errors.As(err, &se) && se.status == 404 {
				problem("receipt %s is in the log (entry %d) but the court no longer serves it", id, idx.Entries[id][0].Index)
				continue
			} else if err != nil {
				return nil, err
			}
			r, err := receipt.Parse(b)
			if err != nil || !pinned(idx.Entries[id], r) {
				problem("the court serves receipt %s with other bytes than the log holds (entry %d)", id, idx.Entries[id][0].Index)
			}
			rep.ReceiptsSeen++
		}
	}

	// Every receipt the court serves for an agent is in the log.
	for _, did := range cfg.agents {
		b, err := httpGet(ctx, src.court+"/agents/"+url.PathEscape(did)+"/receipts?limit=1000")
		if err != nil {
			return nil, err
		}
		var page receipt.AgentReceipts
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, fmt.Errorf("the receipts of %s: %w", did, err)
		}
		for _, rb := range page.Receipts {
			r, err := receipt.Parse(rb)
			if err != nil {
				problem("the court serves %s a receipt that does not parse: %v", did, err)
				continue
			}
			rep.ReceiptsSeen++
			if pinned(idx.Entries[r.ShortID()], r) {
				continue
			}
			issued, _ := time.Parse(time.RFC3339, r.IssuanceDate)
			if time.Since(issued) < cfg.grace {
				rep.Pending = append(rep.Pending, r.ShortID())
				continue
			}
			problem("receipt %s, served for %s, is not in the log", r.ShortID(), did)
		}
	}

	// Keep what was verified, for the next run and for assay verify --log DIR.
	ib, _ := json.Marshal(idx)
	if err := translog.WriteFileAtomic(filepath.Join(cfg.state, "index.json"), ib, 0o644); err != nil {
		return nil, err
	}
	if err := translog.WriteFileAtomic(filepath.Join(cfg.state, "checkpoint"), cpBytes, 0o644); err != nil {
		return nil, err
	}
	return rep, nil
}

// auditKey is the log key to trust: --log-key, else the one this auditor
// pinned on its first run, else the log's published key, pinned from now
// on.
func auditKey(ctx context.Context, src *logSource, cfg auditConfig) (string, error) {
	path := filepath.Join(cfg.state, "key.json")
	var kept translog.Key
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &kept); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	}
	key := cfg.policy.logKey
	switch {
	case key != "" && kept.VerifierKey != "" && key != kept.VerifierKey:
		return "", fmt.Errorf("--log-key is not the key %s pinned before (%s)", path, kept.VerifierKey)
	case key == "" && kept.VerifierKey != "":
		return kept.VerifierKey, nil
	case key == "":
		var err error
		if key, _, err = src.logKey(ctx, ""); err != nil {
			return "", err
		}
	}
	b, _ := json.Marshal(translog.Key{VerifierKey: key, Witnesses: []translog.WitnessKey{}})
	return key, translog.WriteFileAtomic(path, b, 0o644)
}

// consistent proves, from the log's tiles, that the larger of two
// checkpoints extends the smaller.
func consistent(ctx context.Context, tiles torchwood.TileReader, a, b torchwood.Checkpoint) error {
	if a.N > b.N {
		a, b = b, a
	}
	if a.N == b.N {
		if a.Hash != b.Hash {
			return errors.New("two roots for one size")
		}
		return nil
	}
	if a.N == 0 {
		return nil
	}
	p, err := tlog.ProveTree(b.N, a.N, torchwood.TileHashReaderWithContext(ctx, b.Tree, tiles))
	if err != nil {
		return err
	}
	return tlog.CheckTree(p, b.N, b.Hash, a.N, a.Hash)
}

func pinned(entries []indexedEntry, r receipt.Receipt) bool {
	for _, ie := range entries {
		if e, err := receipt.ParseEntry([]byte(ie.Entry)); err == nil && e.Pins(r) == nil {
			return true
		}
	}
	return false
}

func readAuditIndex(dir string) (*auditIndex, error) {
	idx := &auditIndex{Entries: map[string][]indexedEntry{}}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return idx, nil
	} else if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, idx); err != nil {
		return nil, fmt.Errorf("%s/index.json: %w", dir, err)
	}
	if idx.Entries == nil {
		idx.Entries = map[string][]indexedEntry{}
	}
	return idx, nil
}
