package benchcpu_test

import (
	"runtime"
	"testing"

	"github.com/loopguard/loopguard/internal/benchcpu"
)

// The metric is reported, and a busy loop takes some CPU time.
func TestReportsCPUTime(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		cpu := benchcpu.Start(b)
		x := 0
		for b.Loop() {
			for i := range 10_000 {
				x += i
			}
		}
		cpu.Stop()
		_ = x
	})
	got, ok := r.Extra["cpu-ns/op"]
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no cpu-ns/op metric on Linux")
		}
		t.Skip("no CPU time on this system")
	}
	if got <= 0 {
		t.Errorf("cpu-ns/op = %v, want more than 0", got)
	}
}

// The reference work takes some CPU time, and a loop that does the same work
// is about one reference long.
func TestReference(t *testing.T) {
	if benchcpu.Reference() <= 0 {
		if runtime.GOOS == "linux" {
			t.Fatal("no reference time on Linux")
		}
		t.Skip("no CPU time on this system")
	}
}
