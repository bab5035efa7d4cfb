package input_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

type tb interface {
	ruletest.TB
	Fatal(args ...any)
}

func newRule(t tb, o input.Options) *input.Rule {
	t.Helper()
	r, err := input.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newGuard returns a guard with only r, and cfg's other fields.
func newGuard(t tb, r rule.Rule, cfg ...guard.Config) *guard.Guard {
	t.Helper()
	var c guard.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Rules = []rule.Rule{r}
	g, err := guard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// report is a test report of 64 bytes: the shortest input that counts by
// default.
const report = "[Test Reports] An error occurred: module 'os' has no attribute 1"

// told is a step that answers input in words.
func told(in, text string) guard.Step { return guard.Step{Text: text, Input: in} }

// acted is a step that answers input with a call (a new one for each i).
func acted(in string, i int) guard.Step {
	return guard.Step{Text: "Let me fix it.", Input: in, ToolCalls: []guard.ToolCall{{Name: "edit", Args: map[string]int{"n": i}, Result: "ok"}}}
}

// failed is a step that answers input with a call that fails.
func failed(in string) guard.Step {
	return guard.Step{Input: in, ToolCalls: []guard.ToolCall{{Name: "run", Args: "tests", Err: errors.New("exit status 1")}}}
}

func run(t ruletest.TB, g *guard.Guard, ss ...guard.Step) []string {
	t.Helper()
	out := make([]string, len(ss))
	for i, s := range ss {
		v := ruletest.Check(t, g, s)
		switch {
		case v.Stop:
			out[i] = fmt.Sprintf("%s %d", v.Code, v.Evidence.(input.Evidence).Count)
		case len(v.Warnings) > 0:
			out[i] = v.Warnings[0].Code
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	short := report[:63]
	tests := []struct {
		name  string
		opts  input.Options
		steps []guard.Step
		want  []string
	}{
		{"twice goes on, the third time stops", input.Options{},
			[]guard.Step{told(report, "I changed timer.py."), told("", "Here is main.py."), told(report, "Now it works."), say("ok"), told(report, "Fixed.")},
			[]string{"", "", "", "", "REPEATED_INPUT 3"}},
		{"it stops again, with its count", input.Options{},
			[]guard.Step{told(report, "a"), told(report, "b"), told(report, "c"), told(report, "d")},
			[]string{"", "", "REPEATED_INPUT 3", "REPEATED_INPUT 4"}},
		{"an input one byte short of MinBytes does not count", input.Options{},
			[]guard.Step{told(short, "a"), told(short, "b"), told(short, "c"), told(short, "d")},
			[]string{"", "", "", ""}},
		{"MinBytes 1 counts a short input", input.Options{MinBytes: 1},
			[]guard.Step{told("yes", "a"), told("yes", "b"), told("yes", "c")},
			[]string{"", "", "REPEATED_INPUT 3"}},
		{"the input is compared as given", input.Options{},
			[]guard.Step{told(report, "a"), told(report+" ", "b"), told(" "+report, "c"), told(report, "d")},
			[]string{"", "", "", ""}},
		{"a step that calls a tool does not count", input.Options{},
			[]guard.Step{told(report, "a"), acted(report, 1), told(report, "b"), acted(report, 2), acted(report, 3)},
			[]string{"", "", "", "", ""}},
		{"a step whose call fails does not count either", input.Options{},
			[]guard.Step{told(report, "a"), failed(report), told(report, "b"), failed(report)},
			[]string{"", "", "", ""}},
		{"a step with a refused call does not count", input.Options{},
			[]guard.Step{told(report, "a"), {Input: report, Refused: []guard.ToolCall{{Name: "run", Args: "tests"}}}, told(report, "b"),
				{Input: report, Refused: []guard.ToolCall{{Name: "run", Args: "tests"}}}, told(report, "c")},
			[]string{"", "", "", "", "REPEATED_INPUT 3"}},
		{"a step without text counts", input.Options{},
			[]guard.Step{told(report, ""), told(report, ""), told(report, "")},
			[]string{"", "", "REPEATED_INPUT 3"}},
		{"other inputs between do not break the count", input.Options{},
			[]guard.Step{told(report, "a"), told(strings.Repeat("x", 64), "b"), told(report, "c"), told(strings.Repeat("y", 64), "d"), told(report, "e")},
			[]string{"", "", "", "", "REPEATED_INPUT 3"}},
		{"an input that left the window does not count", input.Options{},
			[]guard.Step{told(report, "a"), say("1"), say("2"), say("3"), say("4"), say("5"), say("6"), say("7"), say("8"), say("9"), told(report, "b"), told(report, "c")},
			[]string{"", "", "", "", "", "", "", "", "", "", "", ""}},
		{"the oldest input in the window counts", input.Options{},
			[]guard.Step{told(report, "a"), say("1"), say("2"), say("3"), say("4"), say("5"), say("6"), say("7"), told(report, "b"), told(report, "c")},
			[]string{"", "", "", "", "", "", "", "", "", "REPEATED_INPUT 3"}},
		{"steps that do not count hold a place in the window", input.Options{Window: 3},
			[]guard.Step{told(report, "a"), acted(report, 1), told(report, "b"), told(report, "c")},
			[]string{"", "", "", ""}},
		{"threshold 2 in a window of 2", input.Options{Threshold: 2, Window: 2},
			[]guard.Step{told(report, "a"), say("b"), told(report, "c"), told(report, "d")},
			[]string{"", "", "", "REPEATED_INPUT 2"}},
		{"with Warn, the second warns and the third stops", input.Options{Warn: true},
			[]guard.Step{told(report, "a"), acted(report, 1), told(report, "b"), told(report, "c")},
			[]string{"", "", input.WarningCode, "REPEATED_INPUT 3"}},
		{"threshold 2 never warns", input.Options{Threshold: 2, Warn: true},
			[]guard.Step{told(report, "a"), told(report, "b")},
			[]string{"", "REPEATED_INPUT 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newRule(t, tt.opts))
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps...)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func say(s string) guard.Step { return guard.Step{Text: s} }

// TestIgnoredCallsAreNoCall: a step whose only call is of a tool the guard
// ignores answers in words.
func TestIgnoredCallsAreNoCall(t *testing.T) {
	ping := func(in string) guard.Step {
		return guard.Step{Input: in, ToolCalls: []guard.ToolCall{{Name: "heartbeat", Result: "ok"}}}
	}
	g := newGuard(t, newRule(t, input.Options{}), guard.Config{Ignore: []string{"heartbeat"}})
	if diff := cmp.Diff([]string{"", "", "REPEATED_INPUT 3"}, run(t, g, ping(report), ping(report), ping(report))); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	g = newGuard(t, newRule(t, input.Options{}))
	if diff := cmp.Diff([]string{"", "", ""}, run(t, g, ping(report), ping(report), ping(report))); diff != "" {
		t.Errorf("without Ignore (-want +got):\n%s", diff)
	}
}

func TestVerdict(t *testing.T) {
	g := newGuard(t, newRule(t, input.Options{Warn: true}))
	secret := "My password is hunter2, and the tests still fail the same way: 1 failed."
	vs := []guard.Verdict{ruletest.Check(t, g, told(secret, "a")), ruletest.Check(t, g, told(secret, "b")), ruletest.Check(t, g, told(secret, "c"))}
	if len(vs[0].Warnings) != 0 || vs[0].Stop {
		t.Errorf("first: %v", vs[0])
	}
	if len(vs[1].Warnings) != 1 || vs[1].Warnings[0].Code != input.WarningCode || vs[1].Warnings[0].Feedback == "" {
		t.Fatalf("second: %v, want a warning with feedback", vs[1])
	}
	v := vs[2]
	want := input.Evidence{Count: 3, Threshold: 3, Window: 10, StepIndexes: []int{0, 1, 2}, InputBytes: len(secret)}
	if diff := cmp.Diff(want, v.Evidence); diff != "" || v.Reason != input.ReasonRepeatedInput || !guard.IsFault(v) {
		t.Errorf("stop %v (-want +got evidence):\n%s", v, diff)
	}
	if v.Feedback == "" || v.Feedback != v.Evidence.(input.Evidence).Feedback() {
		t.Errorf("feedback = %q", v.Feedback)
	}
	for _, s := range []string{v.Feedback, v.Detail, vs[1].Warnings[0].Feedback, vs[1].Warnings[0].Detail} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "password") {
			t.Errorf("%q repeats the input", s)
		}
	}
	if !ruletest.Preflight(t, g, guard.ToolCall{Name: "x"}).Allow {
		t.Error("preflight refused")
	}
}

func TestOptionsAndRestore(t *testing.T) {
	for _, tt := range []struct {
		opts   input.Options
		fields []string
	}{
		{input.Options{Threshold: 1}, []string{"Threshold"}},
		{input.Options{Window: 1}, []string{"Window"}},
		{input.Options{Window: input.MaxWindow + 1}, []string{"Window"}},
		{input.Options{Window: 3, Threshold: 4}, []string{"Threshold"}},
		{input.Options{MinBytes: -1}, []string{"MinBytes"}},
		{input.Options{MinBytes: input.MaxMinBytes + 1}, []string{"MinBytes"}},
		{input.Options{Threshold: 1, MinBytes: -1}, []string{"Threshold", "MinBytes"}},
	} {
		_, err := input.New(tt.opts)
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v): %v", tt.opts, err)
			continue
		}
		if diff := cmp.Diff(tt.fields, testutil.OptionFields(t, err, input.Name)); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	d := newRule(t, input.Options{})
	if diff := cmp.Diff(input.Options{Threshold: 3, Window: 10, MinBytes: 64}, d.Options()); diff != "" || d.Name() != "input" || d.Priority() != 675 {
		t.Errorf("Options %v, Name %q, Priority %d", d.Options(), d.Name(), d.Priority())
	}
	const k = `"0123456789abcdef0123456789abcdef"`
	bad := []string{``, `{}`, `{"inputs":[],"steps":[]}`, `{"inputs":[` + k + `],"steps":[]}`,
		`{"inputs":[` + k + `,null],"steps":[2,1]}`, `{"inputs":[null],"steps":[-1]}`,
		`{"inputs":["00000000000000000000000000000000"],"steps":[0]}`,
		`{"inputs":[null,null,null,null],"steps":[0,1,2,3]}`, `{"inputs":[null],"steps":[0],"extra":1}`}
	small := newRule(t, input.Options{Window: 3, Threshold: 2})
	g := newGuard(t, small)
	ruletest.Check(t, g, told(report, "x"))
	ruletest.RejectsKeeping(t, small, ruletest.StateOf(t, g, input.Name, guard.SnapshotOptions{}), bad)
	st := ruletest.Saver(t, d)
	good := `{"inputs":[null,` + k + `],"steps":[4,7]}`
	if err := st.Restore([]byte(good)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != good {
		t.Errorf("snapshot after restore = %s", got)
	}
	if err := st.Restore([]byte("null")); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != "null" {
		t.Errorf("snapshot after restoring null = %s", got)
	}
}

// TestCheckBounds: a restored window may not hold more steps than the guard
// recorded, nor a step index beyond them.
func TestCheckBounds(t *testing.T) {
	r := newRule(t, input.Options{})
	st := ruletest.Saver(t, r)
	if err := st.Restore([]byte(`{"inputs":[null,null],"steps":[0,5]}`)); err != nil {
		t.Fatal(err)
	}
	b := st.(rule.Bounded)
	for _, c := range []struct {
		steps int
		ok    bool
	}{{1, false}, {5, false}, {6, true}} {
		if err := b.CheckBounds(rule.Counters{Steps: c.steps}); (err == nil) != c.ok {
			t.Errorf("CheckBounds(steps %d) = %v, want ok %v", c.steps, err, c.ok)
		}
	}
}

func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.Step{told(report, "a"), told(report, ""), told(strings.Repeat("z", 80), "b"), told("hi", "c"),
		acted(report, 1), failed(report), say("d"), {}}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(2, 6).Draw(t, "window")
		opts := input.Options{Window: w, Threshold: rapid.IntRange(2, w).Draw(t, "threshold"), Warn: rapid.Bool().Draw(t, "warn"),
			MinBytes: rapid.SampledFrom([]int{0, 1}).Draw(t, "minBytes")}
		ss := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 25).Draw(t, "steps")
		cut := rapid.IntRange(0, len(ss)).Draw(t, "cut")
		orig := newGuard(t, newRule(t, opts))
		run(t, orig, ss[:cut]...)
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "os") && strings.Contains(string(data), "attribute") {
			t.Fatalf("the snapshot holds the input: %s", data)
		}
		restored, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newRule(t, opts)}})
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		if diff := cmp.Diff(run(t, orig, ss[cut:]...), run(t, restored, ss[cut:]...)); diff != "" {
			t.Fatalf("after restore (-orig +restored):\n%s", diff)
		}
	})
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: each counts its own inputs.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	g1, g2 := ruletest.Pair(t, guard.Config{Rules: []rule.Rule{newRule(t, input.Options{})}})
	var got1, got2 []string
	for range 2 {
		got1 = append(got1, run(t, g1, told(report, "a"))...)
		got2 = append(got2, run(t, g2, told(report, "a"))...)
	}
	got1 = append(got1, run(t, g1, told(report, "a"))...)
	got2 = append(got2, run(t, g2, acted(report, 1))...)
	if diff := cmp.Diff([]string{"", "", "REPEATED_INPUT 3"}, got1); diff != "" {
		t.Errorf("first guard (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "", ""}, got2); diff != "" {
		t.Errorf("second guard (-want +got):\n%s", diff)
	}
}

