//go:build !race

package guardtest_test

// race reports whether the race detector is on: the tests then check fewer
// runs, as the detector slows everything ten times.
const race = false
