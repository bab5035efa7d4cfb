package budget_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// clock is a fake wall clock.
type clock struct{ t time.Time }

func newClock() *clock                    { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) Now() time.Time           { return c.t }
func (c *clock) advance(ms time.Duration) { c.t = c.t.Add(ms * time.Millisecond) }

// noClock fails the test if the clock is read.
func noClock(t *testing.T) func() time.Time {
	return func() time.Time {
		t.Helper()
		t.Error("the clock was read without a duration limit")
		return time.Time{}
	}
}

func newRule(t testing.TB, o budget.Options) *budget.Rule {
	t.Helper()
	r, err := budget.New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return r
}

// runState is what a budget state is: a rule.State that is saved.
type runState interface {
	rule.State
	rule.Saver
}

// newState returns a fresh state of the rule with these options.
func newState(t testing.TB, o budget.Options) runState {
	t.Helper()
	st, ok := newRule(t, o).NewState().(runState)
	if !ok {
		t.Fatal("the budget's state is not a rule.Saver")
	}
	return st
}

// withIgnore returns the guard options of these tests, with rules.
func withIgnore(rules ...rule.Rule) guard.Config {
	return guard.Config{Ignore: []string{"think"}, Rules: rules}
}

func newGuard(t testing.TB, o budget.Options) *guard.Guard {
	t.Helper()
	g, err := guard.New(withIgnore(newRule(t, o)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func finish(v guard.Verdict, p guard.Phase) guard.Verdict {
	v.Stop, v.Detector = true, budget.Name
	switch ev := v.Evidence.(type) {
	case budget.Evidence:
		v.Feedback = ev.Feedback(p)
	case budget.StepsEvidence:
		v.Feedback = ev.Feedback(p)
	}
	return v
}

func spent(metric, code string, value, limit float64, ws ...guard.Warning) guard.Verdict {
	v := finish(guard.Verdict{Reason: budget.ReasonBudget, Code: code,
		Detail:   fmt.Sprintf("%s reached its limit: %s of %s", metric, rule.FormatNumber(value), rule.FormatNumber(limit)),
		Evidence: budget.Evidence{Metric: metric, Value: value, Limit: limit}}, guard.PhaseCheck)
	v.Warnings = ws
	return v
}

func steps(n, limit int, ws ...guard.Warning) guard.Verdict {
	v := finish(guard.Verdict{Reason: budget.ReasonMaxSteps, Code: budget.CodeMaxSteps,
		Detail:   fmt.Sprintf("step %d reached the limit of %d steps", n, limit),
		Evidence: budget.StepsEvidence{Steps: n, Limit: limit}}, guard.PhaseCheck)
	v.Warnings = ws
	return v
}

func warn(metric string, value, limit float64) guard.Warning {
	ratio := value / limit
	w := guard.Warning{Code: budget.CodeWarning, Metric: metric, Value: value, Limit: limit, Ratio: ratio,
		Detail: fmt.Sprintf("%s is at %s of its limit %s (%s%%)", metric, rule.FormatNumber(value),
			rule.FormatNumber(limit), rule.FormatNumber(math.Round(ratio*1000)/10)),
		Detector: budget.Name}
	w.Feedback = budget.WarningFeedback(w)
	return w
}

func warns(ws ...guard.Warning) guard.Verdict { return guard.Verdict{Warnings: ws} }

// use is a step with this usage; ms is its duration in milliseconds.
func use(in, out, total int64, cost float64, ms time.Duration) guard.Step {
	return guard.Step{Text: "x", Usage: guard.Usage{InputTokens: in, OutputTokens: out, TotalTokens: total,
		CostUSD: cost, Duration: ms * time.Millisecond}}
}

func tokens(total int64) guard.Step { return use(0, 0, total, 0, 0) }

var goOn = guard.Verdict{}

func TestCheck(t *testing.T) {
	type run struct {
		wait time.Duration // wall-clock milliseconds before the step
		step guard.Step
		want guard.Verdict
	}
	tests := []struct {
		name string
		opts budget.Options
		runs []run
	}{
		{
			name: "no limits",
			runs: []run{{step: tokens(1 << 40)}, {step: use(1<<40, 1<<40, 0, 1e9, 1e9)}},
		},
		{
			name: "maxSteps 3: the third check stops, and every later one",
			opts: budget.Options{MaxSteps: 3},
			runs: []run{{want: goOn}, {want: goOn}, {want: steps(3, 3)}, {want: steps(4, 3)}},
		},
		{
			name: "maxSteps 1",
			opts: budget.Options{MaxSteps: 1},
			runs: []run{{want: steps(1, 1)}},
		},
		{
			name: "total tokens: N-1 goes on, N stops",
			opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}},
			runs: []run{
				{step: tokens(60)},
				{step: tokens(39)},
				{step: tokens(1), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
				{step: tokens(0), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
			},
		},
		{
			name: "total tokens fall back to input plus output",
			opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}},
			runs: []run{
				{step: use(40, 9, 0, 0, 0)},
				{step: use(40, 10, 0, 0, 0)},
				{step: use(0, 1, 0, 0, 0), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
			},
		},
		{
			name: "input tokens",
			opts: budget.Options{MaxInputTokens: budget.Limit{Value: 10}},
			runs: []run{
				{step: use(9, 100, 0, 0, 0)},
				{step: use(1, 0, 0, 0, 0), want: spent(budget.MetricInputTokens, budget.CodeInputTokens, 10, 10)},
			},
		},
		{
			name: "output tokens, a fractional limit",
			opts: budget.Options{MaxOutputTokens: budget.Limit{Value: 10.5}},
			runs: []run{
				{step: use(100, 10, 0, 0, 0)},
				{step: use(0, 1, 0, 0, 0), want: spent(budget.MetricOutputTokens, budget.CodeOutputTokens, 11, 10.5)},
			},
		},
		{
			name: "cost",
			opts: budget.Options{MaxCostUSD: budget.Limit{Value: 0.5}},
			runs: []run{
				{step: use(0, 0, 0, 0.25, 0)},
				{step: use(0, 0, 0, 0.125, 0)},
				{step: use(0, 0, 0, 0.125, 0), want: spent(budget.MetricCostUSD, budget.CodeCostUSD, 0.5, 0.5)},
			},
		},
		{
			name: "odd usage numbers are ignored",
			opts: budget.Options{MaxCostUSD: budget.Limit{Value: 1}, MaxInputTokens: budget.Limit{Value: 1}},
			runs: []run{{step: use(-5, 0, 0, math.NaN(), 0)}, {step: use(0, 0, 0, math.Inf(1), 0)}, {step: use(0, 0, 0, -3, 0)}},
		},
		{
			name: "summed durations",
			opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}},
			runs: []run{
				{step: use(0, 0, 0, 0, 600)},
				{step: use(0, 0, 0, 0, 399)},
				{step: use(0, 0, 0, 0, 1), want: spent(budget.MetricDurationMs, budget.CodeDurationMs, 1000, 1000)},
			},
		},
		{
			name: "wall clock since the guard was made",
			opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}},
			runs: []run{
				{wait: 500},
				{wait: 499},
				{wait: 1, want: spent(budget.MetricDurationMs, budget.CodeDurationMs, 1000, 1000)},
			},
		},
		{
			name: "the larger of summed durations and the wall clock",
			opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}},
			runs: []run{
				{wait: 100, step: use(0, 0, 0, 0, 800)},
				{wait: 800, step: use(0, 0, 0, 0, 100)}, // wall 900, summed 900
				{wait: 50, step: use(0, 0, 0, 0, 0)},    // wall 950
				{wait: 10, step: use(0, 0, 0, 0, 100), want: spent(budget.MetricDurationMs, budget.CodeDurationMs, 1000, 1000)},
			},
		},
		{
			name: "wall clock in the stop evidence",
			opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}},
			runs: []run{{wait: 1500, step: use(0, 0, 0, 0, 1200), want: spent(budget.MetricDurationMs, budget.CodeDurationMs, 1500, 1000)}},
		},
		{
			name: "budgets in order: total, input, output, cost, duration",
			opts: budget.Options{
				MaxTotalTokens: budget.Limit{Value: 100}, MaxInputTokens: budget.Limit{Value: 10}, MaxOutputTokens: budget.Limit{Value: 10},
				MaxCostUSD: budget.Limit{Value: 1}, MaxDurationMs: budget.Limit{Value: 10},
			},
			runs: []run{
				{wait: 20, step: use(20, 20, 0, 2, 0), want: spent(budget.MetricInputTokens, budget.CodeInputTokens, 20, 10)},
				{step: use(0, 0, 100, 0, 0), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 140, 100)},
			},
		},
		{
			name: "output before cost before duration",
			opts: budget.Options{MaxOutputTokens: budget.Limit{Value: 10}, MaxCostUSD: budget.Limit{Value: 1}, MaxDurationMs: budget.Limit{Value: 10}},
			runs: []run{
				{step: use(0, 0, 0, 0, 10), want: spent(budget.MetricDurationMs, budget.CodeDurationMs, 10, 10)},
				{step: use(0, 0, 0, 1, 0), want: spent(budget.MetricCostUSD, budget.CodeCostUSD, 1, 1)},
				{step: use(0, 10, 0, 0, 0), want: spent(budget.MetricOutputTokens, budget.CodeOutputTokens, 10, 10)},
			},
		},
		{
			name: "budgets before max steps",
			opts: budget.Options{MaxSteps: 1, MaxCostUSD: budget.Limit{Value: 1}},
			runs: []run{{step: use(0, 0, 0, 1, 0), want: spent(budget.MetricCostUSD, budget.CodeCostUSD, 1, 1)}},
		},
		{
			name: "a shared warning ratio",
			opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}, WarnAt: 0.8},
			runs: []run{
				{step: tokens(79)},
				{step: tokens(1), want: warns(warn(budget.MetricTotalTokens, 80, 100))},
				{step: tokens(0), want: warns(warn(budget.MetricTotalTokens, 80, 100))},
				{step: tokens(19), want: warns(warn(budget.MetricTotalTokens, 99, 100))},
				{step: tokens(1), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
			},
		},
		{
			name: "warnings appear on stop verdicts, in metric order",
			opts: budget.Options{MaxSteps: 2, MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.5}, MaxInputTokens: budget.Limit{Value: 10},
				MaxTotalTokens: budget.Limit{Value: 100}, WarnAt: 0.9},
			runs: []run{
				{step: use(9, 0, 90, 0.5, 0), want: warns(warn(budget.MetricTotalTokens, 90, 100), warn(budget.MetricInputTokens, 9, 10), warn(budget.MetricCostUSD, 0.5, 1))},
				{step: use(0, 0, 5, 0, 0), want: steps(2, 2, warn(budget.MetricTotalTokens, 95, 100), warn(budget.MetricInputTokens, 9, 10), warn(budget.MetricCostUSD, 0.5, 1))},
				{step: use(1, 0, 0, 0, 0), want: spent(budget.MetricInputTokens, budget.CodeInputTokens, 10, 10, warn(budget.MetricTotalTokens, 96, 100), warn(budget.MetricCostUSD, 0.5, 1))},
			},
		},
		{
			name: "a limit's own ratio replaces the shared one",
			opts: budget.Options{MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.5}, MaxTotalTokens: budget.Limit{Value: 10}, WarnAt: 0.95},
			runs: []run{
				{step: use(0, 0, 9, 0.25, 0)},
				{step: use(0, 0, 0, 0.25, 0), want: warns(warn(budget.MetricCostUSD, 0.5, 1))},
			},
		},
		{
			name: "a ratio without a shared one",
			opts: budget.Options{MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.5}, MaxTotalTokens: budget.Limit{Value: 10}},
			runs: []run{{step: use(0, 0, 9, 0.75, 0), want: warns(warn(budget.MetricCostUSD, 0.75, 1))}},
		},
		{
			name: "warnAt 1 never warns",
			opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 10}, WarnAt: 1},
			runs: []run{{step: tokens(9)}, {step: tokens(1), want: spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 10, 10)}},
		},
		{
			name: "a wall-clock warning",
			opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000, WarnAt: 0.5}},
			runs: []run{{wait: 499}, {wait: 1, want: warns(warn(budget.MetricDurationMs, 500, 1000))}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			o := tt.opts
			if o.MaxDurationMs.Value > 0 {
				o.Now = c.Now
			} else {
				o.Now = noClock(t)
			}
			g := newGuard(t, o)
			for i, r := range tt.runs {
				c.advance(r.wait)
				got := testutil.Check(t, g, r.step)
				if diff := cmp.Diff(r.want, got); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestFeedback(t *testing.T) {
	for _, o := range []budget.Options{{MaxSteps: 1}, {MaxCostUSD: budget.Limit{Value: 0.01}}} {
		g := newGuard(t, o)
		v := testutil.Check(t, g, use(0, 0, 0, 1, 0))
		if !v.Stop || !guard.IsFault(v) || v.Feedback == "" {
			t.Errorf("with %+v: want a fault with feedback, got %#v", o, v)
		}
	}
}

func refuse(v guard.Verdict) guard.Decision {
	return guard.Decision{Reason: v.Reason, Code: v.Code, Detail: v.Detail, Evidence: v.Evidence,
		Feedback: v.Feedback, Detector: v.Detector}
}

func refuseSteps(n, limit int) guard.Decision {
	return refuse(finish(guard.Verdict{Reason: budget.ReasonMaxSteps, Code: budget.CodeMaxSteps,
		Detail:   fmt.Sprintf("%d steps are already recorded; the limit is %d", n, limit),
		Evidence: budget.StepsEvidence{Steps: n, Limit: limit}}, guard.PhasePreflight))
}

func refuseBudget(metric, code string, value, limit float64) guard.Decision {
	return refuse(finish(guard.Verdict{Reason: budget.ReasonBudget, Code: code,
		Detail:   fmt.Sprintf("%s has already reached its limit: %s of %s", metric, rule.FormatNumber(value), rule.FormatNumber(limit)),
		Evidence: budget.Evidence{Metric: metric, Value: value, Limit: limit}}, guard.PhasePreflight))
}

func TestPreflight(t *testing.T) {
	allow := guard.Decision{Allow: true}
	call := guard.ToolCall{Name: "search", Args: map[string]any{"q": 1}}
	think := guard.ToolCall{Name: "think"}
	tests := []struct {
		name     string
		opts     budget.Options
		recorded []guard.Step
		wait     time.Duration
		calls    []guard.ToolCall
		want     guard.Decision
	}{
		{name: "no limits", calls: []guard.ToolCall{call}, want: allow},
		{name: "max steps not reached", opts: budget.Options{MaxSteps: 2}, recorded: []guard.Step{{}}, calls: []guard.ToolCall{call}, want: allow},
		{name: "max steps reached", opts: budget.Options{MaxSteps: 2}, recorded: []guard.Step{{}, {}}, calls: []guard.ToolCall{call}, want: refuseSteps(2, 2)},
		{name: "max steps passed", opts: budget.Options{MaxSteps: 1}, recorded: []guard.Step{{}, {}}, calls: []guard.ToolCall{call}, want: refuseSteps(2, 1)},
		{name: "no calls are judged too", opts: budget.Options{MaxSteps: 1}, recorded: []guard.Step{{}}, want: refuseSteps(1, 1)},
		{name: "ignored tools are judged too", opts: budget.Options{MaxSteps: 1}, recorded: []guard.Step{{}}, calls: []guard.ToolCall{think}, want: refuseSteps(1, 1)},
		{name: "tokens below the limit", opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}}, recorded: []guard.Step{tokens(99)},
			calls: []guard.ToolCall{call}, want: allow},
		{name: "tokens at the limit", opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}}, recorded: []guard.Step{tokens(100)},
			calls: []guard.ToolCall{call}, want: refuseBudget(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
		{name: "budget before steps", opts: budget.Options{MaxSteps: 1, MaxCostUSD: budget.Limit{Value: 1}}, recorded: []guard.Step{use(0, 0, 0, 2, 0)},
			calls: []guard.ToolCall{call}, want: refuseBudget(budget.MetricCostUSD, budget.CodeCostUSD, 2, 1)},
		{name: "warnings on an allowed call", opts: budget.Options{MaxTotalTokens: budget.Limit{Value: 100}, WarnAt: 0.5}, recorded: []guard.Step{tokens(60)},
			calls: []guard.ToolCall{call}, want: guard.Decision{Allow: true, Warnings: []guard.Warning{warn(budget.MetricTotalTokens, 60, 100)}}},
		{name: "the wall clock before any step", opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}}, wait: 999, calls: []guard.ToolCall{call}, want: allow},
		{name: "the wall clock spent before any step", opts: budget.Options{MaxDurationMs: budget.Limit{Value: 1000}}, wait: 1000, calls: []guard.ToolCall{call},
			want: refuseBudget(budget.MetricDurationMs, budget.CodeDurationMs, 1000, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			o := tt.opts
			if o.MaxDurationMs.Value > 0 {
				o.Now = c.Now
			} else {
				o.Now = noClock(t)
			}
			g := newGuard(t, o)
			for _, s := range tt.recorded {
				testutil.Check(t, g, s)
			}
			c.advance(tt.wait)
			before := testutil.Snapshot(t, g, guard.SnapshotOptions{})
			for range 2 {
				if diff := cmp.Diff(tt.want, testutil.Preflight(t, g, tt.calls...)); diff != "" {
					t.Errorf("Preflight (-want +got):\n%s", diff)
				}
			}
			if after := testutil.Snapshot(t, g, guard.SnapshotOptions{}); string(before) != string(after) {
				t.Errorf("Preflight changed the state: %s, then %s", before, after)
			}
		})
	}
}

