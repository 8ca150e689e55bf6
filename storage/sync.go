package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// groupSync makes commits durable in groups: a committer waits for a sync
// that started after its commit, and whoever finds no sync running starts
// one for everybody waiting (after a short wait for more when the last
// sync was a big one: gatherAfter). With many concurrent committers one
// fsync serves them all, where badger's SyncWrites would run one per
// commit.
type groupSync struct {
	sync   func() error
	onSync func(commits int) // nil, or told each sync's batch size

	mu      sync.Mutex
	cond    sync.Cond
	next    uint64 // the generation of the next sync to start
	done    uint64 // every generation below this one has finished
	running bool
	joined  int   // callers waiting for the next sync to start
	err     error // the first failed sync: the store is broken from then on
	// lastBatch is how many commits the last sync made durable, and
	// gathering is set while a leader waits for more to join its sync
	// (gatherAfter); gathers counts those waits, for tests.
	lastBatch int
	gathering bool
	gathers   int
}

// When the last sync made gatherAfter or more commits durable, many are
// committing at once, and the next sync's leader waits gatherWait before
// it starts, so that the commits on their way join it: fewer, fuller
// syncs, each a trip to the device and a walk of the logs' dirty pages
// (by a CPU profile at 128 clients, fdatasync took 6% of the server's
// CPU). A sync after a smaller batch starts at once: few committers never
// wait for company. Both were chosen measuring `assay bench court`: 4-7%
// more cases/s at 128 clients, the same latency at 2, 8 and 32.
const (
	gatherAfter = 8
	gatherWait  = 300 * time.Microsecond
)

// newGroupSync returns a groupSync running fn; onSync, when not nil, is
// told how many commits each sync made durable.
func newGroupSync(fn func() error, onSync func(commits int)) *groupSync {
	g := &groupSync{sync: fn, onSync: onSync, next: 1, done: 1}
	g.cond.L = &g.mu
	return g
}

// failed returns the error of the sync that failed, if one has.
func (g *groupSync) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// quiesce runs fn when no sync is running, and starts none meanwhile.
func (g *groupSync) quiesce(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.running || g.gathering {
		g.cond.Wait()
	}
	fn()
}

// wait returns once a sync that started after the call has finished.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := g.next // the next sync to start covers this caller's commit
	g.joined++
	gathered := false
	for g.done <= want && g.err == nil {
		if g.running || g.gathering {
			g.cond.Wait()
			continue
		}
		if !gathered && g.lastBatch >= gatherAfter {
			// Many commit at once: let the ones on their way join
			// this sync rather than each start the next.
			gathered, g.gathering = true, true
			g.gathers++
			g.mu.Unlock()
			time.Sleep(gatherWait)
			g.mu.Lock()
			g.gathering = false
			continue
		}
		// Lead: run the next generation for everyone waiting on it.
		gen := g.next
		g.next++
		g.running = true
		batch := g.joined
		g.joined = 0
		g.lastBatch = batch
		g.mu.Unlock()
		if g.onSync != nil {
			g.onSync(batch)
		}
		err := g.sync()
		g.mu.Lock()
		g.running = false
		g.done = gen + 1
		if err != nil && g.err == nil {
			g.err = fmt.Errorf("storage: sync failed, writes are no longer durable: %w", err)
		}
		g.cond.Broadcast()
	}
	return g.err
}

// syncFiles makes everything committed so far durable: it fdatasyncs the
// write-ahead logs of the memtables (*.mem: the active one and any rotated
// out and not yet flushed to a table) and the value logs (*.vlog). It does
// not call badger's DB.Sync, which holds the database's lock through the
// sync and so stalls every commit behind it; syncing the files through
// their own descriptors writes the same pages (badger writes them through
// shared mappings) without stopping the writers. The descriptors stay
// open from sync to sync (a directory read, when one is needed, finds the
// files that came and went); only one sync runs at a time (groupSync), so
// the state here needs no lock.
//
// An fdatasync costs a trip to the device even for a file with nothing
// new (ext4 flushes the disk's cache every time), so syncFiles syncs only
// the files that may hold something not yet durable (syncPlan): the
// newest write-ahead log, which badger's one writer appends to; an older
// one once more after it was rotated out (badger writes to one log at a
// time and creates the next only after its last write to the previous);
// and the value logs when a transaction since the last sync wrote a value
// big enough to go there (d.bigWrites) or the set of value logs changed.
//
// Reading the directory costs in proportion to the tables in it (14 µs
// for 70 files here, 170 µs for 1,000, a millisecond for 5,000), and a
// sync would pay it for every group of commits, the more the bigger the
// store. So a sync reads it only when something may have changed (the
// first sync; a big value committed; the write-ahead log rotated, which
// badger does by creating the log numbered one more: a name to look up,
// not a directory to read); otherwise it syncs the newest write-ahead log
// alone, which is what the plan would say: no big value since the last
// sync, so the value logs hold nothing new, and no rotation, so no log
// was rotated out.
func (d *DB) syncFiles() error {
	files, err := d.logsToSync(d.bigWrites.Swap(false))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := datasync(f); err != nil {
			return err
		}
	}
	return nil
}

