package guard_test

import (
	"context"
	"testing"

	"github.com/loopguard/loopguard/guard"
)

// BenchmarkTurnRun measures one step of a hand-written loop through a Turn:
// Begin, Run of one typical call (see typicalStep), End, with the default
// detectors in steady state.
func BenchmarkTurnRun(b *testing.B) {
	g := defaultGuard(b)
	ctx := context.Background()
	steps := make([]guard.Step, 4096)
	for i := range steps {
		steps[i] = typicalStep(i)
	}
	for i := range 2048 {
		g.Check(steps[i])
	}
	b.ReportAllocs()
	i := 2048
	for b.Loop() {
		s := steps[i%len(steps)]
		c := s.ToolCalls[0]
		turn := g.Begin()
		if _, err := turn.Run(ctx, guard.ToolCall{Name: c.Name, Args: c.Args}, func(context.Context) (any, error) { return c.Result, nil }); err != nil {
			b.Fatal(err)
		}
		s.ToolCalls = nil
		if v, err := turn.End(ctx, s); v.Stop || err != nil {
			b.Fatalf("unexpected stop: %v %v", v, err)
		}
		i++
	}
}

// BenchmarkTurnPreflight4 measures one step with four parallel calls keyed
// by ID, as the adapters make it: Begin, Preflight of the four, SetResult of
// each, End.
func BenchmarkTurnPreflight4(b *testing.B) {
	g := defaultGuard(b)
	ctx := context.Background()
	steps := make([]guard.Step, 4096)
	for i := range steps {
		steps[i] = typicalStep(i)
	}
	ids := []string{"call_0", "call_1", "call_2", "call_3"}
	b.ReportAllocs()
	i := 0
	calls := make([]guard.ToolCall, 4)
	for b.Loop() {
		for k := range calls {
			c := steps[(i*4+k)%len(steps)].ToolCalls[0]
			calls[k] = guard.ToolCall{ID: ids[k], Name: c.Name, Args: c.Args}
		}
		turn := g.Begin()
		ds, err := turn.Preflight(ctx, calls...)
		if err != nil {
			b.Fatal(err)
		}
		for k, d := range ds {
			if !d.Allow {
				b.Fatalf("refused: %v", d)
			}
			turn.SetResult(calls[k].ID, steps[(i*4+k)%len(steps)].ToolCalls[0].Result, nil)
		}
		if v, err := turn.End(ctx, guard.Step{FinishReason: "tool-calls"}); v.Stop || err != nil {
			b.Fatalf("unexpected stop: %v %v", v, err)
		}
		i++
	}
}
