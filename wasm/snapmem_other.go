//go:build !linux

package wasm

import "bytes"

// newImage keeps a snapshot's memory as a plain copy: each replay copies it.
func newImage(mem []byte) *memImage {
	return &memImage{size: len(mem), fd: -1, data: bytes.Clone(mem)}
}

// mapPrivate is Linux only; elsewhere replays copy the image.
func (img *memImage) mapPrivate(uint64) []byte { return nil }

func unmap([]byte) {}

// fill copies the image into buf, which is img.size bytes long.
func (img *memImage) fill(buf []byte) { copy(buf, img.data) }