func TestNew(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		opts   budget.Options
		fields []string
	}{
		{opts: budget.Options{}},
		{opts: budget.Options{MaxSteps: 1, WarnAt: 1, MaxCostUSD: budget.Limit{Value: 1e-9, WarnAt: 1e-9}, MaxDurationMs: budget.Limit{Value: 1e300}}},
		{opts: budget.Options{MaxSteps: -1}, fields: []string{"MaxSteps"}},
		{opts: budget.Options{WarnAt: 1.5}, fields: []string{"WarnAt"}},
		{opts: budget.Options{WarnAt: -0.1}, fields: []string{"WarnAt"}},
		{opts: budget.Options{WarnAt: nan}, fields: []string{"WarnAt"}},
		{
			opts: budget.Options{
				MaxTotalTokens:  budget.Limit{Value: -1},
				MaxInputTokens:  budget.Limit{Value: nan},
				MaxOutputTokens: budget.Limit{Value: inf, WarnAt: 2},
				MaxCostUSD:      budget.Limit{Value: -inf},
				MaxDurationMs:   budget.Limit{Value: 1, WarnAt: nan},
			},
			fields: []string{"MaxTotalTokens.Value", "MaxInputTokens.Value", "MaxOutputTokens.Value", "MaxOutputTokens.WarnAt",
				"MaxCostUSD.Value", "MaxDurationMs.WarnAt"},
		},
	}
	for _, tt := range tests {
		d, err := budget.New(tt.opts)
		if tt.fields == nil {
			if err != nil || d == nil {
				t.Errorf("New(%+v) = %v, %v; want a detector", tt.opts, d, err)
			}
			continue
		}
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOption", tt.opts, err)
			continue
		}
		got := testutil.OptionFields(t, err, budget.Name)
		if diff := cmp.Diff(tt.fields, got); diff != "" {
			t.Errorf("New(%+v): invalid fields (-want +got):\n%s", tt.opts, diff)
		}
	}
}

