package noprogress_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// BenchmarkObserveNew measures the detector's own work per step when every
// step brings a new outcome, so that once the window is full every step
// evicts the oldest one.
func BenchmarkObserveNew(b *testing.B) {
	d := newState(b, noprogress.Options{})
	var f rule.Facts
	f.Calls = []rule.Call{{Tool: "fetch"}}
	var buf [8]byte
	next := func(i int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		f.Index, f.Calls[0].Outcome = i, canonical.HashBytes(buf[:])
	}
	for i := range 2 * noprogress.DefaultWindow { // fill the window: the steady state
		next(i)
		d.Observe(&f)
	}
	b.ReportAllocs()
	for i := 2 * noprogress.DefaultWindow; b.Loop(); i++ {
		next(i)
		d.Observe(&f)
		if d.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkObserveStalled measures steps that bring nothing new and change
// their text, so that the count keeps starting again, with warnings on.
func BenchmarkObserveStalled(b *testing.B) {
	d := newState(b, noprogress.Options{Warn: true})
	k := canonical.HashString("same")
	steps := [2]rule.Facts{
		{Calls: []rule.Call{{Tool: "fetch", Outcome: k}}, TextHash: canonical.HashString("a")},
		{Calls: []rule.Call{{Tool: "fetch", Outcome: k}}, TextHash: canonical.HashString("b")},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Observe(&steps[i&1])
		if v := d.Verdict(); v.Stop || v.Warnings != nil {
			b.Fatal("stop")
		}
	}
}

// BenchmarkCheck measures a whole guard.Check with only this detector, every
// step bringing a new outcome.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, noprogress.Options{}, guard.Config{})
	steps := make([]guard.Step, 4*noprogress.DefaultWindow)
	for i := range steps {
		steps[i] = distinct(i)
	}
	ctx := context.Background()
	for _, s := range steps {
		if _, err := g.Check(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}
