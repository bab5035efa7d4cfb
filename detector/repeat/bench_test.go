package repeat_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// BenchmarkObserve measures the detector's own work per step in a run that
// never stops: two calls that take turns, so every call breaks the run; with
// warnings on, none of which applies.
func BenchmarkObserve(b *testing.B) {
	d, err := repeat.New(repeat.Options{Warn: true, Tools: map[string]repeat.ToolPolicy{"poll": {Polling: true}}})
	if err != nil {
		b.Fatal(err)
	}
	ka, kb := canonical.HashString("a"), canonical.HashString("b")
	steps := [2]rule.Facts{
		{Calls: []rule.Call{{Tool: "search", Key: ka, Outcome: ka}}},
		{Calls: []rule.Call{{Tool: "search", Key: kb, Outcome: kb}}},
	}
	st := d.NewState()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f := &steps[i&1]
		f.Index = i
		st.Observe(f)
		if st.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkCheck measures a whole Guard.Check with only this detector.
func BenchmarkCheck(b *testing.B) {
	d, _ := repeat.New(repeat.Options{})
	g := testutil.New(b, d)
	ctx := context.Background()
	steps := [2]guard.Step{step(a), step(bCall)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i&1]); v.Stop {
			b.Fatal("stop")
		}
	}
}

// BenchmarkPreflight measures a refusal-free preflight of one call.
func BenchmarkPreflight(b *testing.B) {
	d, _ := repeat.New(repeat.Options{})
	g := testutil.New(b, d)
	ctx := context.Background()
	ruletest.Check(b, g, step(a))
	ruletest.Check(b, g, step(a))
	b.ReportAllocs()
	for b.Loop() {
		if dec, _ := g.Preflight(ctx, bCall); !dec.Allow {
			b.Fatal("refused")
		}
	}
}

var bCall = b

// BenchmarkCheckPolls measures Check with only this detector in a run of
// polls: the same call every step, each with a new 300-byte text output, so
// every call compares two outputs by their loose hash and starts the run
// again.
func BenchmarkCheckPolls(b *testing.B) {
	d, err := repeat.New(repeat.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		b.Fatal(err)
	}
	var steps [64]guard.Step
	for i := range steps {
		out := strings.Repeat("collected line of test output ", 9) + strings.Repeat("x", i+1)
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "execute_bash", Args: json.RawMessage(`{"command":""}`), Result: out}}}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}