func TestOptions(t *testing.T) {
	fp := func(o budget.Options) string { return rule.Fingerprint(newRule(t, o)).String() }
	c := newClock()
	same := [][]budget.Options{
		{{}, {WarnAt: 0.8}, {Now: c.Now}, {MaxCostUSD: budget.Limit{WarnAt: 0.5}}},
		{{MaxCostUSD: budget.Limit{Value: 1}, WarnAt: 0.8}, {MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.8}},
			{MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.8}, WarnAt: 0.3}},
	}
	for _, group := range same {
		for _, o := range group[1:] {
			if fp(o) != fp(group[0]) {
				t.Errorf("%+v and %+v have different fingerprints", o, group[0])
			}
		}
	}
	seen := map[string]budget.Options{}
	for _, o := range []budget.Options{
		{}, {MaxSteps: 50}, {MaxSteps: 51},
		{MaxTotalTokens: budget.Limit{Value: 1}}, {MaxInputTokens: budget.Limit{Value: 1}}, {MaxOutputTokens: budget.Limit{Value: 1}},
		{MaxCostUSD: budget.Limit{Value: 1}}, {MaxDurationMs: budget.Limit{Value: 1}}, {MaxDurationMs: budget.Limit{Value: 1, WarnAt: 0.5}},
	} {
		f := fp(o)
		if prev, dup := seen[f]; dup {
			t.Errorf("%+v and %+v have the same fingerprint", o, prev)
		}
		seen[f] = o
	}
	d := newRule(t, budget.Options{MaxSteps: 5, MaxCostUSD: budget.Limit{Value: 2}, MaxTotalTokens: budget.Limit{Value: 9, WarnAt: 0.5}, WarnAt: 0.8, Now: c.Now})
	want := budget.Options{MaxSteps: 5, MaxCostUSD: budget.Limit{Value: 2, WarnAt: 0.8}, MaxTotalTokens: budget.Limit{Value: 9, WarnAt: 0.5}}
	if diff := cmp.Diff(want, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if !d.OnlyLimits() {
		t.Error("OnlyLimits = false")
	}
}

