package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Errors a host function panics with to end the guest at once. wazero
// recovers a host function's panic and returns it, wrapped, from the guest
// call, where run classifies it with errors.Is.
var (
	errOutputExceeded = errors.New("wasm: output cap exceeded")
	errFuelExhausted  = errors.New("wasm: fuel exhausted")
	// errStopped ends a guest whose run's context is done: its deadline
	// passed, its caller cancelled it, or the sandbox is closing. It
	// decides nothing.
	errStopped = errors.New("wasm: run stopped")
)

// FuelSlice is the most fuel a metered guest is given at a time: 2.5 ms
// of the cheapest loop, (loop (br 0)), on the compiler here (0.25 ns a
// fuel, BenchmarkSpin; 6 ms with other builds running). When a
// slice is spent
// the guest calls the host (meter.SliceFunc), which checks the run's
// context and gives the next slice. Slice boundaries depend only on fuel,
// so fuel used does not depend on them; they bound how long a guest runs
// past its deadline, and how long a garbage collection waits for it.
const FuelSlice uint64 = 10_000_000

// fuelMeter hands a metered guest its fuel in slices and charges host work
// (bytes moved by fd_read and fd_write, and the like) to it. The guest's
// counter, the exported global, holds what is left of the slices given so
// far: fuel used is given minus the counter. The instrumented guest writes
// its counter to the global before every call and reloads it after, so a
// charge made here is seen by the guest as soon as the host call returns.
type fuelMeter struct {
	global api.MutableGlobal // nil for unmetered runs, and until instantiation
	limit  uint64            // the run's fuel
	given  uint64            // fuel handed to the guest so far, at most limit
	ctx    context.Context   // the run's: a done context stops the guest
}

// start gives the guest its first slice of limit fuel.
func (m *fuelMeter) start(ctx context.Context, g api.MutableGlobal, limit uint64) {
	m.global, m.limit, m.ctx = g, limit, ctx
	m.given = min(FuelSlice, limit)
	g.Set(m.given)
}

// refill is what the guest's call of meter.SliceFunc does, and what a
// host charge does when it overdraws the counter, left: it stops the guest
// if its run's context is done; otherwise it gives as many slices as make
// the counter non-negative, or ends the run as fuel_exhausted when the
// run's whole fuel has been given and the counter is still negative. It
// panics rather than return in both cases, which wazero turns into the
// guest call's error.
func (m *fuelMeter) refill(left int64) {
	if m.ctx != nil && m.ctx.Err() != nil {
		panic(errStopped)
	}
	if left < 0 && m.given < m.limit {
		need := uint64(-left)
		slices := (need + FuelSlice - 1) / FuelSlice
		add := m.limit - m.given
		if slices <= add/FuelSlice {
			add = slices * FuelSlice
		}
		m.given += add
		left += int64(add)
	}
	m.global.Set(uint64(left))
	if left < 0 {
		panic(errFuelExhausted)
	}
}

// charge takes n fuel for host work, refilling when the slice is spent.
func (m *fuelMeter) charge(n int) {
	if m.global == nil || n <= 0 {
		return
	}
	left := int64(m.global.Get()) - int64(n)
	if left < 0 {
		m.refill(left)
		return
	}
	m.global.Set(uint64(left))
}

// used returns the fuel the guest used: what it was given less what is
// left, more than the limit when the guest overdrew its last slice.
func (m *fuelMeter) used() uint64 {
	left := int64(m.global.Get())
	if left < 0 {
		return m.given + uint64(-left)
	}
	return m.given - uint64(left)
}

// capWriter keeps the first cap bytes of a stream and the SHA-256 of all of
// it. A write that crosses the cap ends the run as output_exceeded: nothing
// past the cap is buffered.
type capWriter struct {
	cap      int
	kept     []byte
	total    int64
	sum      hash.Hash
	meter    *fuelMeter
	exceeded bool
}

func newCapWriter(limit int, meter *fuelMeter) *capWriter {
	return &capWriter{cap: limit, sum: sha256.New(), meter: meter}
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.meter.charge(len(p))
	w.total += int64(len(p))
	w.sum.Write(p)
	if room := w.cap - len(w.kept); room > 0 {
		w.kept = append(w.kept, p[:min(room, len(p))]...)
	}
	if w.total > int64(w.cap) {
		w.exceeded = true
		panic(errOutputExceeded)
	}
	return len(p), nil
}

