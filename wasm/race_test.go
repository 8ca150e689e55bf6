//go:build race

package wasm_test

// raceEnabled: the race detector slows the interpreter some twenty times,
// to about ten seconds a fuel slice.
const raceEnabled = true
