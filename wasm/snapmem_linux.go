//go:build linux

package wasm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newImage keeps a snapshot's memory for replays. An image of up to
// copyMax bytes is kept as bytes that each replay copies into a pooled
// buffer. A larger one goes in a memfd that replays map copy-on-write
// (MAP_PRIVATE), paying only for the pages they touch; in it, pages that
// are all zero are not written, so the file stays sparse. Page faults cost
// microseconds each, so a replay that touches much of an image is faster
// copying it: with adapt, the first replay that maps the image counts the
// pages it touched (probeTouched), and when they are more than one in
// touchedRatio, later replays copy it instead (from the memfd). When a
// memfd cannot be made, the image is copied.
func newImage(mem []byte, copyMax int, adapt bool) *memImage {
	img := &memImage{size: len(mem), fd: -1, pool: make(chan []byte, imagePool)}
	img.copying.Store(true)
	if len(mem) <= copyMax {
		img.data = bytes.Clone(mem)
		return img
	}
	fd, err := unix.MemfdCreate("assay-snapshot", unix.MFD_CLOEXEC)
	if err != nil {
		img.data = bytes.Clone(mem)
		return img
	}
	if err := writeSparse(fd, mem); err != nil {
		unix.Close(fd)
		img.data = bytes.Clone(mem)
		return img
	}
	img.fd = fd
	img.copying.Store(false)
	img.probed.Store(!adapt)
	// Copies read the memfd through a shared read-only mapping: a memmove
	// from the page cache, no syscall and no second copy of the image.
	if view, err := unix.MmapPtr(fd, 0, nil, uintptr(len(mem)), unix.PROT_READ, unix.MAP_SHARED); err == nil {
		img.data = unsafe.Slice((*byte)(view), len(mem))
	}
	// Mappings made from fd hold the file on their own, so the descriptor
	// can go once no replay can map it any more; the view goes with the
	// image.
	runtime.AddCleanup(img, func(v imageView) {
		unix.Close(v.fd)
		if v.view != nil {
			unix.MunmapPtr(v.view, v.size)
		}
	}, imageView{fd: fd, view: unsafe.Pointer(unsafe.SliceData(img.data)), size: uintptr(len(mem))})
	return img
}

// imageView is what the cleanup of a memfd image releases.
type imageView struct {
	fd   int
	view unsafe.Pointer
	size uintptr
}

// touchedRatio: a replay that touches more than one page of an image in
// touchedRatio makes later replays copy the image rather than map it.
// BenchmarkReplay measured a page fault here at 25-35 times the cost of
// copying a page (goreactor mapped and copied, big-reactor copied).
const touchedRatio = 24

// probeTouched, given a replay's mapping of the image before it is
// unmapped, decides once whether replays map or copy the image.
func (img *memImage) probeTouched(mapped []byte) {
	if !img.probed.CompareAndSwap(false, true) {
		return
	}
	touched, ok := residentPages(mapped)
	if ok && touched*touchedRatio > (len(mapped)+pageSizeOS-1)/pageSizeOS {
		img.copying.Store(true)
	}
}

var pagemap struct {
	once sync.Once
	fd   int
	err  error
}

// residentPages counts the pages of b that are mapped in, from
// /proc/self/pagemap (bit 63 of each page's entry: present).
func residentPages(b []byte) (int, bool) {
	pagemap.once.Do(func() { pagemap.fd, pagemap.err = unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if pagemap.err != nil || len(b) == 0 {
		return 0, false
	}
	first := uintptr(unsafe.Pointer(unsafe.SliceData(b))) / pageSizeOS
	pages := (len(b) + pageSizeOS - 1) / pageSizeOS
	buf := make([]byte, 8*min(pages, 4096))
	n := 0
	for done := 0; done < pages; {
		k := min(pages-done, len(buf)/8)
		got, err := unix.Pread(pagemap.fd, buf[:8*k], int64(first+uintptr(done))*8)
		if err != nil || got != 8*k {
			return 0, false
		}
		for i := range k {
			if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
				n++
			}
		}
		done += k
	}
	return n, true
}

// writeSparse sizes the file to mem and writes its non-zero pages.
func writeSparse(fd int, mem []byte) error {
	if err := unix.Ftruncate(fd, int64(len(mem))); err != nil {
		return err
	}
	const page = 4096
	for off := 0; off < len(mem); {
		end := min(off+page, len(mem))
		if allZero(mem[off:end]) {
			off = end
			continue
		}
		// Extend the run over following non-zero pages: one write for each.
		for end < len(mem) && !allZero(mem[end:min(end+page, len(mem))]) {
			end = min(end+page, len(mem))
		}
		for p := off; p < end; {
			n, err := unix.Pwrite(fd, mem[p:end], int64(p))
			if err != nil {
				return err
			}
			p += n
		}
		off = end
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if *(*uint64)(unsafe.Pointer(&b[0])) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// mapPrivate returns a private, writable mapping of limit bytes whose start
// is the image, copy-on-write, and whose rest is anonymous zero memory
// reserved without commitment; nil when the image has no memfd or the
// mapping fails.
func (img *memImage) mapPrivate(limit uint64) []byte {
	if img.fd < 0 || img.copying.Load() || limit == 0 || limit < uint64(img.size) {
		return nil
	}
	region, err := unix.MmapPtr(-1, 0, nil, uintptr(limit), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	if img.size > 0 {
		_, err = unix.MmapPtr(img.fd, 0, region, uintptr(img.size), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_FIXED)
		runtime.KeepAlive(img) // the descriptor stays open until the mapping is made
		if err != nil {
			unix.MunmapPtr(region, uintptr(limit))
			return nil
		}
	}
	return unsafe.Slice((*byte)(region), limit)
}

// reserve maps limit bytes of fresh memory for a run's linear memory,
// outside the Go heap: growing it moves nothing, the collector neither
// counts nor paces on it, and unmap gives it back at once. nil when it
// cannot be mapped.
func reserve(limit uint64) []byte {
	if limit == 0 {
		return nil
	}
	region, err := unix.MmapPtr(-1, 0, nil, uintptr(limit), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return unsafe.Slice((*byte)(region), limit)
}

// populate backs the pages of b, part of a mapping from reserve or
// mapPrivate past its image, in one system call (MADV_POPULATE_WRITE),
// so that the guest, whose compiled code the scheduler cannot preempt,
// does not take the page faults itself: a guest that wrote fresh memory
// faulted every few thousand fuel, hundreds of milliseconds a slice on a
// virtual machine whose faults are slow, through which a garbage
// collection waited, and with it every goroutine that allocated. A
// goroutine in a system call holds up no collection. A kernel without
// MADV_POPULATE_WRITE (before 5.14) leaves the faults to the guest.
func populate(b []byte) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	off := int(uintptr(p) & (pageSizeOS - 1)) // madvise takes whole pages
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -off)), len(b)+off), unix.MADV_POPULATE_WRITE)
}

// unmap releases a mapping made by mapPrivate or reserve.
func unmap(b []byte) {
	unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// fill copies the image into buf, which is img.size bytes long.
func (img *memImage) fill(buf []byte) {
	if img.data != nil {
		copy(buf, img.data)
		runtime.KeepAlive(img) // the view stays mapped until the copy is done
		return
	}
	for p := 0; p < len(buf); {
		n, err := unix.Pread(img.fd, buf[p:], int64(p))
		if err != nil || n == 0 {
			panic(fmt.Sprintf("wasm: reading a snapshot's memory: %v", err))
		}
		p += n
	}
	runtime.KeepAlive(img)
}
