package stall_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// BenchmarkObserveNew measures the detector's own work per step when every
// step brings a new outcome, so that once the window is full every step
// evicts the oldest one.
func BenchmarkObserveNew(b *testing.B) {
	d, _ := stall.New(stall.Options{Warn: true})
	st := d.NewState()
	var f rule.Facts
	f.Calls = []rule.Call{{Tool: "fetch"}}
	var buf [8]byte
	next := func(i int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		f.Index, f.Calls[0].Outcome = i, canonical.HashBytes(buf[:])
	}
	for i := range 2 * stall.DefaultWindow { // fill the window: the steady state
		next(i)
		st.Observe(&f)
	}
	b.ReportAllocs()
	for i := 2 * stall.DefaultWindow; b.Loop(); i++ {
		next(i)
		st.Observe(&f)
		if v := st.Verdict(); v.Stop || v.Warnings != nil {
			b.Fatal("stop")
		}
	}
}

// BenchmarkObserveStalled measures stalled steps, with warnings on: a new
// outcome every few steps keeps the count below the warning.
func BenchmarkObserveStalled(b *testing.B) {
	d, _ := stall.New(stall.Options{Warn: true})
	st := d.NewState()
	k := canonical.HashString("same")
	steps := [2]rule.Facts{
		{Calls: []rule.Call{{Tool: "fetch", Outcome: k}}},
		{NewInput: true},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		st.Observe(&steps[i%3/2])
		if v := st.Verdict(); v.Stop || v.Warnings != nil {
			b.Fatal("stop")
		}
	}
}

// BenchmarkCheck measures a whole Guard.Check with only this detector, every
// step bringing a new outcome.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, stall.Options{Warn: true}, guard.Config{})
	steps := make([]guard.Step, 4*stall.DefaultWindow)
	for i := range steps {
		steps[i] = distinct(i)
	}
	for _, s := range steps {
		ruletest.Check(b, g, s)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}
