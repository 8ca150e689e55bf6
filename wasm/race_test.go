//go:build race

package wasm_test

import "testing"

// raceEnabled: the race detector slows the interpreter some twenty times,
// to about ten seconds a fuel slice.
const raceEnabled = true

// skipGoGuestUnderRace skips, in the race detector's -short pass (make
// race), a run of a Go guest: one takes tens of seconds there, the code it
// tests runs concurrently with nothing, and the plain pass runs it.
func skipGoGuestUnderRace(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("a Go guest under the race detector takes tens of seconds; the plain pass runs it")
	}
}
