//go:build !linux

package storage

import "os"

// datasync falls back to a full fsync where fdatasync is not at hand.
func datasync(f *os.File) error { return f.Sync() }
