package wasm

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/assayhq/assay/wasm/internal/meter"
)

// DefaultMemoryShare is the share of the machine's memory a Sandbox's
// memory budget defaults to (Config.MemoryBudgetMiB 0): half.
const DefaultMemoryShare = 2

// memBudget admits runs while the sum of their memory limits fits. A run
// holds its limit from before its instance is made until it is closed,
// whatever it actually touches, so the budget bounds what runs can take
// even if every guest grows to its limit at once.
type memBudget struct {
	total int64 // bytes runs may hold at once
	sem   *semaphore.Weighted
}

func newMemBudget(total int64) *memBudget {
	return &memBudget{total: total, sem: semaphore.NewWeighted(total)}
}

// admit waits until n bytes fit, or ctx ends (ctx's error). A request that
// could never fit is refused at once with errOverBudget. The caller calls
// release when its instance is closed.
func (b *memBudget) admit(ctx context.Context, n int64) (release func(), err error) {
	if n > b.total {
		return nil, errOverBudget
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { b.sem.Release(n) }) }, nil
}

// errOverBudget: a run whose limits exceed the whole budget.
var errOverBudget = fmt.Errorf("wasm: over the memory budget")

// budgetBytes resolves Config.MemoryBudgetMiB: 0 is 1/DefaultMemoryShare
// of the machine's memory (8 GiB when it cannot be read).
func budgetBytes(mib int) int64 {
	if mib > 0 {
		return int64(mib) << 20
	}
	if total := machineMemory(); total > 0 {
		return total / DefaultMemoryShare
	}
	return 8 << 30
}

// runBytes is what a run of these limits holds against the budget: its
// linear memory and the most its tables may take.
func runBytes(memoryMiB uint32) int64 {
	return int64(memoryMiB)<<20 + tableBytes
}

// tableBytes bounds a run's tables: the meter caps each table at
// meter.MaxTableSize elements, initial size and growth alike, and a
// module at meter.MaxTables tables; wazero keeps an element in a word.
const tableBytes = meter.MaxTables * meter.MaxTableSize * 8

// freeOS returns memory to the operating system after a run whose memory
// was large, at most once per interval: a large run's pages would
// otherwise stay with the process (Go gives idle heap back slowly), and
// FreeOSMemory, a full collection, is too costly to run after every one.
type freeOS struct {
	interval time.Duration
	mu       sync.Mutex
	last     time.Time
	pending  bool
}

// freeAfterBytes is the peak memory from which a run is large.
const freeAfterBytes = 256 << 20

// request schedules a FreeOSMemory, now or at the end of the interval
// since the last one; one at a time.
func (f *freeOS) request() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending {
		return
	}
	f.pending = true
	wait := max(0, f.interval-time.Since(f.last))
	time.AfterFunc(wait, func() {
		debug.FreeOSMemory()
		f.mu.Lock()
		f.last, f.pending = time.Now(), false
		f.mu.Unlock()
	})
}
