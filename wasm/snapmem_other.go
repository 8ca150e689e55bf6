//go:build !linux

package wasm

import "bytes"

// newImage keeps a snapshot's memory as bytes that each replay copies
// into a pooled buffer.
func newImage(mem []byte, _ int, _ bool) *memImage {
	img := &memImage{size: len(mem), fd: -1, data: bytes.Clone(mem), pool: make(chan []byte, imagePool)}
	img.copying.Store(true)
	return img
}

func (img *memImage) probeTouched([]byte) {}

// mapPrivate is Linux only; elsewhere replays copy the image.
func (img *memImage) mapPrivate(uint64) []byte { return nil }

func unmap([]byte) {}

// reserve is Linux only; elsewhere linear memory is on the Go heap.
func reserve(uint64) []byte { return nil }

func populate([]byte) {}

// fill copies the image into buf, which is img.size bytes long.
func (img *memImage) fill(buf []byte) { copy(buf, img.data) }