// TestSnapshotRestoreContinues runs a guard and, from step cut on, a restored
// copy of it, with the same wall-clock waits, and compares their verdicts.
func TestSnapshotRestoreContinues(t *testing.T) {
	opts := budget.Options{MaxSteps: 8, MaxTotalTokens: budget.Limit{Value: 100}, MaxCostUSD: budget.Limit{Value: 1, WarnAt: 0.5},
		MaxDurationMs: budget.Limit{Value: 3000}, WarnAt: 0.7}
	type run struct {
		wait time.Duration
		step guard.Step
	}
	runs := []run{
		{100, use(10, 5, 0, 0.25, 0)}, {400, tokens(30)}, {200, use(0, 0, 0, 0.25, 50)}, {600, tokens(20)},
		{500, use(1, 1, 0, 0.125, 0)}, {800, tokens(1)}, {300, tokens(40)}, {100, tokens(0)}, {900, tokens(0)},
	}
	for cut := 0; cut <= len(runs); cut++ {
		c1 := newClock()
		o1 := opts
		o1.Now = c1.Now
		g1 := newGuard(t, o1)
		for _, r := range runs[:cut] {
			c1.advance(r.wait)
			testutil.Check(t, g1, r.step)
		}
		data := testutil.Snapshot(t, g1, guard.SnapshotOptions{})
		// Restore much later, elsewhere: the time in between does not count.
		c2 := newClock()
		c2.advance(1e7)
		o2 := opts
		o2.Now = c2.Now
		g2, err := guard.Restore(data, withIgnore(newRule(t, o2)))
		if err != nil {
			t.Fatalf("cut %d: Restore: %v", cut, err)
		}
		for i := cut; i < len(runs); i++ {
			c1.advance(runs[i].wait)
			c2.advance(runs[i].wait)
			v1, v2 := testutil.Check(t, g1, runs[i].step), testutil.Check(t, g2, runs[i].step)
			if diff := cmp.Diff(v1, v2); diff != "" {
				t.Errorf("cut %d, step %d (-saved +restored):\n%s", cut, i, diff)
			}
			if i == len(runs)-1 && !v1.Stop {
				t.Errorf("the run never stops: the test proves little")
			}
		}
	}
}

