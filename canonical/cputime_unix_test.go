//go:build unix

package canonical

import (
	"syscall"
	"time"
)

// cpuTime returns the user and system CPU time of the process.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
