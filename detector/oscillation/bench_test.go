package oscillation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// facts returns n one-call steps with distinct keys.
func facts(n int) []rule.Facts {
	out := make([]rule.Facts, n)
	for i := range out {
		k := canonical.HashString(fmt.Sprint(i))
		out[i].Calls = []rule.Call{{Tool: "search", Key: k, Outcome: k}}
	}
	return out
}

// observeAll observes the steps in turn for as long as the benchmark runs,
// failing on a stop, or on a warning unless warnings are allowed.
func observeAll(b *testing.B, d ruletest.State, steps []rule.Facts, warnings bool) {
	b.Helper()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f := &steps[i%len(steps)]
		f.Index = i
		d.Observe(f)
		if v := d.Verdict(); v.Stop || !warnings && v.Warnings != nil {
			b.Fatalf("step %d: a stop or a warning: %+v", i, v)
		}
	}
}

// BenchmarkObserveNew measures the detector's own work per step when every
// call is new.
func BenchmarkObserveNew(b *testing.B) {
	d := newState(b, oscillation.Options{})
	steps := facts(1024)
	observeAll(b, d, steps, true)
}

// BenchmarkObserveNearCycle measures a run that keeps coming back to the same
// calls without completing three cycles (a b a c a b a c ...).
func BenchmarkObserveNearCycle(b *testing.B) {
	d := newState(b, oscillation.Options{})
	s := facts(3)
	steps := []rule.Facts{s[0], s[1], s[0], s[2]}
	observeAll(b, d, steps, true)
}

// BenchmarkCheck measures a whole guard.Check with only this detector, on
// repeating calls that never complete a cycle.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, oscillation.Options{}, guard.Config{})
	steps := []guard.Step{step(a), step(b0), step(a), step(c)}
	b.ReportAllocs()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkPreflight measures an allowed preflight of two calls.
func BenchmarkPreflight(b *testing.B) {
	g := newGuard(b, oscillation.Options{}, guard.Config{})
	run(b, g, steps(a, b0, a, c))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := g.Preflight(ctx, a, b0); !d.Allow {
			b.Fatal("refused")
		}
	}
}

var b0 = guard.ToolCall{Name: "read", Args: json.RawMessage(`{"path":"/x"}`)}

// BenchmarkObserveWarnResults measures the near-cycle of
// BenchmarkObserveNearCycle with warnings on and results compared: nothing
// warns, nothing is allocated.
func BenchmarkObserveWarnResults(b *testing.B) {
	d := newState(b, oscillation.Options{Warn: true, RequireIdenticalResults: true})
	s := facts(3)
	steps := []rule.Facts{s[0], s[1], s[0], s[2]}
	observeAll(b, d, steps, false)
}

// BenchmarkObserveTour measures the worst case of the long cycles: a tour
// of 6 calls with results, each call matching the one a round before, and
// new input every 11th step, so that the counters of the long periods are
// live on every call and the run never completes two rounds.
func BenchmarkObserveTour(b *testing.B) {
	d := newState(b, oscillation.Options{Warn: true})
	steps := make([]rule.Facts, 66)
	for i := range steps {
		k := canonical.HashString(fmt.Sprint("place ", i%6))
		steps[i].Calls = []rule.Call{{Tool: "go_to", Key: k, Outcome: canonical.HashString(fmt.Sprint("seen ", i%6)), HasResult: true}}
		steps[i].NewInput = i%11 == 0
	}
	observeAll(b, d, steps, true)
}