func TestSnapshotState(t *testing.T) {
	c := newClock()
	r := newRule(t, budget.Options{MaxDurationMs: budget.Limit{Value: 5000}, Now: c.Now})
	d := r.NewState().(runState)
	snap := func() string {
		t.Helper()
		b, err := d.Snapshot(guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := snap(); got != `{"wallClockMs":0}` {
		t.Errorf("fresh Snapshot = %s", got)
	}
	c.advance(1234)
	c.t = c.t.Add(500 * time.Microsecond)
	if got := snap(); got != `{"wallClockMs":1234.5}` {
		t.Errorf("Snapshot = %s", got)
	}
	// Only what Snapshot writes: no other key, none in another case or twice.
	for _, bad := range []string{`{"wallClockMs":4000,"future":true}`, `{"wallClockMs":4000,"WallClockMs":1}`,
		`{"wallClockMs":4000,"wallClockMs":4000}`, `{"wallclockms":4000}`} {
		if err := d.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s): no error", bad)
		}
	}
	if err := d.Restore([]byte(`{"wallClockMs":4000}`)); err != nil {
		t.Fatal(err)
	}
	if got := snap(); got != `{"wallClockMs":4000}` {
		t.Errorf("Snapshot after Restore = %s", got)
	}
	c.advance(999)
	d.Observe(&rule.Facts{Steps: 1})
	if d.Verdict().Stop {
		t.Errorf("stopped at 4999 ms of 5000")
	}
	c.advance(1)
	d.Observe(&rule.Facts{Steps: 2})
	if diff := cmp.Diff(budget.Evidence{Metric: budget.MetricDurationMs, Value: 5000, Limit: 5000}, d.Verdict().Evidence); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	// A new state of the same rule starts its own clock, whatever the
	// first one used.
	d = r.NewState().(runState)
	if got := snap(); got != `{"wallClockMs":0}` {
		t.Errorf("Snapshot of a new state = %s", got)
	}
	if err := d.Restore([]byte(`{"wallClockMs":100}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.Restore([]byte(`null`)); err != nil {
		t.Fatal(err)
	}
	if got := snap(); got != `{"wallClockMs":0}` {
		t.Errorf("Snapshot after Restore(null) = %s", got)
	}
	// A clock that goes backwards counts no time.
	c.advance(-10)
	if got := snap(); got != `{"wallClockMs":0}` {
		t.Errorf("Snapshot with a clock gone back = %s", got)
	}

	// Without a duration limit there is no state, and the clock is never read.
	d = newState(t, budget.Options{MaxSteps: 3, MaxCostUSD: budget.Limit{Value: 1}, Now: noClock(t)})
	if got := snap(); got != "null" {
		t.Errorf("Snapshot without a duration limit = %s", got)
	}
	for _, ok := range []string{`null`, ``, `{"wallClockMs":10}`} {
		if err := d.Restore([]byte(ok)); err != nil {
			t.Errorf("Restore(%s): %v", ok, err)
		}
	}
	d.Observe(&rule.Facts{Steps: 1})
	_ = d.Verdict()
	_ = d.Preflight(&rule.Facts{Phase: rule.PhasePreflight})
}

func TestRestoreRejects(t *testing.T) {
	c := newClock()
	d := newState(t, budget.Options{MaxDurationMs: budget.Limit{Value: 5000}, Now: c.Now})
	for _, bad := range []string{
		`[]`, `1`, `"x"`, `{`, `nul`, `{}`, `{"wallClockMs":null}`, `{"wallClockMs":-1}`, `{"wallClockMs":"1"}`,
		`{"wallClockMs":1e300}`, `{"wallClockMs":1e999}`, `{"wallClockMs":[1]}`, `{"wallClockMs":1}x`,
	} {
		if err := d.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s): no error", bad)
		}
	}
	if err := d.Restore([]byte(`{"wallClockMs":9223372036854}`)); err != nil {
		t.Errorf("Restore of the longest duration: %v", err)
	}
	timed := newRule(t, budget.Options{MaxDurationMs: budget.Limit{Value: 5000}, Now: c.Now})
	data := testutil.Snapshot(t, testutil.New(t, timed), guard.SnapshotOptions{})
	bad := []byte(strings.Replace(string(data), `"state":{"wallClockMs":0}`, `"state":{"wallClockMs":-5}`, 1))
	if string(bad) == string(data) {
		t.Fatalf("the snapshot holds no wall clock of 0: %s", data)
	}
	if _, err := guard.Restore(bad, guard.Config{Rules: []rule.Rule{timed}}); !errors.Is(err, guard.ErrInvalidState) {
		t.Errorf("guard.Restore with a negative wall clock = %v, want ErrInvalidState", err)
	}
}

func TestRestoreUnderOtherLimits(t *testing.T) {
	g := newGuard(t, budget.Options{MaxSteps: 2})
	testutil.Check(t, g, guard.Step{})
	if v := testutil.Check(t, g, guard.Step{}); v.Code != budget.CodeMaxSteps {
		t.Fatalf("want a stop at 2 steps, got %v", v)
	}
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	raised := budget.Options{MaxSteps: 4, MaxCostUSD: budget.Limit{Value: 1}}
	if _, err := guard.Restore(data, withIgnore(newRule(t, raised))); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Fatalf("Restore under other limits = %v, want ErrOptionsChanged", err)
	}
	o := withIgnore(newRule(t, raised))
	o.AllowLimitChanges = true
	g2, err := guard.Restore(data, o)
	if err != nil {
		t.Fatal(err)
	}
	if d := testutil.Preflight(t, g2); !d.Allow {
		t.Errorf("Preflight after raising the limit: %+v", d)
	}
	if diff := cmp.Diff(goOn, testutil.Check(t, g2, guard.Step{})); diff != "" {
		t.Errorf("step 3 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(steps(4, 4), testutil.Check(t, g2, guard.Step{})); diff != "" {
		t.Errorf("step 4 (-want +got):\n%s", diff)
	}
}

func TestResetEqualsFresh(t *testing.T) {
	opts := budget.Options{MaxSteps: 2, MaxDurationMs: budget.Limit{Value: 1000, WarnAt: 0.5}}
	c := newClock()
	opts.Now = c.Now
	g := newGuard(t, opts)
	c.advance(2000)
	testutil.Check(t, g, guard.Step{})
	testutil.Check(t, g, guard.Step{})
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := newGuard(t, opts)
	for i, wait := range []time.Duration{400, 100, 500} {
		c.advance(wait)
		if diff := cmp.Diff(testutil.Check(t, fresh, guard.Step{}), testutil.Check(t, g, guard.Step{})); diff != "" {
			t.Errorf("step %d (-fresh +reset):\n%s", i, diff)
		}
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	c := newClock()
	for _, o := range []budget.Options{
		{MaxSteps: 1 << 30},
		{MaxSteps: 1 << 30, MaxTotalTokens: budget.Limit{Value: 1e12}, MaxCostUSD: budget.Limit{Value: 1e6},
			MaxDurationMs: budget.Limit{Value: 1e12}, WarnAt: 0.8, Now: c.Now},
		{MaxDurationMs: budget.Limit{Value: 1e12}}, // time.Now
	} {
		d := newState(t, o)
		f := &rule.Facts{Steps: 10, Totals: rule.Totals{TotalTokens: 1000, CostUSD: 1}}
		if n := testing.AllocsPerRun(100, func() { d.Observe(f); _ = d.Verdict() }); n != 0 {
			t.Errorf("%+v: Observe+Verdict made %v allocations, want 0", o, n)
		}
		if n := testing.AllocsPerRun(100, func() { _ = d.Preflight(f) }); n != 0 {
			t.Errorf("%+v: Preflight made %v allocations, want 0", o, n)
		}
	}
}

func BenchmarkObserveVerdict(b *testing.B) {
	c := newClock()
	d := newState(b, budget.Options{MaxSteps: 1 << 30, MaxTotalTokens: budget.Limit{Value: 1e12}, MaxCostUSD: budget.Limit{Value: 1e6},
		MaxDurationMs: budget.Limit{Value: 1e12}, WarnAt: 0.8, Now: c.Now})
	f := &rule.Facts{Steps: 10, Totals: rule.Totals{TotalTokens: 1000, CostUSD: 1}}
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		if d.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

func BenchmarkObserveVerdictWallClock(b *testing.B) {
	d := newState(b, budget.Options{MaxSteps: 1 << 30, MaxDurationMs: budget.Limit{Value: 1e12}})
	f := &rule.Facts{Steps: 10}
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		_ = d.Verdict()
	}
}

func BenchmarkObserveVerdictWarning(b *testing.B) {
	d := newState(b, budget.Options{MaxTotalTokens: budget.Limit{Value: 1000}, WarnAt: 0.5})
	f := &rule.Facts{Steps: 10, Totals: rule.Totals{TotalTokens: 900}}
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		_ = d.Verdict()
	}
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first runs to its stop, the second still goes on and stops at exactly its
// own k-th identical step, and the first is still stopped after that.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	tests := []struct {
		name string
		opts budget.Options
		step guard.Step
		k    int
		want guard.Verdict // the stop at step k
	}{
		{"max steps", budget.Options{MaxSteps: 3}, guard.Step{Text: "x"}, 3, steps(3, 3)},
		{"total tokens", budget.Options{MaxTotalTokens: budget.Limit{Value: 100}}, tokens(25), 4,
			spent(budget.MetricTotalTokens, budget.CodeTotalTokens, 100, 100)},
		{"cost", budget.Options{MaxCostUSD: budget.Limit{Value: 1}}, use(0, 0, 0, 0.5, 0), 2,
			spent(budget.MetricCostUSD, budget.CodeCostUSD, 1, 1)},
		{"summed durations", budget.Options{MaxDurationMs: budget.Limit{Value: 1000}, Now: newClock().Now}, use(0, 0, 0, 0, 250), 4,
			spent(budget.MetricDurationMs, budget.CodeDurationMs, 1000, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRule(t, tt.opts)
			g1, g2 := testutil.New(t, r), testutil.New(t, r)
			for n, g := range []*guard.Guard{g1, g2} {
				for i := 1; i < tt.k; i++ {
					if v := testutil.Check(t, g, tt.step); v.Stop {
						t.Fatalf("guard %d stopped at step %d of %d: %v", n+1, i, tt.k, v)
					}
				}
				if diff := cmp.Diff(tt.want, testutil.Check(t, g, tt.step)); diff != "" {
					t.Errorf("guard %d, step %d (-want +got):\n%s", n+1, tt.k, diff)
				}
			}
			if v := testutil.Check(t, g1, tt.step); !v.Stop {
				t.Errorf("guard 1 went on after guard 2's run: %v", v)
			}
		})
	}
}
