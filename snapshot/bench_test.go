package snapshot_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// BenchmarkRunsCheck is a Check through Runs on an in-memory store, the
// worker's guard cached: the CPU a save costs besides the store's round trip.
func BenchmarkRunsCheck(b *testing.B) {
	ctx := context.Background()
	runs := newRuns(b, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{})
	steps := make([]guard.Step, 64)
	for i := range steps {
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i%7), Result: "r"}}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := runs.Check(ctx, "run", steps[i%len(steps)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardCheckSnapshot is the guard's part of it: Check, then
// Snapshot.
func BenchmarkGuardCheckSnapshot(b *testing.B) {
	g, _ := (&defaults{}).New()
	steps := make([]guard.Step, 64)
	for i := range steps {
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i%7), Result: "r"}}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.Check(steps[i%len(steps)])
		if _, err := g.Snapshot(guard.SnapshotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
