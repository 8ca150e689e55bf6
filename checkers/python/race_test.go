//go:build race

package python_test

// raceEnabled: the race detector slows wazero's interpreter engine so much
// that python.wasm takes minutes to start on it.
const raceEnabled = true
