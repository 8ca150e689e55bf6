//go:build !race

package wasm_test

import "testing"

const raceEnabled = false

// skipGoGuestUnderRace skips nothing without the race detector.
func skipGoGuestUnderRace(testing.TB) {}
