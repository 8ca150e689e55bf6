//go:build !race

package python_test

const raceEnabled = false
