//go:build linux

package wasm

import (
	"bytes"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newImage keeps a snapshot's memory in a memfd, so that each replay maps
// it copy-on-write (MAP_PRIVATE) and pays only for the pages it touches.
// Pages that are all zero are not written, so the file stays sparse. When
// a memfd cannot be made, the image is kept as a plain copy.
func newImage(mem []byte) *memImage {
	img := &memImage{size: len(mem), fd: -1}
	if len(mem) == 0 {
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
	// Mappings made from fd hold the file on their own, so the descriptor
	// can go once no replay can map it any more.
	runtime.AddCleanup(img, func(fd int) { unix.Close(fd) }, fd)
	return img
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
	if img.fd < 0 || limit == 0 || limit < uint64(img.size) {
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

// unmap releases a mapping made by mapPrivate.
func unmap(b []byte) {
	unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// fill copies the image into buf, which is img.size bytes long.
func (img *memImage) fill(buf []byte) {
	if img.fd < 0 {
		copy(buf, img.data)
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
