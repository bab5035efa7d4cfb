//go:build !race

package main

// raceEnabled is set when the tests run with the race detector, which
// takes several times the memory.
const raceEnabled = false
