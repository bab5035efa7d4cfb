package detector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
)

// beyond switches on every rule and option beyond the reference: the stall
// and window rules, result-aware cycles and every warning. (Call keys are
// the guard's: see guard.Config.DropArgs.)
const beyond = `{"maxSteps": 1000000000,
	"repeatedToolCall": {"warn": true}, "oscillation": {"warn": true, "requireIdenticalResults": true},
	"noProgress": {"warn": true}, "toolLimit": {"warn": true}, "window": {"warn": true}, "stall": {"warn": true},
	"tools": {"search": {"maxCalls": 1000000000}}}`

// step returns a typical step: one call with about 150 bytes of arguments
// and a 300-byte result, different for every i.
func benchStep(i int) guard.Step {
	args := fmt.Sprintf(`{"query":"site:docs.example.com loop guard %08d","max_results":10,"lang":"en","safe":true,"filters":{"after":"2026-01-01","type":"html"}}`, i)
	result := fmt.Sprintf(`{"hits":[{"title":"Result %08d","url":"https://docs.example.com/a/%08d"}],"total":1,"took_ms":12,"note":"%s"}`, i, i, strings.Repeat("x", 180))
	return guard.Step{
		ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(args), Result: json.RawMessage(result)}},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 1200, OutputTokens: 40},
	}
}

// BenchmarkCheck measures Guard.Check of a typical step in steady state,
// with the default set and with everything beyond the reference switched
// on: every step is new, so nothing stops and nothing warns, and the
// outcome windows are full.
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct {
		name, doc string
		step      func(int) guard.Step
	}{
		{"defaults", `{"maxSteps": 1000000000}`, benchStep},
		{"beyond", beyond, benchStep},
		// The guard's call keys: dropping a field (absent here) costs a
		// JSON decoding of every call's arguments.
		{"dropArgs", `{"maxSteps": 1000000000, "dropArgs": ["request_id"]}`, benchStep},
		// A failing call: its failure signature and Retry sum are
		// computed, and the failure rule counts it.
		{"failing", `{"maxSteps": 1000000000}`, failingStep},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg, err := detector.FromJSON([]byte(c.doc))
			if err != nil {
				b.Fatal(err)
			}
			g, err := guard.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			steps := make([]guard.Step, 4096)
			for i := range steps {
				steps[i] = c.step(i)
			}
			for i := range 2048 {
				ruletest.Check(b, g, steps[i])
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 2048
			for b.Loop() {
				if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop || v.Warnings != nil {
					b.Fatalf("unexpected verdict: %v", v)
				}
				i++
			}
		})
	}
}

// failingStep returns a step whose one call fails: other arguments and
// another request id each time, and 64 tools in turn, so that nothing stops.
func failingStep(i int) guard.Step {
	return guard.Step{ToolCalls: []guard.ToolCall{{Name: fmt.Sprintf("fetch%d", i%64),
		Args: map[string]any{"url": fmt.Sprintf("https://api.example.com/v1/items/%d", i), "retries": 3},
		Err:  fmt.Errorf("service unavailable (request %08x-0628-45fb-9593-f629717be3ca) for item %d", i, i)}}}
}
