package core_test

import (
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/toollimit"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

const maxSteps = 12

// judgedDetectors are detectors whose preflight judges every rule it can:
// no result-aware repeat rule, which preflight cannot judge by design.
func judgedDetectors(t interface{ Fatal(...any) }, clock *testutil.Clock) []guard.Rule {
	must := func(d guard.Rule, err error) guard.Rule {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return []guard.Rule{
		must(finish.New(finish.Options{})),
		must(budget.New(budget.Options{MaxSteps: maxSteps, MaxTotalTokens: budget.Limit{Value: 1500}, WarnAt: 0.5, Now: clock.Now})),
		must(toollimit.New(toollimit.Options{MaxCalls: map[string]int{"write": 5}})),
		must(repeat.New(repeat.Options{Threshold: 3, Tools: map[string]repeat.ToolPolicy{"read": {RepeatThreshold: 2}}})),
		must(oscillation.New(oscillation.Options{MaxPeriod: 3, Repeats: 2})),
		must(noprogress.New(noprogress.Options{})),
	}
}

// TestPreflightProperties: Preflight leaves the guard's observable state
// (its snapshot and summary) unchanged; and a call it refuses, when then
// recorded by Check, stops the run with the same reason and code.
func TestPreflightProperties(t *testing.T) {
	refusals := map[guard.Reason]int{}
	defer func() {
		t.Logf("refusals checked against Check: %v", refusals)
		for _, r := range []guard.Reason{budget.ReasonMaxSteps, toollimit.ReasonToolLimit, repeat.ReasonRepeatedToolCall, oscillation.ReasonOscillation} {
			if refusals[r] == 0 && !t.Failed() {
				t.Errorf("no refusal for %s was generated: the property is not exercised", r)
			}
		}
	}()
	// Five rounds of rapid's checks, so that every reason is refused
	// (and compared with Check) in every run of the test.
	for range 5 {
		rapid.Check(t, property(refusals))
	}
}

func property(refusals map[guard.Reason]int) func(*rapid.T) {
	return func(t *rapid.T) {
		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		g, err := guard.New(withRules(guard.Config{Ignore: []string{"ignored"}}, judgedDetectors(t, clock)...))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rapid.SliceOfN(testutil.StepGen(), 0, 30).Draw(t, "run") {
			s.FinishReason = "" // a finish-reason stop would hide the rules preflight judges
			rcheck(t, g, s)
		}
		calls := rapid.SliceOfN(testutil.CallGen(), 0, 3).Draw(t, "calls")
		if rapid.Bool().Draw(t, "cycle") {
			// End the run with a cycle of calls, and propose its next call,
			// so that repeats and cycles are often one call from stopping.
			cyc := rapid.SliceOfN(testutil.CallGen(), 1, 3).Draw(t, "cyc")
			lo := max(1, 2*len(cyc)-1)
			n := rapid.IntRange(lo, 3*len(cyc)).Draw(t, "len")
			for i := range n {
				rcheck(t, g, guard.Step{ToolCalls: []guard.ToolCall{cyc[i%len(cyc)]}})
			}
			calls = append([]guard.ToolCall{cyc[n%len(cyc)]}, calls...)
		}
		for i := range calls {
			calls[i].Result, calls[i].Err = nil, nil
		}

		before, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
		sumBefore, _ := json.Marshal(rsummary(t, g))
		d1 := rpreflight(t, g, calls...)
		d2 := rpreflight(t, g, calls...)
		after, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
		sumAfter, _ := json.Marshal(rsummary(t, g))
		if string(before) != string(after) {
			t.Fatalf("Preflight changed the snapshot:\nbefore %s\nafter  %s", before, after)
		}
		if string(sumBefore) != string(sumAfter) {
			t.Fatalf("Preflight changed the summary:\nbefore %s\nafter  %s", sumBefore, sumAfter)
		}
		j1, _ := json.Marshal(d1)
		j2, _ := json.Marshal(d2)
		if string(j1) != string(j2) {
			t.Fatalf("asked twice, Preflight answered differently:\n%s\n%s", j1, j2)
		}
		if d1.Allow {
			return
		}
		refusals[d1.Reason]++
		v := rcheck(t, g, guard.Step{ToolCalls: calls})
		if v.Reason == budget.ReasonMaxSteps && rsummary(t, g).Steps == maxSteps {
			return // this very step reached the step limit, which ranks first
		}
		if !v.Stop || v.Reason != d1.Reason || v.Code != d1.Code {
			t.Fatalf("preflight refused with %s/%s, but Check of the same calls gave %s", d1.Reason, d1.Code, guard.Explain(v))
		}
	}
}