func (w *capWriter) hex() string { return hex.EncodeToString(w.sum.Sum(nil)) }

// meteredReader charges every byte the guest reads.
type meteredReader struct {
	r     io.Reader
	meter *fuelMeter
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.meter.charge(n)
	return n, err
}

// newInputFS is the read-only directory mounted at /in: artifact, and where
// the case has them, evidence and criteria.json. It is held in memory;
// reads are charged to the guest's fuel.
func newInputFS(in Input, meter *fuelMeter, open *atomic.Int64) fs.FS {
	files := MemDir{"artifact": in.Artifact}
	if in.Evidence != nil {
		files["evidence"] = in.Evidence
	}
	if in.Criteria != nil {
		files["criteria.json"] = in.Criteria
	}
	return &meteredFS{fs: files, meter: meter, open: open}
}

// MemDir is a flat, read-only, in-memory directory, for /in and for the
// Mounts of front-ends. Its files share the map's byte slices: nothing is
// copied per run. Entries list in name order and are dated the Unix epoch,
// so a guest sees no host time, not even in a file's mtime.
type MemDir map[string][]byte

// Open implements fs.FS.
func (d MemDir) Open(name string) (fs.File, error) {
	if name == "." {
		return &memDir{d: d}, nil
	}
	data, ok := d[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{info: fileInfo{name: name, size: int64(len(data))}, Reader: bytes.NewReader(data)}, nil
}

// memFile is a MemDir file; its *bytes.Reader gives wazero Read, ReadAt
// (pread) and Seek (lseek).
type memFile struct {
	info fileInfo
	*bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	d    MemDir
	read bool
}

func (d *memDir) Stat() (fs.FileInfo, error) { return fileInfo{name: ".", dir: true}, nil }
func (d *memDir) Close() error               { return nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFile, listing entries in name order.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.read {
		if n > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.read = true
	names := make([]string, 0, len(d.d))
	for name := range d.d {
		names = append(names, name)
	}
	slices.Sort(names)
	entries := make([]fs.DirEntry, 0, len(names))
	for _, name := range names {
		entries = append(entries, fs.FileInfoToDirEntry(fileInfo{name: name, size: int64(len(d.d[name]))}))
	}
	return entries, nil
}

// fileInfo describes a MemDir entry, dated the Unix epoch.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i fileInfo) ModTime() time.Time { return time.Unix(0, 0).UTC() }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// meteredFS serves a Mount: it passes the mount's files through and charges
// every byte read to the guest's fuel. It counts the files it has open in
// open, so that a snapshot can tell whether _initialize left one open:
// all but the first open of the root, which is the preopened directory
// (wazero opens it on first use and keeps it for the instance's life; a
// fresh instance opens its own).
type meteredFS struct {
	fs       fs.FS
	meter    *fuelMeter
	open     *atomic.Int64
	rootSeen bool
}

// Open implements fs.FS.
func (f *meteredFS) Open(name string) (fs.File, error) {
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	d, isDir := file.(fs.ReadDirFile)
	if isDir && name == "." && !f.rootSeen {
		f.rootSeen = true
		return d, nil
	}
	f.open.Add(1)
	if isDir {
		return &countedDir{ReadDirFile: d, open: f.open}, nil
	}
	return &meteredFile{File: file, meter: f.meter, open: f.open}, nil
}

// countedDir is a directory of a meteredFS.
type countedDir struct {
	fs.ReadDirFile
	open   *atomic.Int64
	closed bool
}

func (d *countedDir) Close() error {
	if !d.closed {
		d.closed = true
		d.open.Add(-1)
	}
	return d.ReadDirFile.Close()
}

// meteredFile is a mounted file. It offers ReadAt and Seek, which wazero
// needs for pread and lseek, when the file underneath has them.
type meteredFile struct {
	fs.File
	meter  *fuelMeter
	open   *atomic.Int64
	closed bool
}

func (f *meteredFile) Close() error {
	if !f.closed {
		f.closed = true
		f.open.Add(-1)
	}
	return f.File.Close()
}

func (f *meteredFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.meter.charge(n)
	return n, err
}

func (f *meteredFile) ReadAt(p []byte, off int64) (int, error) {
	ra, ok := f.File.(io.ReaderAt)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	n, err := ra.ReadAt(p, off)
	f.meter.charge(n)
	return n, err
}

func (f *meteredFile) Seek(off int64, whence int) (int64, error) {
	s, ok := f.File.(io.Seeker)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	return s.Seek(off, whence)
}
