package checkers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/assayhq/assay/checkers/python"
	"github.com/assayhq/assay/wasm"
)

// MemoKey names one memoised outcome: the SHA-256 of a canonical encoding
// of everything that decides a run's outcome (see Key).
type MemoKey [32]byte

// String returns k as lowercase hex.
func (k MemoKey) String() string { return hex.EncodeToString(k[:]) }

// memoKeyVersion starts every encoding that Key hashes. Bump it when the
// encoding, or what an outcome holds, changes.
const memoKeyVersion = "assay memo v2"

// Key returns the memo key of running the checker ref names against in,
// on a sandbox of the given engine (wasm.Sandbox.Engine). It hashes, in
// this order, each field length-prefixed:
//
//   - the version tag "assay memo v2";
//   - the checker's SHA-256 and kind ("" is wasm);
//   - for python, the Python runtime's SHA-256 (python.RuntimeSHA256:
//     interpreter, harness and standard library) and the
//     artifact type ("" is python.DefaultType); for wasm, two empty fields;
//   - the SHA-256 of the artifact; of the evidence and of the criteria,
//     each after a presence byte, so that absent and empty differ;
//   - the limits that shape an outcome, with defaults filled in: fuel,
//     memory MiB, stdout and stderr caps. Not the wall-clock backstop: a
//     run it stops is a timeout, which is never memoised;
//   - wasm.OutcomeVersion (the fuel meter, the reactor rewrite, the
//     limits of a reactor's start-up) and the engine.
//
// ok is false when in cannot be memoised: a wasm checker given Args or
// Mounts, whose file systems have no hash.
func Key(ref Ref, in wasm.Input, engine string) (key MemoKey, ok bool) {
	kind := ref.Kind
	if kind == "" {
		kind = KindWasm
	}
	var interp, typ string
	if kind == KindPython {
		// python.Input replaces Args and Mounts with the interpreter's.
		interp, typ = python.RuntimeSHA256(), ref.ArtifactType
		if typ == "" {
			typ = python.DefaultType
		}
	} else if len(in.Args) > 0 || len(in.Mounts) > 0 {
		return MemoKey{}, false
	}
	lim := ref.Limits()
	// One buffer on the stack, hashed once.
	var arr [512]byte
	b := appendStr(arr[:0], memoKeyVersion)
	b = appendStr(b, ref.SHA256)
	b = appendStr(b, kind)
	b = appendStr(b, interp)
	b = appendStr(b, typ)
	b = appendSum(b, in.Artifact, true)
	b = appendSum(b, in.Evidence, in.Evidence != nil)
	b = appendSum(b, in.Criteria, in.Criteria != nil)
	b = binary.AppendUvarint(b, lim.Fuel)
	b = binary.AppendUvarint(b, uint64(lim.MemoryMiB))
	b = binary.AppendUvarint(b, uint64(lim.StdoutBytes))
	b = binary.AppendUvarint(b, uint64(lim.StderrBytes))
	b = appendStr(b, wasm.OutcomeVersion)
	b = appendStr(b, engine)
	return sha256.Sum256(b), true
}

// appendStr appends s, prefixed by its length.
func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendSum appends a presence byte and, when present, the SHA-256 of v.
func appendSum(b, v []byte, present bool) []byte {
	if !present {
		return append(b, 0)
	}
	s := sha256.Sum256(v)
	return append(append(b, 1), s[:]...)
}

// MemoStore keeps memoised outcomes beyond the process, so that a memo
// survives a restart. runtime/replays implements it on the services' store.
type MemoStore interface {
	// Get returns the outcome stored under key (as Memo.Put gave it: the
	// outcome's JSON), and whether there is one.
	//
	// # Errors
	//
	// Only a failure of the store; a missing key is (nil, false, nil).
	Get(key MemoKey) ([]byte, bool, error)
	// Put stores an outcome's JSON under key. The same key always gets the
	// same bytes, apart from wall_ns, so a Put may overwrite.
	//
	// # Errors
	//
	// A failure of the store; the memo then keeps the outcome in memory
	// only.
	Put(key MemoKey, outcome []byte) error
}

// Defaults for MemoConfig.
const (
	DefaultMemoEntries       = 100_000
	DefaultMemoBytes   int64 = 256 << 20
)

// MemoConfig configures a Memo.
type MemoConfig struct {
	// MaxEntries bounds the outcomes kept in memory; DefaultMemoEntries
	// when 0.
	MaxEntries int
	// MaxBytes bounds their approximate size in memory (outputs, detail,
	// hashes and the struct); DefaultMemoBytes when 0.
	MaxBytes int64
	// Store, when set, keeps every outcome put also there, and is asked on
	// a miss in memory.
	Store MemoStore
}