// TestSummary: the summary counts the window's steps and its most repeated
// counted input.
func TestSummary(t *testing.T) {
	r := newRule(t, input.Options{})
	g := newGuard(t, r)
	run(t, g, told(report, "a"), acted(report, 1), told(report, "b"), say("c"))
	st := ruletest.Saver(t, r)
	if err := st.Restore([]byte(ruletest.StateOf(t, g, input.Name, guard.SnapshotOptions{}))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(input.Summary{Steps: 4, MaxCount: 2}, st.(rule.Summarizer).Summary()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// TestRealTraces runs the rule alone on every labelled trace: it stops the
// three ChatDev runs whose test report comes back each time, where the
// report is told the third time, and no healthy run.
func TestRealTraces(t *testing.T) {
	want := map[string]int{ // the line of the first stop, 1-based; 0: none
		"chatdev-backgroundremoval.jsonl": 12,
		"chatdev-poker1.jsonl":            17,
		"chatdev-timer.jsonl":             26,
		// The same expert feedback three times, but on steps with calls.
		"mint-claude2-fbgpt4-alfworld-heatmug.jsonl": 0,
	}
	stopped := ruletest.FirstStops(t, ruletest.Traces(t), func() *guard.Guard { return newGuard(t, newRule(t, input.Options{})) }, want)
	t.Logf("%d runs stopped by the rule alone", stopped)
}
