//go:build !race

package input_test

// raceEnabled reports whether the tests run with the race detector, which
// makes the conformance kit slow: it then checks fewer runs.
const raceEnabled = false
