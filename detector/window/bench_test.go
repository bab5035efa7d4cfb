package window_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// benchObserve measures the detector's own work per step, with warnings
// on, in the steady state: the window is full, every step makes a call
// that is already in it once or twice, so nothing stops and nothing warns.
func benchObserve(b *testing.B, o window.Options) {
	d := newDetector(b, o).NewState()
	keys := make([]canonical.Sum, o.Window/2)
	var buf [8]byte
	for i := range keys {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		keys[i] = canonical.HashBytes(buf[:])
	}
	var f rule.Facts
	f.Calls = []rule.Call{{Tool: "search"}}
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
	g := newGuard(b, window.Options{Warn: true}, guard.Config{})
	run(b, g, each(fillers(20)...))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := g.Preflight(ctx, a); !d.Allow {
			b.Fatal("refused")
		}
	}
}

// BenchmarkCheck measures a whole Guard.Check with only this detector.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, window.Options{Warn: true}, guard.Config{})
	steps := each(fillers(5)...)
	run(b, g, steps)
	run(b, g, steps)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}
