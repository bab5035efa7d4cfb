package input_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
)

// BenchmarkCheck measures guard.Check with the repeated-input rule alone, of
// a step with input and one call: the common case, which the rule skips.
func BenchmarkCheck(b *testing.B) {
	benchCheck(b, func(i int) guard.Step {
		return guard.Step{Text: "Let me look.", Input: fmt.Sprintf("Please check the order %08d and tell me its status, thank you.", i),
			ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"q":"%08d"}`, i)), Result: "ok"}}}
	})
}

// BenchmarkCheckTold measures a step answered in words whose input counts:
// the window is full and each input is new, so every step scans it.
func BenchmarkCheckTold(b *testing.B) {
	benchCheck(b, func(i int) guard.Step {
		return guard.Step{Text: "I will fix it.", Input: fmt.Sprintf("[Test Reports] An error occurred in test %08d: module has no attribute", i)}
	})
}

func benchCheck(b *testing.B, step func(int) guard.Step) {
	g := newGuard(b, newRule(b, input.Options{}))
	steps := make([]guard.Step, 1024)
	for i := range steps {
		steps[i] = step(i)
	}
	ctx := context.Background()
	for i := range 64 {
		ruletest.Check(b, g, steps[i])
	}
	b.ReportAllocs()
	i := 64
	for b.Loop() {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatalf("unexpected stop: %v", v)
		}
		i++
	}
}
