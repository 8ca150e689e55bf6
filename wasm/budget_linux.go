//go:build linux

package wasm

import "syscall"

// machineMemory returns the machine's total memory in bytes, or 0 when it
// cannot tell.
func machineMemory() int64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
}
