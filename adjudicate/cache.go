package adjudicate

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// maxSpellings bounds how many spellings of one plan's criteria the cache
// remembers; a spelling beyond them is canonicalised on every lookup and
// still finds the plan by its canonical hash.
const maxSpellings = 4

// MaxCacheBytes bounds the memory a Cache's plans hold, as Plan.size
// estimates it: the largest criteria compile to about 10 MiB.
const MaxCacheBytes = 256 << 20

// Cache holds compiled plans by the canonical hash of their criteria, so
// that the same criteria, however spelled, compile once. A spelling seen
// before is found by the SHA-256 of its bytes, without canonicalising it
// again: the court looks its plans up by the creator's spelling and then by
// the stored canonical form. It is safe for concurrent use and evicts the
// least recently used plans when it holds more than its count of them or
// more than MaxCacheBytes.
type Cache struct {
	mu         sync.Mutex
	max        int
	maxBytes   int64
	bytes      int64                    // the plans' sizes, summed
	order      *list.List               // of *cached, most recent first
	byKey      map[string]*list.Element // by canonical hash
	bySpelling map[[sha256.Size]byte]*list.Element
}

type cached struct {
	plan      *Plan
	spellings [][sha256.Size]byte
}

// NewCache returns a cache holding at most max plans (at least 1).
func NewCache(max int) *Cache {
	if max < 1 {
		max = 1
	}
	return &Cache{max: max, maxBytes: MaxCacheBytes, order: list.New(), byKey: make(map[string]*list.Element),
		bySpelling: make(map[[sha256.Size]byte]*list.Element)}
}

// Plan returns the compiled plan of criteria, compiling it on a miss.
//
// # Errors
//
// As Compile. Invalid criteria are not cached.
func (c *Cache) Plan(criteria []byte) (*Plan, error) {
	spelling := sha256.Sum256(criteria)
	if p := get(c, c.bySpelling, spelling); p != nil {
		return p, nil
	}
	canonical, hash, err := canonicalize(criteria)
	if err != nil {
		return nil, err
	}
	p := get(c, c.byKey, hash)
	if p == nil {
		if p, err = compileCanonical(canonical, hash); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[hash] // present when found above or compiled meanwhile by another caller
	if !ok {
		e = c.order.PushFront(&cached{plan: p})
		c.byKey[hash] = e
		c.bytes += p.size()
	}
	c.order.MoveToFront(e)
	if ent := e.Value.(*cached); len(ent.spellings) < maxSpellings {
		if _, ok := c.bySpelling[spelling]; !ok {
			ent.spellings = append(ent.spellings, spelling)
			c.bySpelling[spelling] = e
		}
	}
	for c.order.Len() > c.max || (c.bytes > c.maxBytes && c.order.Len() > 1) {
		last := c.order.Back()
		ent := c.order.Remove(last).(*cached)
		c.bytes -= ent.plan.size()
		delete(c.byKey, ent.plan.hash)
		for _, s := range ent.spellings {
			delete(c.bySpelling, s)
		}
	}
	return e.Value.(*cached).plan, nil
}

// get returns the plan at k in index, marking it the most recently used;
// nil when there is none.
func get[K comparable](c *Cache, index map[K]*list.Element, k K) *Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := index[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cached).plan
	}
	return nil
}

// Len returns the number of plans held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
