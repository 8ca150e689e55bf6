package storage

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2): the file's data, not its times, which is what
// badger's msync of the active log amounts to on Linux.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
