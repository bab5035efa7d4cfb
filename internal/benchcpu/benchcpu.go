// Package benchcpu reports, beside the wall-clock time that package testing
// measures, the CPU time a benchmark's loop takes: "cpu-ns/op". On a machine
// that other processes share, the wall clock also counts the time they hold
// the cores, and varies with them; the CPU time of the process does not,
// much. The benchmarks of BENCHMARKS.md report both.
package benchcpu

import (
	"testing"
	"time"
)

// A Timer measures the CPU time of the process between Start and Stop.
type Timer struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

// Start starts measuring. Call it after the benchmark's setup, just before
// its loop (for b.Loop() { ... }), and Stop just after the loop.
func Start(b *testing.B) *Timer {
	t := &Timer{b: b}
	t.start, t.ok = cpuTime()
	return t
}

// Stop reports the CPU time per iteration since Start as the metric
// "cpu-ns/op". It reports nothing where the CPU time cannot be read.
func (t *Timer) Stop() {
	end, ok := cpuTime()
	if !t.ok || !ok || t.b.N <= 0 {
		return
	}
	t.b.ReportMetric(float64(end-t.start)/float64(t.b.N), "cpu-ns/op")
}
