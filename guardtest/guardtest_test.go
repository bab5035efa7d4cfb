package guardtest_test

import (
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// factory turns a constructor and options into a rule factory. The factory
// is called inside the kit's subtests, and fails the subtest that calls it
// on an error.
func factory[O any, R rule.Rule](_ *testing.T, build func(O) (R, error), o O) func(t *testing.T) rule.Rule {
	return func(t *testing.T) rule.Rule {
		r, err := build(o)
		if err != nil {
			t.Fatalf("building the rule: %v", err)
		}
		return r
	}
}

// fixedClock is a wall clock that never moves, for the duration budget.
func fixedClock() time.Time { return time.Unix(1_700_000_000, 0) }

// builtins lists every built-in rule with a few variants of its options,
// and for each a variant with other options for the Fingerprint check.
func builtins(t *testing.T) []struct {
	name           string
	newRule, other func(t *testing.T) rule.Rule
} {
	type entry = struct {
		name           string
		newRule, other func(t *testing.T) rule.Rule
	}
	return []entry{
		{"finish/default", factory(t, finish.New, finish.Options{}), factory(t, finish.New, finish.Options{OtherPolicy: finish.Continue})},
		{"finish/stop", factory(t, finish.New, finish.Options{Terminal: []string{"stop", "length"}, OtherPolicy: finish.Stop}), factory(t, finish.New, finish.Options{})},
		{"budget/steps", factory(t, budget.New, budget.Options{MaxSteps: 7}), factory(t, budget.New, budget.Options{MaxSteps: 8})},
		{"budget/all", factory(t, budget.New, budget.Options{MaxSteps: 30, WarnAt: 0.5, Now: fixedClock,
			MaxTotalTokens: budget.Limit{Value: 3000}, MaxInputTokens: budget.Limit{Value: 2000, WarnAt: 0.9},
			MaxOutputTokens: budget.Limit{Value: 1500}, MaxCostUSD: budget.Limit{Value: 0.2}, MaxDurationMs: budget.Limit{Value: 9000}}),
			factory(t, budget.New, budget.Options{MaxSteps: 30, WarnAt: 0.5, Now: fixedClock})},
		{"toollimit", factory(t, toollimit.New, toollimit.Options{MaxCalls: map[string]int{"search": 4, "read": 2, "write": 0}}),
			factory(t, toollimit.New, toollimit.Options{MaxCalls: map[string]int{"search": 5}})},
		{"repeat/default", factory(t, repeat.New, repeat.Options{}), factory(t, repeat.New, repeat.Options{Threshold: 4})},
		{"repeat/tuned", factory(t, repeat.New, repeat.Options{Threshold: 4, RequireIdenticalResults: true, IgnoreErrors: true,
			Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 2}, "read": {Polling: true, MaxIdenticalResults: 3}}}),
			factory(t, repeat.New, repeat.Options{Threshold: 4, RequireIdenticalResults: true, IgnoreErrors: true})},
		{"oscillation/default", factory(t, oscillation.New, oscillation.Options{}), factory(t, oscillation.New, oscillation.Options{Repeats: 4})},
		{"oscillation/short", factory(t, oscillation.New, oscillation.Options{MaxPeriod: 4, Repeats: 2}), factory(t, oscillation.New, oscillation.Options{MaxPeriod: 5, Repeats: 2})},
		{"noprogress/default", factory(t, noprogress.New, noprogress.Options{}), factory(t, noprogress.New, noprogress.Options{Threshold: 4})},
		{"noprogress/window", factory(t, noprogress.New, noprogress.Options{Threshold: 2, Window: 5}), factory(t, noprogress.New, noprogress.Options{Threshold: 2})},
		{"stall/default", factory(t, stall.New, stall.Options{}), factory(t, stall.New, stall.Options{Threshold: 7})},
		{"stall/warn", factory(t, stall.New, stall.Options{Threshold: 2, Window: 3, Warn: true}), factory(t, stall.New, stall.Options{Threshold: 2, Window: 3})},
		{"window/default", factory(t, window.New, window.Options{}), factory(t, window.New, window.Options{Threshold: 7})},
		{"sameresult/default", factory(t, sameresult.New, sameresult.Options{}), factory(t, sameresult.New, sameresult.Options{Threshold: 5})},
		{"sameresult/short", factory(t, sameresult.New, sameresult.Options{Threshold: 2, MinBytes: 1, Warn: true}), factory(t, sameresult.New, sameresult.Options{Threshold: 3, MinBytes: 1, Warn: true})},
		{"input/default", factory(t, input.New, input.Options{}), factory(t, input.New, input.Options{Threshold: 4})},
		{"input/short", factory(t, input.New, input.Options{Window: 4, Threshold: 2, MinBytes: 1, Warn: true}), factory(t, input.New, input.Options{Window: 5, Threshold: 2, MinBytes: 1, Warn: true})},
		{"window/warn", factory(t, window.New, window.Options{Window: 6, Threshold: 3, Warn: true}), factory(t, window.New, window.Options{Window: 7, Threshold: 3, Warn: true})},
	}
}

// checks returns n, or fewer with the race detector or -short, and fewer
// still with both (the fast path of CI).
func checks(n int) guardtest.Option {
	return guardtest.WithChecks(scaled(n, 3))
}

// scaled returns n, a tenth of it with the race detector or -short, and a
// fiftieth with both; at least least.
func scaled(n, least int) int {
	switch {
	case race && testing.Short():
		n /= 50
	case race || testing.Short():
		n /= 10
	}
	return max(n, least)
}

// TestBuiltins runs the kit on every built-in rule, as a user would.
func TestBuiltins(t *testing.T) {
	for _, b := range builtins(t) {
		t.Run(b.name, func(t *testing.T) {
			guardtest.Run(t, b.newRule, guardtest.WithOtherOptions(b.other), checks(100))
		})
	}
}

// TestBuiltinsIgnore runs the kit with a guard that ignores a tool, so that
// ignored calls are part of the runs.
func TestBuiltinsIgnore(t *testing.T) {
	for _, b := range builtins(t) {
		t.Run(b.name, func(t *testing.T) {
			guardtest.Run(t, b.newRule, guardtest.WithGuardOptions(guard.Config{Ignore: []string{"think"}}), checks(30))
		})
	}
}
