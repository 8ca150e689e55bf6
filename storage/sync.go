package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// groupSync makes commits durable in groups: a committer waits for a sync
// that started after its commit, and whoever finds no sync running starts
// one for everybody waiting. With many concurrent committers one fsync
// serves them all, where badger's SyncWrites would run one per commit.
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
}

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
	for g.running {
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
	for g.done <= want && g.err == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		// Lead: run the next generation for everyone waiting on it.
		gen := g.next
		g.next++
		g.running = true
		batch := g.joined
		g.joined = 0
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
// open from sync to sync (one directory read finds the files that came
// and went); only one sync runs at a time (groupSync), so d.logs needs no
// lock.
func (d *DB) syncFiles() error {
	dir, err := os.Open(d.dir)
	if err != nil {
		return err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return err
	}
	if d.logs == nil {
		d.logs = map[string]*os.File{}
	}
	seen := make(map[string]bool, len(d.logs))
	for _, name := range names {
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		seen[name] = true
		f := d.logs[name]
		if f == nil {
			f, err = os.Open(filepath.Join(d.dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed and removed meanwhile
			} else if err != nil {
				return err
			}
			d.logs[name] = f
		}
		if err := datasync(f); err != nil {
			return err
		}
	}
	for name, f := range d.logs {
		if !seen[name] {
			f.Close() // flushed to a table and removed
			delete(d.logs, name)
		}
	}
	return nil
}

// closeLogs closes the descriptors syncFiles kept open.
func (d *DB) closeLogs() {
	for name, f := range d.logs {
		f.Close()
		delete(d.logs, name)
	}
}
