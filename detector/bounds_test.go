package detector_test

import (
	"encoding/base64"
	"testing"

	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/rule"
)

const sum1, sum2 = "87db18f8edeef5d2161511d1e253ad39", "56bff8af1efa57c5c37d2838c3034320"

// outcomesOf returns the encoded state of n distinct outcomes.
func outcomesOf(n int) string {
	raw := make([]byte, 16*n)
	for i := range n {
		raw[16*i] = byte(i + 1)
	}
	return base64.RawStdEncoding.EncodeToString(raw)
}

// TestCheckBounds: each built-in detector accepts a restored state that fits
// the run's counters exactly, and rejects it with one step or call fewer.
func TestCheckBounds(t *testing.T) {
	must := func(d rule.Rule, err error) rule.Rule {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name  string
		det   func() rule.Rule
		state string
		fits  rule.Counters // the least counters that fit: one call fewer does not
		steps bool          // nor one step fewer
		// stepsOnly: the state is bound by steps alone, not by calls.
		stepsOnly bool
	}{
		{"repeat: run length and newest step",
			func() rule.Rule { return must(repeat.New(repeat.Options{})) },
			`{"sig":"` + sum1 + `","count":5,"steps":[3,6]}`, rule.Counters{Steps: 7, ToolCalls: 5}, true, false},
		{"oscillation: calls held and counters",
			func() rule.Rule { return must(oscillation.New(oscillation.Options{})) },
			`{"calls":[{"key":"` + sum1 + `","tool":"a"},{"key":"` + sum2 + `","tool":"b"},{"key":"` + sum1 + `","tool":"a"}],"runs":[4,0]}`,
			rule.Counters{Steps: 1, ToolCalls: 6}, false, false},
		{"window: calls in the window",
			func() rule.Rule { return must(window.New(window.Options{})) },
			`{"keys":["` + sum1 + `","` + sum2 + `","` + sum1 + `"],"outcomes":["` + sum2 + `","` + sum1 + `","` + sum2 + `"]}`,
			rule.Counters{Steps: 1, ToolCalls: 3}, false, false},
		{"failure: calls, failures and step indexes",
			func() rule.Rule { return must(failure.New(failure.Options{})) },
			`{"tools":["` + sum1 + `","` + sum1 + `"],"ops":["` + sum2 + `","` + sum2 + `"],"failures":["` + sum1 + `","` + sum1 + `"],"steps":[2,5]}`,
			rule.Counters{Steps: 6, ToolCalls: 2, FailedToolCalls: 2}, true, false},
		{"text: steps in the window and their indexes",
			func() rule.Rule { return must(text.New(text.Options{})) },
			`{"texts":["` + sum1 + `",null,"` + sum1 + `"],"steps":[1,4,7]}`, rule.Counters{Steps: 8}, true, true},
		{"refusal: refusals need a step",
			func() rule.Rule { return must(refusal.New(refusal.Options{})) },
			`{"keys":["` + sum1 + `"],"counts":[2]}`, rule.Counters{Steps: 1}, true, true},
		{"noprogress: stalled steps and outcomes",
			func() rule.Rule { return must(noprogress.New(noprogress.Options{})) },
			`{"stalled":4,"text":"` + sum1 + `","outcomes":"` + outcomesOf(3) + `"}`, rule.Counters{Steps: 4, ToolCalls: 3}, true, false},
		{"stall: stalled steps and outcomes",
			func() rule.Rule { return must(stall.New(stall.Options{})) },
			`{"stalled":2,"outcomes":"` + outcomesOf(5) + `"}`, rule.Counters{Steps: 2, ToolCalls: 5}, true, false},
		{"input: steps in the window and their indexes",
			func() rule.Rule { return must(input.New(input.Options{})) },
			`{"inputs":["` + sum1 + `",null,"` + sum1 + `"],"steps":[1,4,7]}`, rule.Counters{Steps: 8}, true, true},
		{"sameresult: one call of the streak per step",
			func() rule.Rule { return must(sameresult.New(sameresult.Options{})) },
			`{"tool":"` + sum1 + `","result":"` + sum2 + `","key":"` + sum1 + `","count":3}`, rule.Counters{Steps: 3, ToolCalls: 3}, true, false},
		{"toollimit: the counts add up",
			func() rule.Rule {
				return must(toollimit.New(toollimit.Options{MaxCalls: map[string]int{"a": 1, "b": 1}}))
			},
			`{"a":3,"b":4}`, rule.Counters{Steps: 1, ToolCalls: 7}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ruletest.Saver(t, tt.det())
			if err := d.Restore([]byte(tt.state)); err != nil {
				t.Fatalf("Restore(%s): %v", tt.state, err)
			}
			b, ok := d.(rule.Bounded)
			if !ok {
				t.Fatal("not a rule.Bounded")
			}
			if err := b.CheckBounds(tt.fits); err != nil {
				t.Errorf("CheckBounds(%+v): %v", tt.fits, err)
			}
			var fewer []rule.Counters
			if !tt.stepsOnly {
				fewer = append(fewer, rule.Counters{Steps: tt.fits.Steps, ToolCalls: tt.fits.ToolCalls - 1})
			}
			if tt.steps {
				fewer = append(fewer, rule.Counters{Steps: tt.fits.Steps - 1, ToolCalls: tt.fits.ToolCalls})
			}
			for _, c := range fewer {
				if err := b.CheckBounds(c); err == nil {
					t.Errorf("CheckBounds(%+v): no error", c)
				}
			}
		})
	}
}
