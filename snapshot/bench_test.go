package snapshot_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// BenchmarkRunsCheck is a Check through Runs on an in-memory store, the
// worker's guard cached: the CPU a save costs besides the store's round trip.
func BenchmarkRunsCheck(b *testing.B) {
	ctx := context.Background()
	g := newRuns(b, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{}).Guard("run")
	steps := make([]guard.Step, 64)
	for i := range steps {
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i%7), Result: "r"}}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := g.Check(ctx, steps[i%len(steps)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardCheckSnapshot is the guard's part of it: Check, then
// Snapshot.
func BenchmarkGuardCheckSnapshot(b *testing.B) {
	ctx := context.Background()
	g, _ := guard.New((&defaults{}).config())
	steps := make([]guard.Step, 64)
	for i := range steps {
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i%7), Result: "r"}}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.Check(ctx, steps[i%len(steps)])
		if _, err := g.Snapshot(ctx, guard.SnapshotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardCheckSnapshotLongRun is the same on a healthy run that has
// gone on long enough to fill its windows: every call new, so that the
// stored run is as large as it gets with the defaults (23 KB, most of it the
// no-progress window's 1,024 outcomes).
func BenchmarkGuardCheckSnapshotLongRun(b *testing.B) {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": false}`)) // a long run
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	g, err := guard.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	step := func(i int) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i), Result: fmt.Sprint("r", i)}}}
	}
	for i := range 2000 {
		g.Check(ctx, step(i))
	}
	b.ReportAllocs()
	size := 0
	for i := 2000; b.Loop(); i++ {
		if v, _ := g.Check(ctx, step(i)); v.Stop {
			b.Fatal(guard.Explain(v))
		}
		data, err := g.Snapshot(ctx, guard.SnapshotOptions{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size), "bytes/snapshot")
}

// BenchmarkRunsCheckLongRun is BenchmarkRunsCheck on a long healthy run:
// every call new, the stored run at its largest (23 KB).
func BenchmarkRunsCheckLongRun(b *testing.B) {
	ctx := context.Background()
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": false}`))
	if err != nil {
		b.Fatal(err)
	}
	runs, err := snapshot.New(snapshot.NewMemory(nil), cfg, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g := runs.Guard("run")
	step := func(i int) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i), Result: fmt.Sprint("r", i)}}}
	}
	for i := range 1100 {
		if _, err := g.Check(ctx, step(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 1100; b.Loop(); i++ {
		if v, err := g.Check(ctx, step(i)); err != nil || v.Stop {
			b.Fatal(err, guard.Explain(v))
		}
	}
}
