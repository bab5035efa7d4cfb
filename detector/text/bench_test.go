package text_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/guard"
)

// BenchmarkCheck measures guard.Check with the repeated-text rule alone, of a
// step with a short preamble and one call that brings a new outcome: the
// window is full and the text repeats on every step, so the rule looks up
// each call's outcome among the window's steps.
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, newDetector(b, text.Options{}))
	steps := make([]guard.Step, 1024)
	for i := range steps {
		steps[i] = guard.Step{Text: "Let me search for more information.", ToolCalls: []guard.ToolCall{{Name: "search",
			Args: json.RawMessage(fmt.Sprintf(`{"query":"loop guard %08d"}`, i)), Result: json.RawMessage(fmt.Sprintf(`"result %08d"`, i))}}}
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
