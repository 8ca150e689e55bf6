//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time this process has used, user and system.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
