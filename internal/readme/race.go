//go:build race

package readme

// raceEnabled says that the test runs under the race detector: the blocks
// are built with -race too, so that their build reuses the packages the
// module's own tests compiled.
const raceEnabled = true
