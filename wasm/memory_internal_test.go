package wasm

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestLimitedMemory_reserve: a memory keeps its bytes as it grows past
// reserveMin, where on Linux it moves once to a mapping of its own and
// then grows in place; it refuses to grow past its limit, and Free gives
// the mapping back.
func TestLimitedMemory_reserve(t *testing.T) {
	t.Parallel()
	const limit = 4 * reserveMin
	m := &limitedMemory{limit: limit}
	b := m.Reallocate(reserveMin / 2)
	b[0], b[len(b)-1] = 1, 2
	if m.reserved != nil {
		t.Fatal("a memory under reserveMin is mapped")
	}

	b = m.Reallocate(2 * reserveMin)
	if b[0] != 1 || b[reserveMin/2-1] != 2 {
		t.Fatal("the memory lost its bytes moving past reserveMin")
	}
	for _, i := range []int{reserveMin / 2, reserveMin, len(b) - 1} {
		if b[i] != 0 {
			t.Fatalf("grown memory at %d is %d, want 0", i, b[i])
		}
	}
	if runtime.GOOS == "linux" && m.reserved == nil {
		t.Fatal("a memory past reserveMin is not mapped on Linux")
	}
	b[len(b)-1] = 3
	at := unsafe.SliceData(b)

	b = m.Reallocate(limit)
	if len(b) != limit || b[0] != 1 || b[2*reserveMin-1] != 3 || b[limit-1] != 0 {
		t.Fatal("the memory lost its bytes growing to its limit")
	}
	if m.reserved != nil && unsafe.SliceData(b) != at {
		t.Error("a mapped memory moved as it grew")
	}
	if m.Reallocate(limit+pageSize) != nil || !m.refused {
		t.Error("the memory grew past its limit")
	}
	m.Free()
	if m.reserved != nil || m.size() != limit {
		t.Errorf("after Free: mapped %v, size %d, want unmapped, %d", m.reserved != nil, m.size(), limit)
	}
}
