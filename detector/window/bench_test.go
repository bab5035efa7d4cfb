package window_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
)

// benchObserve measures the detector's own work per step, with warnings
// on, in the steady state: the window is full, every step makes a call
// that is already in it once or twice, so nothing stops and nothing warns.
func benchObserve(b *testing.B, o window.Options) {
	d := newDetector(b, o)
	keys := make([]canonical.Sum, o.Window/2)
	var buf [8]byte
	for i := range keys {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		keys[i] = canonical.HashBytes(buf[:])
	}
	var f guard.Facts
	f.Calls = []guard.Call{{Tool: "search"}}
	for i := range 2 * o.Window {
		f.Index, f.Calls[0].Key = i, keys[i%len(keys)]
		d.Observe(&f)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.Index, f.Calls[0].Key = i, keys[i%len(keys)]
		d.Observe(&f)
		if v := d.Verdict(); v.Stop || v.Warnings != nil {
			b.Fatal("stop")
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	for _, w := range []int{window.DefaultWindow, 100, window.MaxWindow} {
		b.Run(fmt.Sprint("window=", w), func(b *testing.B) {
			benchObserve(b, window.Options{Window: w, Threshold: 3, Warn: true})
		})
	}
}

// BenchmarkPreflight measures a preflight of one call with a full window.
func BenchmarkPreflight(b *testing.B) {
	g := newGuard(b, window.Options{Warn: true}, guard.Options{})
	run(g, each(fillers(20)...))
	b.ReportAllocs()
	for b.Loop() {
		if !g.Preflight(a).Allow {
			b.Fatal("refused")
		}
	}
}

// BenchmarkCheck measures a whole guard.Check with only this detector.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, window.Options{Warn: true}, guard.Options{})
	steps := each(fillers(5)...)
	run(g, steps)
	run(g, steps)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if g.Check(steps[i%len(steps)]).Stop {
			b.Fatal("stop")
		}
	}
}
