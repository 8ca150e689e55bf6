package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedMemory backs one run's linear memory. It refuses to grow past its
// limit, which is how a per-run memory limit is enforced on a runtime shared
// by runs with different limits, and it remembers whether it refused so that
// a run that then fails is reported as memory_exceeded.
type limitedMemory struct {
	limit   uint64 // bytes
	buf     []byte
	refused bool
	freed   int // len(buf) when wazero freed it, as it does when the module closes

	// image, when set, is a snapshot's memory: the memory starts as a
	// copy of it (the host then grows it to the image's size). The copy
	// is either a copy-on-write mapping of limit bytes, mapped, which
	// never moves and which Free unmaps (large images, on Linux), or a
	// buffer from the image's pool, pooled, filled with the image and
	// given back by Free.
	image  *memImage
	mapped []byte
	pooled []byte
	// reserved, without an image, is a mapping of limit bytes outside
	// the Go heap (reserve) that the memory grows in once it is larger
	// than reserveMin; nil before, or where none could be made, and the
	// memory is a heap buffer.
	reserved []byte
}

// reserveMin is the size past which a run's memory, without an image,
// moves to a mapping of its own (reserve) and its new pages are populated
// there. Below it the memory is a Go buffer, from spans the runtime
// reuses: mapping, populating and unmapping it doubled a replay of the
// trivial checker (75 µs more), and a guest faulting in reserveMin of
// fresh pages itself takes 2,048 faults, about 50 ms on the slowest host
// measured. Past it the population is paid whether the guest touches the
// pages or not: the cold run of a reactor with 20 MiB of state that
// touches three of its pages took 31 ms instead of 10.
const reserveMin = 8 << 20

// memImage is the linear memory of a snapshot, shared by its replays.
type memImage struct {
	size int         // bytes
	fd   int         // a memfd holding the bytes, to map; or -1
	data []byte      // the bytes to copy from: a copy, or a read-only view of fd
	pool chan []byte // buffers of size bytes to copy data into, reused

	copying atomic.Bool // replays copy the image rather than map it
	probed  atomic.Bool // a mapped replay has counted the pages it touched
}

// copyOut returns a buffer of the image's size holding the image, with
// zeroed room to grow past it (a quarter of the image, at least two pages,
// at most 16 MiB): a reused one when the pool has one. Reused buffers are
// resident, so a replay pays for one copy of the image and no page faults.
func (img *memImage) copyOut() []byte {
	var b []byte
	select {
	case b = <-img.pool:
	default:
		b = make([]byte, img.size, img.bufCap())
	}
	img.fill(b)
	return b
}

// bufCap is the capacity of a buffer copyOut makes.
func (img *memImage) bufCap() int {
	room := min(max(img.size/4, 2*pageSize), 16<<20)
	return img.size + room
}

// held is the most memory the image keeps while no replay uses it: its
// bytes and the spare buffers of its pool.
func (img *memImage) held() int64 {
	return int64(img.size) + imagePool*int64(img.bufCap())
}

// put gives a buffer from copyOut back to the pool, unless it is full.
// used is how far past the image the run grew into it: that part is zeroed
// first, so that room to grow is zero for the next run, as fresh memory is.
func (img *memImage) put(b []byte, used int) {
	clear(b[img.size:min(used, cap(b))])
	select {
	case img.pool <- b:
	default:
	}
}

// Allocate implements experimental.MemoryAllocator. wazero calls it once per
// instantiated memory.
func (m *limitedMemory) Allocate(_, _ uint64) experimental.LinearMemory { return m }

// Reallocate implements experimental.LinearMemory. Memory beyond len(buf) is
// zero: a fresh backing array is zeroed, and the guest can only write below
// len, so re-slicing within the capacity hands out zeroed pages.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	if m.image != nil && m.buf == nil && m.mapped == nil {
		if m.mapped = m.image.mapPrivate(m.limit); m.mapped == nil {
			// A copy, with zeroed room past it to grow into.
			m.buf = m.image.copyOut()
			m.pooled = m.buf
		}
	}
	if m.image == nil && m.reserved == nil && size > reserveMin {
		// Past reserveMin, the memory moves out of the Go heap: what it
		// held so far is copied once, and it grows in place from then on.
		if r := reserve(m.limit); r != nil {
			copyPreemptible(r, m.buf)
			m.reserved = r
		}
	}
	if mem := m.mapped; mem != nil || m.reserved != nil {
		if mem == nil {
			mem = m.reserved
		}
		old := len(m.buf)
		if m.image != nil {
			old = max(old, m.image.size) // the image's pages are mapped from it
		}
		m.buf = mem[:size]
		if int(size) > old {
			populate(m.buf[old:])
		}
		return m.buf
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		// Grow geometrically, as append does, but never past the limit.
		newCap := max(size, 2*uint64(cap(m.buf)))
		newCap = min(newCap, m.limit)
		buf := make([]byte, size, newCap)
		copyPreemptible(buf, m.buf)
		m.buf = buf
	}
	return m.buf
}

// pageSizeOS is the smallest page a kernel maps.
const pageSizeOS = 4096

// copyChunk is how much copyPreemptible copies in one call of copy.
const copyChunk = 1 << 20

// copyPreemptible is copy(dst, src) in chunks. One copy is one call of
// the runtime's memmove, which the scheduler cannot preempt, and the
// pages of a fresh buffer fault in as it writes them. On Linux a memory
// is copied at most once past reserveMin, into its mapping, and then
// grows in place; elsewhere, or where the mapping fails, a memory of
// hundreds of MiB is copied as it grows, and one copy would hold up a
// garbage collection, and with it every goroutine that allocates, for as
// long as it takes. Between chunks the goroutine can be preempted.
func copyPreemptible(dst, src []byte) {
	for len(src) > 0 && len(dst) > 0 {
		n := copy(dst, src[:min(len(src), copyChunk)])
		dst, src = dst[n:], src[n:]
	}
}

// Free implements experimental.LinearMemory.
func (m *limitedMemory) Free() {
	m.freed = max(m.freed, len(m.buf))
	m.buf = nil
	if m.mapped != nil {
		m.image.probeTouched(m.mapped[:m.image.size])
		unmap(m.mapped)
		m.mapped = nil
	}
	if m.reserved != nil {
		unmap(m.reserved)
		m.reserved = nil
	}
	if m.pooled != nil {
		// wazero is done with it, and with any buffer that replaced it;
		// memory never shrinks, so its peak size bounds what was used.
		m.image.put(m.pooled, m.freed)
		m.pooled = nil
	}
}

// size returns the size of memory in bytes, before it was freed. Memory
// never shrinks, so this is also its peak.
func (m *limitedMemory) size() int { return max(len(m.buf), m.freed) }

// pages returns the size of memory in 64 KiB pages.
func (m *limitedMemory) pages() uint32 { return uint32(m.size() / pageSize) }

// reachedLimit reports whether the guest asked for more than the limit, or
// grew to exactly the limit.
func (m *limitedMemory) reachedLimit() bool {
	return m.refused || uint64(m.size()) >= m.limit
}
