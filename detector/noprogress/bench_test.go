package noprogress_test

import (
	"encoding/binary"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/guard"
)

// BenchmarkObserveNew measures the detector's own work per step when every
// step brings a new outcome, so that once the window is full every step
// evicts the oldest one.
func BenchmarkObserveNew(b *testing.B) {
	d, _ := noprogress.New(noprogress.Options{})
	var f guard.Facts
	f.Calls = []guard.Call{{Tool: "fetch"}}
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
	d, _ := noprogress.New(noprogress.Options{Warn: true})
	k := canonical.HashString("same")
	steps := [2]guard.Facts{
		{Calls: []guard.Call{{Tool: "fetch", Outcome: k}}, TextHash: canonical.HashString("a")},
		{Calls: []guard.Call{{Tool: "fetch", Outcome: k}}, TextHash: canonical.HashString("b")},
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
	g := newGuard(b, noprogress.Options{}, guard.Options{})
	steps := make([]guard.Step, 4*noprogress.DefaultWindow)
	for i := range steps {
		steps[i] = distinct(i)
	}
	for _, s := range steps {
		g.Check(s)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if g.Check(steps[i%len(steps)]).Stop {
			b.Fatal("stop")
		}
	}
}
