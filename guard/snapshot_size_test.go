package guard_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// bigStep returns a step with a new 2 KB argument, a 3 KB result and 500
// characters of text.
func bigStep(i int) guard.Step {
	pad := func(n int) string { return strings.Repeat(fmt.Sprintf("%08d", i), n/8+1)[:n] }
	return guard.Step{
		Text: pad(500),
		ToolCalls: []guard.ToolCall{{
			Name:   "fetch",
			Args:   json.RawMessage(`{"body":"` + pad(2048-11) + `"}`),
			Result: pad(3072),
		}},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 2000, OutputTokens: 150, CostUSD: 0.001},
	}
}

func snapshotAfter(t testing.TB, steps int) []byte {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		g.Check(bigStep(i))
	}
	data, err := g.Snapshot(guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSnapshotSizeIsBounded: with default options, after 6,000 steps that
// each had a new 2 KB argument, a 3 KB result and 500 characters of text, the
// snapshot is at most 24 KB, and it stops growing once the no-progress
// window is full (but for the digits of its counters).
func TestSnapshotSizeIsBounded(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{0, 10, 1000, 1500, 6000} {
		sizes[n] = len(snapshotAfter(t, n))
	}
	t.Logf("snapshot bytes by steps: %v", sizes)
	if sizes[6000] > 24*1024 {
		t.Errorf("snapshot after 6000 steps is %d bytes, want at most %d", sizes[6000], 24*1024)
	}
	// Only the digits of counters and totals may grow.
	if sizes[6000]-sizes[1500] > 16 {
		t.Errorf("snapshot grew from %d bytes (1500 steps) to %d (6000 steps)", sizes[1500], sizes[6000])
	}
}

// TestGoldenSnapshot pins the snapshot format: the snapshot of a known run
// must not change, and a guard restored from the pinned bytes goes on as the
// original does. A change of format must raise guard.SnapshotVersion and keep
// reading the old files.
func TestGoldenSnapshot(t *testing.T) {
	run := func(g *guard.Guard, from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			s := guard.Step{Text: "Looking it up", FinishReason: "tool-calls",
				ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"q":"loop %d"}`, i%2)), Result: "nothing"}},
				Usage:     guard.Usage{InputTokens: 100, OutputTokens: 10}}
			b, _ := json.Marshal(g.Check(s))
			out = append(out, string(b))
		}
		return out
	}
	g, err := guard.New(v1Detectors(t)...)
	if err != nil {
		t.Fatal(err)
	}
	run(g, 0, 3)
	got, err := g.Snapshot(guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "snapshot-v1.golden.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("the snapshot format changed (raise SnapshotVersion and keep reading version 1):\n got: %s\nwant: %s", got, want)
	}
	restored, err := guard.Restore(want, v1Detectors(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := run(g, 3, 8), run(restored, 3, 8); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("restored from the golden file, the guard answers differently:\n orig: %v\nrestored: %v", a, b)
	}
}

// v1Detectors returns the detectors the golden file was saved with: the
// default set when it was written. The default set may grow; the file pins
// the format.
func v1Detectors(t *testing.T) []guard.Detector {
	t.Helper()
	fin, err1 := finish.New(finish.Options{})
	bud, err2 := budget.New(budget.Options{MaxSteps: 50})
	rep, err3 := repeat.New(repeat.Options{})
	osc, err4 := oscillation.New(oscillation.Options{})
	nop, err5 := noprogress.New(noprogress.Options{})
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	return []guard.Detector{fin, bud, rep, osc, nop}
}

// BenchmarkSnapshot and BenchmarkRestore measure saving and restoring a
// default guard after 10, 1,000 and 6,000 big steps.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10, 1000, 6000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			g, _ := guard.New(detector.Defaults()...)
			for i := range n {
				g.Check(bigStep(i))
			}
			var size int
			b.ReportAllocs()
			for b.Loop() {
				data, err := g.Snapshot(guard.SnapshotOptions{})
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{10, 1000, 6000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			data := snapshotAfter(b, n)
			b.ReportAllocs()
			b.ReportMetric(float64(len(data)), "bytes")
			for b.Loop() {
				if _, err := guard.Restore(data, detector.Defaults()...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