// logsToSync returns the open log files a sync must fdatasync, big
// telling whether a big value was committed since the last sync. It
// counts on the sync: after a failed one the store takes no more writes.
func (d *DB) logsToSync(big bool) ([]*os.File, error) {
	if f := d.logs[d.newest]; f != nil && !big {
		_, err := os.Lstat(filepath.Join(d.dir, memLogName(logNumber(d.newest)+1)))
		if errors.Is(err, fs.ErrNotExist) {
			return []*os.File{f}, nil
		} else if err != nil {
			return nil, err
		}
	}
	return d.listedLogs(big)
}

// memLogName is the name badger gives write-ahead log n (its mtFilePath).
func memLogName(n uint64) string { return fmt.Sprintf("%05d.mem", n) }

// listedLogs is logsToSync by the plan of the directory's listing.
func (d *DB) listedLogs(big bool) ([]*os.File, error) {
	d.listings++
	dir, err := os.Open(d.dir)
	if err != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, err
	}
	if d.logs == nil {
		d.logs = map[string]*os.File{}
		d.sealed = map[string]bool{}
	}
	// The flag was read before the listing: a value committed after
	// that is waited for by a sync that starts later and reads it set.
	plan := syncPlan(names, d.sealed, d.vlogSet, big)
	files := make([]*os.File, 0, len(plan.sync))
	for _, name := range plan.sync {
		f := d.logs[name]
		if f == nil {
			f, err = os.Open(filepath.Join(d.dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed and removed meanwhile
			} else if err != nil {
				return nil, err
			}
			d.logs[name] = f
		}
		files = append(files, f)
	}
	for _, name := range plan.sealed {
		d.sealed[name] = true
	}
	d.vlogSet, d.newest = plan.vlogSet, plan.newest
	for name, f := range d.logs {
		if !plan.present[name] {
			f.Close() // flushed to a table and removed
			delete(d.logs, name)
			delete(d.sealed, name)
		}
	}
	for name := range d.sealed {
		if !plan.present[name] {
			delete(d.sealed, name)
		}
	}
	return files, nil
}

// logPlan is what one sync syncs.
type logPlan struct {
	sync    []string        // the files to fdatasync
	sealed  []string        // rotated-out write-ahead logs that need no sync after this one
	vlogSet string          // the value logs present, for the next plan
	present map[string]bool // every log file present
	newest  string          // the newest write-ahead log, which badger appends to; "" when there is none
}

// syncPlan decides which of the log files in names a sync must fdatasync
// (see syncFiles): sealed are the write-ahead logs already synced since
// they were rotated out, vlogSet the value logs the last sync saw, big
// whether a value big enough for the value log was committed since.
func syncPlan(names []string, sealed map[string]bool, vlogSet string, big bool) logPlan {
	var mems, vlogs []string
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, ".mem"):
			mems = append(mems, n)
		case strings.HasSuffix(n, ".vlog"):
			vlogs = append(vlogs, n)
		}
	}
	byNumber := func(a, b string) int { return cmp.Compare(logNumber(a), logNumber(b)) }
	slices.SortFunc(mems, byNumber)
	slices.SortFunc(vlogs, byNumber)
	p := logPlan{vlogSet: strings.Join(vlogs, ","), present: make(map[string]bool, len(mems)+len(vlogs))}
	for i, n := range mems {
		p.present[n] = true
		if i == len(mems)-1 {
			p.sync = append(p.sync, n) // the one being written
			p.newest = n
		} else if !sealed[n] {
			p.sync = append(p.sync, n)
			p.sealed = append(p.sealed, n)
		}
	}
	for _, n := range vlogs {
		p.present[n] = true
	}
	if big || p.vlogSet != vlogSet {
		p.sync = append(p.sync, vlogs...)
	}
	return p
}

// logNumber is the file number a log's name starts with (badger's
// 00005.mem, 000001.vlog), or 0.
func logNumber(name string) uint64 {
	stem, _, _ := strings.Cut(name, ".")
	n, _ := strconv.ParseUint(stem, 10, 64)
	return n
}

// closeLogs closes the descriptors syncFiles kept open.
func (d *DB) closeLogs() {
	for name, f := range d.logs {
		f.Close()
		delete(d.logs, name)
	}
}
