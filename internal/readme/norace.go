//go:build !race

package readme

// raceEnabled says that the test runs under the race detector.
const raceEnabled = false
