//go:build !unix

package main

import "time"

// processCPUTime is zero where the system does not report it here: the
// load generator's CPU a case is then left out.
func processCPUTime() time.Duration { return 0 }
