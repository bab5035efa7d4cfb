package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// TestMetersOfTheBuiltInRules pins the counters the timeline draws for
// every built-in rule that has one, in the guard's order: their labels and
// limits (the finish rule counts nothing, the tool caps only with a cap).
func TestMetersOfTheBuiltInRules(t *testing.T) {
	type row struct {
		Name, Label string
		Limit       float64
		Ratio       bool
	}
	for _, tt := range []struct {
		doc  string
		want []row
	}{
		{`{}`, []row{{"budget", "budget use", 1, true}, {"refusal", "refusals", 3, false}, {"repeat", "repeat run", 3, false},
			{"failure", "same failure", 1, true}, {"sameresult", "same result", 4, false}, {"oscillation", "cycle rounds", 1, true},
			{"noprogress", "no progress", 3, false}, {"text", "same text", 1, true}, {"input", "same input", 3, false}}},
		// Without sameResults, the oscillation counter is its rounds.
		{`{"oscillation": {"sameResults": 3}, "repeatedText": {"long": 3}}`, []row{{"budget", "budget use", 1, true}, {"refusal", "refusals", 3, false}, {"repeat", "repeat run", 3, false},
			{"failure", "same failure", 1, true}, {"sameresult", "same result", 4, false}, {"oscillation", "cycle rounds", 3, false}, {"noprogress", "no progress", 3, false},
			{"text", "same text", 3, false}, {"input", "same input", 3, false}}},
		{`{"repeatedToolCall": {"threshold": 4}, "oscillation": {"repeats": 5}, "noProgress": {"threshold": 6},
			"window": {"window": 10, "threshold": 2}, "stall": {"threshold": 7}, "repeatedFailure": {"threshold": 8},
			"repeatedText": {"threshold": 9}, "repeatedRefusal": {"threshold": 11}, "sameResult": {"threshold": 12}, "repeatedInput": {"threshold": 5}, "tools": {"search": {"maxCalls": 2}}}`,
			[]row{{"budget", "budget use", 1, true}, {"toollimit", "tool cap", 1, true}, {"refusal", "refusals", 11, false},
				{"repeat", "repeat run", 4, false}, {"failure", "same failure", 1, true}, {"window", "window count", 3, false},
				{"sameresult", "same result", 12, false}, {"oscillation", "cycle rounds", 1, true}, {"noprogress", "no progress", 6, false}, {"text", "same text", 1, true},
				{"stall", "stall", 7, false}, {"input", "same input", 5, false}}},
	} {
		cfg, err := detector.FromJSON([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		got := []row{}
		for _, m := range meters(cfg.Rules) {
			got = append(got, row{m.name, m.label, m.limit, m.ratio})
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: meters (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// counted is a rule of no built-in kind whose meter counts the steps, and
// which has none when off.
type counted struct {
	inert
	off bool
}

func (c *counted) Meter() (rule.Meter, bool) {
	return rule.Meter{Label: "steps", Limit: 10, Read: func(summary any, n rule.Counters) float64 {
		if summary != nil {
			return -1
		}
		return float64(n.Steps)
	}}, !c.off
}

// inert is a rule, and its own state, that judges and keeps nothing.
type inert struct{ name string }

func (r inert) Name() string                       { return r.name }
func (r inert) Priority() int                      { return rule.PriorityCustom }
func (r inert) Options() any                       { return nil }
func (r inert) NewState() rule.State               { return r }
func (r inert) Observe(*rule.Facts)                {}
func (r inert) Verdict() rule.Verdict              { return rule.Verdict{} }
func (r inert) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// TestMetersOfAnyMeteredRule: the timeline draws the counter of any rule
// that is a rule.Metered, reading its value from the guard's summary and
// counters, and none for a rule that is not one or says it has none.
func TestMetersOfAnyMeteredRule(t *testing.T) {
	rules := []rule.Rule{&counted{inert: inert{"mine"}}, inert{"plain"},
		&counted{inert: inert{"off"}, off: true}}
	ms := meters(rules)
	if len(ms) != 1 || ms[0].name != "mine" || ms[0].label != "steps" || ms[0].limit != 10 || ms[0].ratio {
		t.Fatalf("meters = %+v, want the one of mine", ms)
	}
	if got := ms[0].value(&guard.Summary{Steps: 4}); got != 4 {
		t.Errorf("value = %v, want 4 (the steps)", got)
	}
	if got := ms[0].value(&guard.Summary{Steps: 4, Detectors: map[string]any{"mine": 1}}); got != -1 {
		t.Errorf("value = %v, want -1 (from the summary)", got)
	}
}