// Memo remembers the outcomes of deterministic runs by their Key, and
// answers them again without running. It holds the least recently used
// outcomes in memory within its bounds, and all of them in its MemoStore
// when it has one. It is safe for concurrent use.
//
// # Notes
//
//   - Only outcomes that decide a case are kept: never a timeout (not
//     reproducible) or an invalid_checker (the checker is refused anyway,
//     and a failure of the host can cause one).
//   - A hit is the original run's outcome, including its wall_ns: the wall
//     time of the run that computed it, not of the lookup. Every other field
//     is what a fresh run gives, so the JSON of a hit and of a fresh run are
//     equal apart from wall_ns.
type Memo struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[MemoKey, wasm.Outcome]
	bytes int64
	max   int64
	store MemoStore

	hits, misses, storeHits, storeErrors atomic.Int64
}

// NewMemo returns an empty Memo.
func NewMemo(cfg MemoConfig) *Memo {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMemoEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMemoBytes
	}
	m := &Memo{max: cfg.MaxBytes, store: cfg.Store}
	lru, err := simplelru.NewLRU(cfg.MaxEntries, func(_ MemoKey, o wasm.Outcome) { m.bytes -= outcomeSize(o) })
	if err != nil {
		panic("checkers: " + err.Error()) // only for a size <= 0, ruled out above
	}
	m.lru = lru
	return m
}

// memoizable reports whether an outcome may be memoised.
func memoizable(o wasm.Outcome) bool { return o.Kind.Decides() }

// outcomeSize approximates the memory an outcome holds in the memo.
func outcomeSize(o wasm.Outcome) int64 {
	const fixed = 256 // the struct, the list element, the map entry
	return fixed + int64(len(o.Kind)+len(o.Stdout)+len(o.Stderr)+len(o.StdoutSHA256)+len(o.StderrSHA256)+
		len(o.CheckerSHA256)+len(o.InputSHA256)+len(o.Detail))
}

// Get returns the outcome memoised under key: from memory, or else from
// the store, which then puts it back in memory. A store that fails or
// holds bytes that are not a memoisable outcome is a miss.
func (m *Memo) Get(key MemoKey) (wasm.Outcome, bool) {
	m.mu.Lock()
	o, ok := m.lru.Get(key)
	m.mu.Unlock()
	if ok {
		m.hits.Add(1)
		return o, true
	}
	if m.store != nil {
		b, found, err := m.store.Get(key)
		if err != nil {
			m.storeErrors.Add(1)
		}
		if found && err == nil && json.Unmarshal(b, &o) == nil && memoizable(o) {
			m.add(key, o)
			m.hits.Add(1)
			m.storeHits.Add(1)
			return o, true
		}
	}
	m.misses.Add(1)
	return wasm.Outcome{}, false
}

// Put memoises o under key, in memory and in the store. An outcome that
// may not be memoised (a timeout, an invalid checker) is ignored.
func (m *Memo) Put(key MemoKey, o wasm.Outcome) {
	if !memoizable(o) {
		return
	}
	m.add(key, o)
	if m.store != nil {
		b, err := json.Marshal(o)
		if err == nil {
			err = m.store.Put(key, b)
		}
		if err != nil {
			m.storeErrors.Add(1)
		}
	}
}

// add puts o in memory, evicting the least recently used outcomes until
// both bounds hold. An outcome larger than MaxBytes by itself is not kept.
func (m *Memo) add(key MemoKey, o wasm.Outcome) {
	size := outcomeSize(o)
	if size > m.max {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.lru.Peek(key); ok {
		m.bytes -= outcomeSize(old)
	}
	m.lru.Add(key, o)
	m.bytes += size
	for m.bytes > m.max {
		if _, _, ok := m.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// MemoStats counts a Memo's lookups.
type MemoStats struct {
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	// StoreHits are the hits answered by the MemoStore; StoreErrors the
	// store's failures, each of which left the memo in memory only.
	StoreHits   int64 `json:"store_hits"`
	StoreErrors int64 `json:"store_errors"`
}

// Stats returns the counts so far.
func (m *Memo) Stats() MemoStats {
	m.mu.Lock()
	n, b := m.lru.Len(), m.bytes
	m.mu.Unlock()
	return MemoStats{Entries: n, Bytes: b, Hits: m.hits.Load(), Misses: m.misses.Load(),
		StoreHits: m.storeHits.Load(), StoreErrors: m.storeErrors.Load()}
}
