// Package benchcpu reports, beside the wall-clock time that package testing
// measures, the CPU time a benchmark's loop takes ("cpu-ns/op") and that CPU
// time as a multiple of a fixed piece of work of the standard library
// measured just before and just after the loop ("cpu/ref"). On a machine that
// other processes share, the wall clock also counts the time they hold the
// cores, and varies with them; the CPU time varies much less, and its
// multiple of work measured at the same moment less still. The benchmarks
// of BENCHMARKS.md report all three.
package benchcpu

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"
)

// A Timer measures the CPU time of the process between Start and Stop.
type Timer struct {
	b      *testing.B
	start  time.Duration
	before float64 // the reference's CPU time before the loop
	ok     bool
}

// Start starts measuring. Call it after the benchmark's setup, just before
// its loop (for b.Loop() { ... }), and Stop just after the loop. It measures
// the reference work, then collects the garbage of the setup, so that the
// loop does not pay for it: package testing collects
// garbage before the benchmark function, not after its setup, and a large
// setup would otherwise leave a collection to the loop or not, depending on
// how long it runs.
func Start(b *testing.B) *Timer {
	t := &Timer{b: b}
	t.before = Reference()
	runtime.GC()
	t.start, t.ok = cpuTime()
	return t
}

// Stop reports the CPU time per iteration since Start as the metric
// "cpu-ns/op", and its multiple of the reference work, measured before and
// after the loop, as "cpu/ref". It reports nothing where the CPU time cannot
// be read.
func (t *Timer) Stop() {
	end, ok := cpuTime()
	if !t.ok || !ok || t.b.N <= 0 {
		return
	}
	perOp := float64(end-t.start) / float64(t.b.N)
	t.b.ReportMetric(perOp, "cpu-ns/op")
	if ref := (t.before + Reference()) / 2; ref > 0 {
		t.b.ReportMetric(perOp/ref, "cpu/ref")
	}
}

// refDoc is the input of the reference work: a step of an agent's run, as
// JSON, of about 600 bytes.
var refDoc = []byte(`{"text":"Let me search the documentation for the loop guard options.","toolCalls":[{"name":"search","args":{"query":"site:docs.example.com loop guard 00000001","max_results":10,"lang":"en","safe":true,"filters":{"after":"2026-01-01","type":"html"}},"result":{"hits":[{"title":"Result 00000001","url":"https://docs.example.com/a/00000001"}],"total":1,"took_ms":12,"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}],"finishReason":"tool-calls","usage":{"inputTokens":1200,"outputTokens":40}}`)

// refRounds is how many times Reference reads refDoc: about 10 ms.
const refRounds = 5000

// Reference returns the CPU time, in nanoseconds, of one json.Valid of
// refDoc, measured over refRounds of them: work of the standard library
// only, which our code's changes do not change, and which allocates nothing,
// so that no garbage collection of the benchmark's heap falls into it. It
// returns 0 where the CPU time cannot be read.
func Reference() float64 {
	start, ok := cpuTime()
	if !ok {
		return 0
	}
	for range refRounds {
		if !json.Valid(refDoc) {
			panic("benchcpu: refDoc is not valid JSON")
		}
	}
	end, _ := cpuTime()
	return float64(end-start) / refRounds
}
