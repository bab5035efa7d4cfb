//go:build unix

package benchcpu

import (
	"syscall"
	"time"
)

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
