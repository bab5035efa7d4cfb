//go:build !unix

package canonical

import "time"

var start = time.Now()

// cpuTime returns the time elapsed: without getrusage, wall-clock time
// stands for CPU time.
func cpuTime() time.Duration { return time.Since(start) }
