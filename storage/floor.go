package storage

import (
	"fmt"
	"os"
	"time"
)

// FloorBlock is the size of the write DiskFloor times: one page.
const FloorBlock = 4 << 10

// DiskFloor measures the disk under dir the way a durable commit meets it:
// n times, one FloorBlock written over the same offset of a scratch file
// and made durable with fdatasync (no metadata changes, so each is one
// trip to the device). It returns each write's latency, in order, and
// removes the file. A transaction acknowledged only after its sync cannot
// be faster than one of these; four sequential ones are the floor of a
// whole court case (create, fund, deliver, decide).
func DiskFloor(dir string, n int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, ".assay-floor-*")
	if err != nil {
		return nil, fmt.Errorf("storage: disk floor: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, FloorBlock)
	for i := range block {
		block[i] = byte(i)
	}
	// Allocate the block first, so that the timed writes overwrite it.
	if _, err := f.WriteAt(block, 0); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, n)
	for i := range n {
		block[0] = byte(i)
		t0 := time.Now()
		if _, err := f.WriteAt(block, 0); err != nil {
			return nil, err
		}
		if err := datasync(f); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}
