package adjudicate

import (
	"container/list"
	"sync"
)

// Cache holds compiled plans by the canonical hash of their criteria, so
// that the same criteria, however spelled, compile once. It is safe for
// concurrent use and evicts the least recently used plan when full.
type Cache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *Plan, most recent first
	byKey map[string]*list.Element
}

// NewCache returns a cache holding at most max plans (at least 1).
func NewCache(max int) *Cache {
	if max < 1 {
		max = 1
	}
	return &Cache{max: max, order: list.New(), byKey: make(map[string]*list.Element)}
}

// Plan returns the compiled plan of criteria, compiling it on a miss.
//
// # Errors
//
// As Compile. Invalid criteria are not cached.
func (c *Cache) Plan(criteria []byte) (*Plan, error) {
	canonical, hash, err := canonicalize(criteria)
	if err != nil {
		return nil, err
	}
	if p := c.get(hash); p != nil {
		return p, nil
	}
	p, err := compileCanonical(canonical, hash)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[hash]; ok { // compiled meanwhile by another caller
		c.order.MoveToFront(e)
		return e.Value.(*Plan), nil
	}
	c.byKey[hash] = c.order.PushFront(p)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*Plan).hash)
	}
	return p, nil
}

func (c *Cache) get(hash string) *Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[hash]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*Plan)
	}
	return nil
}

// Len returns the number of plans held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
