package core_test

import (
	"context"
	"testing"

	"github.com/loopguard/loopguard/internal/benchcpu"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

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
	cpu := benchcpu.Start(b)
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
	cpu.Stop()
}

// BenchmarkPair measures one step of one call judged before it runs and
// recorded after, through each door of the API that knows the two are the
// same call, against a bare Check of the same step (the reference: a pair
// should cost little more than it): TurnRun (Begin, Run, End), TurnByID
// (Begin, Preflight of the call with an ID, SetResult, End) and StartCall
// (StartCall, Finish), whose reference is CheckCall, a Check of the call
// alone, the step that Finish records. Sizes: "typical" is typicalStep (a
// 150-byte argument, a 300-byte result); "big" is bigStep (2 KB, 3 KB and
// 500 characters of text). Default detectors, steady state.
func BenchmarkPair(b *testing.B) {
	ctx := context.Background()
	sizes := []struct {
		name string
		step func(int) guard.Step
	}{{"typical", typicalStep}, {"big", bigStep}}
	for _, size := range sizes {
		steps := make([]guard.Step, 4096)
		for i := range steps {
			steps[i] = size.step(i)
		}
		warm := func(b *testing.B) *guard.Guard {
			g := defaultGuard(b)
			for i := range 2048 {
				testutil.Check(b, g, steps[i])
			}
			b.ReportAllocs()
			return g
		}
		b.Run(size.name+"/Check", func(b *testing.B) {
			g := warm(b)
			i := 2048
			cpu := benchcpu.Start(b)
			for b.Loop() {
				if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
					b.Fatalf("unexpected stop: %v", v)
				}
				i++
			}
			cpu.Stop()
		})
		b.Run(size.name+"/TurnRun", func(b *testing.B) {
			g := warm(b)
			i := 2048
			var c guard.ToolCall
			fn := func(context.Context) (any, error) { return c.Result, nil } // the tool: made once
			cpu := benchcpu.Start(b)
			for b.Loop() {
				s := steps[i%len(steps)]
				c = s.ToolCalls[0]
				turn := g.Begin()
				if _, err := turn.Run(ctx, guard.ToolCall{Name: c.Name, Args: c.Args}, fn); err != nil {
					b.Fatal(err)
				}
				s.ToolCalls = nil
				if v, err := turn.End(ctx, s); v.Stop || err != nil {
					b.Fatalf("unexpected stop: %v %v", v, err)
				}
				i++
			}
			cpu.Stop()
		})
		b.Run(size.name+"/TurnByID", func(b *testing.B) {
			g := warm(b)
			i := 2048
			cpu := benchcpu.Start(b)
			for b.Loop() {
				s := steps[i%len(steps)]
				c := s.ToolCalls[0]
				turn := g.Begin()
				if ds, err := turn.Preflight(ctx, guard.ToolCall{ID: "call_1", Name: c.Name, Args: c.Args}); err != nil || !ds[0].Allow {
					b.Fatalf("refused: %v %v", ds, err)
				}
				turn.SetResult("call_1", c.Result, nil)
				s.ToolCalls = nil
				if v, err := turn.End(ctx, s); v.Stop || err != nil {
					b.Fatalf("unexpected stop: %v %v", v, err)
				}
				i++
			}
			cpu.Stop()
		})
		b.Run(size.name+"/CheckCall", func(b *testing.B) {
			// The reference of StartCall: a step of the call alone, as
			// Finish records it.
			g := warm(b)
			i := 2048
			cpu := benchcpu.Start(b)
			for b.Loop() {
				if v, _ := g.Check(ctx, guard.Step{ToolCalls: steps[i%len(steps)].ToolCalls}); v.Stop {
					b.Fatalf("unexpected stop: %v", v)
				}
				i++
			}
			cpu.Stop()
		})
		b.Run(size.name+"/StartCall", func(b *testing.B) {
			g := warm(b)
			i := 2048
			cpu := benchcpu.Start(b)
			for b.Loop() {
				c := steps[i%len(steps)].ToolCalls[0]
				r, d, _ := g.StartCall(ctx, guard.ToolCall{Name: c.Name, Args: c.Args})
				if !d.Allow {
					b.Fatalf("refused: %v", d)
				}
				if v, _ := r.Finish(ctx, c.Result, nil); v.Stop {
					b.Fatalf("unexpected stop: %v", v)
				}
				i++
			}
			cpu.Stop()
		})
	}
}
