package repeat_test

import (
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
)

// BenchmarkObserve measures the detector's own work per step in a run that
// never stops: two calls that take turns, so every call breaks the run; with
// warnings on, none of which applies.
func BenchmarkObserve(b *testing.B) {
	d, err := repeat.New(repeat.Options{Warn: true, Tools: map[string]repeat.ToolPolicy{"poll": {Polling: true}}})
	if err != nil {
		b.Fatal(err)
	}
	ka, kb := canonical.HashString("a"), canonical.HashString("b")
	steps := [2]guard.Facts{
		{Calls: []guard.Call{{Tool: "search", Key: ka, Outcome: ka}}},
		{Calls: []guard.Call{{Tool: "search", Key: kb, Outcome: kb}}},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f := &steps[i&1]
		f.Index = i
		d.Observe(f)
		if d.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkCheck measures a whole guard.Check with only this detector.
func BenchmarkCheck(b *testing.B) {
	d, _ := repeat.New(repeat.Options{})
	g, _ := guard.New(d)
	steps := [2]guard.Step{step(a), step(bCall)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if g.Check(steps[i&1]).Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkPreflight measures a refusal-free preflight of one call.
func BenchmarkPreflight(b *testing.B) {
	d, _ := repeat.New(repeat.Options{})
	g, _ := guard.New(d)
	g.Check(step(a))
	g.Check(step(a))
	b.ReportAllocs()
	for b.Loop() {
		if !g.Preflight(bCall).Allow {
			b.Fatal("refused")
		}
	}
}

var bCall = b
