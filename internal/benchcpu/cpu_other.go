//go:build !unix

package benchcpu

import "time"

// cpuTime cannot read the CPU time here.
func cpuTime() (time.Duration, bool) { return 0, false }
