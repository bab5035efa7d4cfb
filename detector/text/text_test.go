package text_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

type tb interface {
	ruletest.TB
	Fatal(args ...any)
}

func newDetector(t tb, o text.Options) *text.Rule {
	t.Helper()
	d, err := text.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func say(s string) guard.Step { return guard.Step{Text: s} }

// act is a step with text and a call: a new outcome for each i.
func act(s string, i int) guard.Step {
	return guard.Step{Text: s, ToolCalls: []guard.ToolCall{{Name: "transfer", Args: map[string]int{"n": i}, Result: "ok"}}}
}

// act5 is a step with text and five calls, the same ones each time: one more
// than a step's remembered outcomes.
func act5(s string) guard.Step {
	st := guard.Step{Text: s}
	for i := range text.MaxStepOutcomes + 1 {
		st.ToolCalls = append(st.ToolCalls, guard.ToolCall{Name: "read", Args: map[string]int{"n": i}, Result: "same"})
	}
	return st
}

// actRes is a step with text and a call with arguments i that returns r.
func actRes(s string, i int, r string) guard.Step {
	return guard.Step{Text: s, ToolCalls: []guard.ToolCall{{Name: "lookup", Args: map[string]int{"n": i}, Result: r}}}
}

// fail is a step with text and a new call that fails.
func fail(s string, i int) guard.Step {
	return guard.Step{Text: s, ToolCalls: []guard.ToolCall{{Name: "run", Args: map[string]int{"n": i}, Err: errors.New("exit status 1")}}}
}

// failAs is a step with text and a call that fails with msg.
func failAs(s, msg string) guard.Step {
	return guard.Step{Text: s, ToolCalls: []guard.ToolCall{{Name: "python", Args: map[string]string{"file": "repro.py"}, Err: errors.New(msg)}}}
}

// refused is a step with text whose call the guard refused.
func refused(s string) guard.Step {
	return guard.Step{Text: s, Refused: []guard.ToolCall{{Name: "search", Args: map[string]string{"q": "loopguard"}}}}
}

// newGuard returns a guard with only r.
func newGuard(t tb, r rule.Rule) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func run(t ruletest.TB, g *guard.Guard, ss ...guard.Step) []string {
	t.Helper()
	out := make([]string, len(ss))
	for i, s := range ss {
		if v := ruletest.Check(t, g, s); v.Stop {
			out[i] = fmt.Sprintf("%s %d", v.Code, v.Evidence.(text.Evidence).Count)
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	const hold = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
	tests := []struct {
		name  string
		opts  text.Options
		steps []guard.Step
		want  []string
	}{
		{"twice goes on, the third time stops", text.Options{},
			[]guard.Step{say(hold), say("x"), say(hold), say("y"), say(hold)},
			[]string{"", "", "", "", "REPEATED_TEXT 3"}},
		{"the same message after each call that returns the same: the first comments on a new result", text.Options{},
			[]guard.Step{say(hold), act("", 1), say(hold), act("", 2), say(hold), act("", 3), say(hold)},
			[]string{"", "", "", "", "", "", "REPEATED_TEXT 3"}},
		{"a text alone right after a new result is a comment", text.Options{},
			[]guard.Step{actRes("", 1, "a"), say("x"), actRes("", 2, "b"), say("x"), actRes("", 3, "c"), say("x"), actRes("", 4, "d"), say("x")},
			[]string{"", "", "", "", "", "", "", ""}},
		{"after a result the window had, it counts", text.Options{Threshold: 2},
			[]guard.Step{actRes("", 1, "a"), say("x"), actRes("", 2, "a"), say("x"), actRes("", 3, "a"), say("x")},
			[]string{"", "", "", "", "", "REPEATED_TEXT 2"}},
		{"a comment comes right after the result", text.Options{Threshold: 2},
			[]guard.Step{actRes("", 1, "a"), say("y"), say("x"), actRes("", 2, "b"), say("z"), say("x")},
			[]string{"", "", "", "", "", "REPEATED_TEXT 2"}},
		{"a step with a call is no comment", text.Options{Threshold: 2},
			[]guard.Step{actRes("", 1, "a"), fail("x", 1), actRes("", 2, "b"), fail("x", 2)},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"a result of a step the window let go is new again", text.Options{Window: 3, Threshold: 2},
			[]guard.Step{actRes("", 1, "a"), say("y"), say("x"), actRes("", 2, "a"), say("x")},
			[]string{"", "", "", "", ""}},
		{"a result of the oldest step in the window is not new", text.Options{Window: 4, Threshold: 2},
			[]guard.Step{actRes("", 1, "a"), say("y"), say("x"), actRes("", 2, "a"), say("x")},
			[]string{"", "", "", "", "REPEATED_TEXT 2"}},
		{"a failure that moved is news: the same script misses another module", text.Options{Threshold: 2},
			[]guard.Step{failAs("Run it again.", "No module named numpy"), failAs("Run it again.", "No module named pytz"),
				failAs("Run it again.", "No module named scipy"), failAs("Run it again.", "No module named scipy")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"the first failure is no news", text.Options{Threshold: 2},
			[]guard.Step{say("a"), failAs("Run it again.", "No module named numpy"), say("b"), failAs("Run it again.", "No module named numpy")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"numbers do not move a failure", text.Options{Threshold: 2},
			[]guard.Step{failAs("Run it again.", "line 4: syntax error"), failAs("Run it again.", "line 3: syntax error")},
			[]string{"", "REPEATED_TEXT 2"}},
		{"a second failure of one step is news", text.Options{Threshold: 2},
			[]guard.Step{{Text: "x", ToolCalls: []guard.ToolCall{{Name: "a", Args: 1, Err: errors.New("no a")}, {Name: "b", Args: 1, Err: errors.New("no b")}}},
				failAs("x", "no c"), failAs("x", "no c"), failAs("x", "no c")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"a failure of a step the window let go is news again", text.Options{Window: 3, Threshold: 2},
			[]guard.Step{failAs("", "no a"), failAs("", "no b"), say("x"), failAs("x", "no a")},
			[]string{"", "", "", ""}},
		{"a failure of the oldest step in the window is not", text.Options{Window: 4, Threshold: 2},
			[]guard.Step{failAs("", "no a"), failAs("", "no b"), say("x"), failAs("x", "no a")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"a failure a step in the window had is no news when the first to have it leaves", text.Options{Window: 3, Threshold: 2},
			[]guard.Step{failAs("", "no a"), failAs("", "no b"), failAs("x", "no a"), failAs("x", "no a")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"nor is an outcome", text.Options{Window: 3, Threshold: 2},
			[]guard.Step{act("", 1), act("", 2), act("x", 1), act("x", 1)},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"a failed call returns nothing new", text.Options{Threshold: 2},
			[]guard.Step{fail("", 1), say("x"), fail("", 2), say("x")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"case and white space do not count", text.Options{},
			[]guard.Step{say("Sorry, could you rephrase?"), say("sorry,  could you REPHRASE?"), say(" Sorry, could you rephrase? ")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"the same answer to the same message does not count", text.Options{},
			[]guard.Step{{Text: "Hello! How can I help?", Input: "hi"}, {Text: "Hello! How can I help?", Input: "hi"},
				{Text: "Hello! How can I help?", Input: "hi"}, {Text: "Hello! How can I help?", Input: "hi"}},
			[]string{"", "", "", ""}},
		{"the same answer to changing messages counts", text.Options{},
			[]guard.Step{{Text: "Sorry, could you rephrase?", Input: "change my flight"}, {Text: "Sorry, could you rephrase?", Input: "move it to Friday"},
				{Text: "Sorry, could you rephrase?", Input: "please"}},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"steps without text do not count", text.Options{},
			[]guard.Step{act("", 1), act("", 2), act("", 3), act("", 4)},
			[]string{"", "", "", ""}},
		{"narration on steps that each bring a new outcome does not count", text.Options{},
			[]guard.Step{act("Run reproduction script.", 1), act("Edit the file.", 2), act("Run reproduction script.", 3),
				act("", 4), act("Run reproduction script.", 5), act("Run reproduction script.", 6)},
			[]string{"", "", "", "", "", ""}},
		{"a preamble before each new search does not count", text.Options{},
			[]guard.Step{act("Let me search for more information.", 1), act("Let me search for more information.", 2),
				act("Let me search for more information.", 3), act("Let me search for more information.", 4)},
			[]string{"", "", "", ""}},
		{"a call whose outcome the window holds brings nothing new", text.Options{},
			[]guard.Step{act("Let me try again.", 1), act("Let me try again.", 1), act("Let me try again.", 1), act("Let me try again.", 1)},
			[]string{"", "", "", "REPEATED_TEXT 3"}},
		{"failed calls bring nothing new", text.Options{},
			[]guard.Step{fail("Let me try again.", 1), fail("Let me try again.", 2), fail("Let me try again.", 3)},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"one new outcome among seen ones is progress", text.Options{Threshold: 2},
			[]guard.Step{act("x", 1), say("x"), {Text: "x", ToolCalls: []guard.ToolCall{
				{Name: "transfer", Args: map[string]int{"n": 1}, Result: "ok"}, {Name: "transfer", Args: map[string]int{"n": 2}, Result: "ok"}}}},
			[]string{"", "", ""}},
		{"a new outcome past the fourth call of a step is kept", text.Options{Threshold: 2},
			[]guard.Step{act5("x"), act5("x"), act5("x"), act5("x")},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"an outcome of the step the window lets go is new again", text.Options{Window: 3, Threshold: 2},
			[]guard.Step{act("x", 1), say("y"), say("x"), act("x", 1)},
			[]string{"", "", "", ""}},
		{"an outcome of the oldest step in the window is not new", text.Options{Window: 4, Threshold: 2},
			[]guard.Step{act("x", 1), say("y"), say("x"), act("x", 1)},
			[]string{"", "", "", "REPEATED_TEXT 2"}},
		{"a speaker label is no text", text.Options{},
			[]guard.Step{say("[flights_refunder]"), act("[flights_refunder]", 1), say(" [flights_refunder] "), say("<coder>"),
				say("<coder>"), say("<coder>"), say("[gpt-4o.mini]"), say("[gpt-4o.mini]"), say("[gpt-4o.mini]"),
				say("[" + strings.Repeat("a", 32) + "]"), say("[" + strings.Repeat("a", 32) + "]"), say("[" + strings.Repeat("a", 32) + "]")},
			[]string{"", "", "", "", "", "", "", "", "", "", "", ""}},
		{"a name of 33 bytes between brackets is text", text.Options{},
			[]guard.Step{say("[" + strings.Repeat("a", 33) + "]"), say("[" + strings.Repeat("a", 33) + "]"), say("[" + strings.Repeat("a", 33) + "]")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"a sentence between brackets is text", text.Options{},
			[]guard.Step{say("[You are being transferred to a human agent. Please hold on.]"), act("", 1),
				say("[You are being transferred to a human agent. Please hold on.]"), act("", 2),
				say("[You are being transferred to a human agent. Please hold on.]"), act("", 3),
				say("[You are being transferred to a human agent. Please hold on.]")},
			[]string{"", "", "", "", "", "", "REPEATED_TEXT 3"}},
		{"words between angle brackets are text", text.Options{},
			[]guard.Step{say("<Sorry, I cannot help with that request.>"), say("<Sorry, I cannot help with that request.>"),
				say("<Sorry, I cannot help with that request.>")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"two words between brackets are text", text.Options{},
			[]guard.Step{say("[Flight Agent]"), say("[Flight Agent]"), say("[Flight Agent]")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"a word and a colon is text", text.Options{},
			[]guard.Step{say("Thought:"), say("Thought:"), say("Thought:"), say("planner:"), say("planner:"), say("planner:")},
			[]string{"", "", "REPEATED_TEXT 3", "", "", "REPEATED_TEXT 3"}},
		{"empty brackets are text", text.Options{},
			[]guard.Step{say("[]"), say("[]"), say("[]")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"a label with words after it is text", text.Options{},
			[]guard.Step{say("[agent] Sorry, could you rephrase?"), say("[agent] Sorry, could you rephrase?"), say("[agent] Sorry, could you rephrase?")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"a sentence ending in a colon is text", text.Options{},
			[]guard.Step{say("Here is the plan:"), say("Here is the plan:"), say("Here is the plan:")},
			[]string{"", "", "REPEATED_TEXT 3"}},
		{"a step with a refused call does not count", text.Options{},
			[]guard.Step{say("Let me search."), refused("Let me search."), refused("Let me search."), refused("Let me search."), say("Let me search.")},
			[]string{"", "", "", "", ""}},
		{"a text that left the window does not count", text.Options{},
			[]guard.Step{say("a"), say("1"), say("2"), say("3"), say("4"), say("5"), say("6"), say("7"), say("8"), say("9"), say("a"), say("a")},
			[]string{"", "", "", "", "", "", "", "", "", "", "", ""}},
		{"the oldest text in the window counts", text.Options{},
			[]guard.Step{say("a"), say("1"), say("2"), say("3"), say("4"), say("5"), say("6"), say("7"), say("a"), say("a")},
			[]string{"", "", "", "", "", "", "", "", "", "REPEATED_TEXT 3"}},
		{"it stops again, with its count", text.Options{},
			[]guard.Step{say("x"), say("x"), say("x"), say("x")},
			[]string{"", "", "REPEATED_TEXT 3", "REPEATED_TEXT 4"}},
		{"threshold 4 in a window of 5", text.Options{Threshold: 4, Window: 5},
			[]guard.Step{say("x"), say("y"), say("x"), say("x"), say("x")},
			[]string{"", "", "", "", "REPEATED_TEXT 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newDetector(t, tt.opts))
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps...)); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerdictAndWarning(t *testing.T) {
	g := newGuard(t, newDetector(t, text.Options{Warn: true}))
	secret := "My password is hunter2."
	vs := []guard.Verdict{ruletest.Check(t, g, say(secret)), ruletest.Check(t, g, fail(secret, 1)), ruletest.Check(t, g, say(secret))}
	if len(vs[0].Warnings) != 0 {
		t.Errorf("first: %v", vs[0])
	}
	if len(vs[1].Warnings) != 1 || vs[1].Warnings[0].Code != text.WarningCode || vs[1].Warnings[0].Feedback == "" {
		t.Errorf("second: %v, want a warning with feedback", vs[1])
	}
	v := vs[2]
	want := text.Evidence{Count: 3, Threshold: 3, Window: 10, StepIndexes: []int{0, 1, 2}, TextPreview: "my password is hunter2."}
	if diff := cmp.Diff(want, v.Evidence); diff != "" || v.Reason != text.ReasonRepeatedText || !guard.IsFault(v) {
		t.Errorf("stop %v (-want +got evidence):\n%s", v, diff)
	}
	if v.Feedback == "" || v.Feedback != v.Evidence.(text.Evidence).Feedback() {
		t.Errorf("feedback = %q", v.Feedback)
	}
	for _, w := range append([]string{v.Feedback}, vs[1].Warnings[0].Feedback) {
		if len(w) > 0 && (contains(w, "hunter2") || contains(w, "password")) {
			t.Errorf("feedback %q repeats the text", w)
		}
	}
	if ruletest.Preflight(t, g, guard.ToolCall{Name: "x"}).Allow != true {
		t.Error("preflight refused")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestOptionsAndRestore(t *testing.T) {
	for _, tt := range []struct {
		opts   text.Options
		fields []string
	}{
		{text.Options{Threshold: 1}, []string{"Threshold"}},
		{text.Options{Window: 1}, []string{"Window"}},
		{text.Options{Window: 3, Threshold: 4}, []string{"Threshold"}},
		{text.Options{Long: 1}, []string{"Long"}},
		{text.Options{Long: 4}, []string{"Long"}},
		{text.Options{LongBytes: -1}, []string{"LongBytes"}},
		{text.Options{Threshold: 1, LongBytes: -1}, []string{"Threshold", "LongBytes"}},
	} {
		_, err := text.New(tt.opts)
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v): %v", tt.opts, err)
			continue
		}
		if diff := cmp.Diff(tt.fields, testutil.OptionFields(t, err, text.Name)); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	d := newDetector(t, text.Options{})
	if diff := cmp.Diff(text.Options{Threshold: 3, Window: 10, Long: 2, LongBytes: 200}, d.Options()); diff != "" || d.Name() != "text" || d.Priority() != 625 {
		t.Errorf("Options %v, Name %q, Priority %d", d.Options(), d.Name(), d.Priority())
	}
	const k = `"0123456789abcdef0123456789abcdef"`
	bad := []string{``, `{}`, `{"texts":[],"steps":[]}`, `{"texts":[` + k + `],"steps":[]}`,
		`{"texts":[` + k + `,null],"steps":[2,1]}`, `{"texts":[null],"steps":[-1]}`,
		`{"texts":["00000000000000000000000000000000"],"steps":[0]}`,
		`{"texts":[null],"steps":[0],"lastInput":"00000000000000000000000000000000"}`,
		`{"texts":[null],"steps":[0],"outcomes":[]}`, `{"texts":[null],"steps":[0],"outcomes":[""]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `",""]}`, `{"texts":[null],"steps":[0],"outcomes":["not base64!"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `="]}`, `{"texts":[null],"steps":[0],"outcomes":["AAEC"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1, 2, 3, 4, 5) + `"]}`, `{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(0) + `"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1, 1) + `"]}`,
		`{"texts":[null],"steps":[0],"results":[""]}`, `{"texts":[null],"steps":[0],"results":["` + testutil.Sums(1) + `"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `"],"results":[]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `"],"results":["` + testutil.Sums(1, 2) + `"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `"],"results":["` + testutil.Sums(0) + `"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `"],"results":["not base64!"]}`,
		`{"texts":[null],"steps":[0],"outcomes":["` + testutil.Sums(1) + `"],"results":[""]}`,
		`{"texts":[null],"steps":[0],"failures":[""]}`, `{"texts":[null],"steps":[0],"failures":[]}`,
		`{"texts":[null],"steps":[0],"failures":["` + testutil.Sums(0) + `"]}`, `{"texts":[null],"steps":[0],"failures":["` + testutil.Sums(1, 1) + `"]}`,
		`{"texts":[null],"steps":[0],"failures":["` + testutil.Sums(1, 2, 3, 4, 5) + `"]}`, `{"texts":[null],"steps":[0],"failures":["AAEC"]}`}
	small := newDetector(t, text.Options{Window: 3, Threshold: 2})
	g := newGuard(t, small)
	ruletest.Check(t, g, say("x"))
	ruletest.RejectsKeeping(t, small, ruletest.StateOf(t, g, text.Name, guard.SnapshotOptions{}), bad)
	st := ruletest.Saver(t, d)
	good := `{"texts":[null,` + k + `],"steps":[4,7],"lastInput":` + k + `}`
	if err := st.Restore([]byte(good)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != good {
		t.Errorf("snapshot after restore = %s", got)
	}
	withLong := `{"texts":[` + k + `,null,` + k + `],"steps":[4,6,7],"long":[0,2]}`
	if err := st.Restore([]byte(withLong)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != withLong {
		t.Errorf("snapshot after restore = %s", got)
	}
	ruletest.RejectsKeeping(t, d, withLong, []string{
		`{"texts":[` + k + `],"steps":[0],"long":[]}`, `{"texts":[` + k + `],"steps":[0],"long":[1]}`,
		`{"texts":[` + k + `],"steps":[0],"long":[-1]}`, `{"texts":[` + k + `,` + k + `],"steps":[0,1],"long":[1,0]}`,
		`{"texts":[` + k + `,` + k + `],"steps":[0,1],"long":[0,0]}`, `{"texts":[null],"steps":[0],"long":[0]}`})
	ruletest.RejectsKeeping(t, newDetector(t, text.Options{Long: 3}), "null", []string{`{"texts":[` + k + `],"steps":[0],"long":[0]}`})
	withOutcomes := `{"texts":[null,` + k + `],"steps":[4,7],"outcomes":["` + testutil.Sums(1, 2, 3, 4) + `",""],"lastInput":` + k + `}`
	if err := st.Restore([]byte(withOutcomes)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != withOutcomes {
		t.Errorf("snapshot after restore = %s", got)
	}
	withResults := `{"texts":[null,null,` + k + `],"steps":[4,5,7],"outcomes":["` + testutil.Sums(1, 2) + `","` + testutil.Sums(3) + `",""],` +
		`"results":["` + testutil.Sums(0, 5) + `","",""]}`
	if err := st.Restore([]byte(withResults)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != withResults {
		t.Errorf("snapshot after restore = %s", got)
	}
	withFailures := `{"texts":[null,` + k + `],"steps":[4,7],"outcomes":["` + testutil.Sums(3) + `",""],"failures":["` + testutil.Sums(1, 2) + `",""]}`
	if err := st.Restore([]byte(withFailures)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != withFailures {
		t.Errorf("snapshot after restore = %s", got)
	}
}

// TestStateOfTheFirstVersionRestores: a snapshot written before the window
// kept outcomes (here by the first version, after two text-only steps that
// said "Let me try again.") restores, and its steps count as having brought
// none, so a call after the restore is new. It was fingerprinted before the
// rule told long texts apart: it restores as the rule's own (PriorOptions),
// and the run is saved again with the fingerprint of today's options.
func TestStateOfTheFirstVersionRestores(t *testing.T) {
	const v1 = `{"version":1,"steps":2,"toolCalls":0,"failedToolCalls":0,` +
		`"totals":{"inputTokens":0,"outputTokens":0,"totalTokens":0,"costUsd":0,"durationMs":0},"guard":"418af69d41a280aa7509df06d719688c",` +
		`"detectors":[{"name":"text","fingerprint":"55baedf12c06aab9cd5595c35d1e351e",` +
		`"state":{"texts":["ce7dff4f68a3334048f343a2c4ae1744","ce7dff4f68a3334048f343a2c4ae1744"],"steps":[0,1]}}]}`
	g, err := guard.Restore([]byte(v1), guard.Config{Rules: []rule.Rule{newDetector(t, text.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(v1, "55baedf12c06aab9cd5595c35d1e351e", "b305585efafc3c347af60509d40c09d0", 1); string(testutil.Snapshot(t, g, guard.SnapshotOptions{})) != want {
		t.Errorf("snapshot after restore:\n got %s\nwant %s", testutil.Snapshot(t, g, guard.SnapshotOptions{}), want)
	}
	if v := ruletest.Check(t, g, act("Let me try again.", 1)); v.Stop {
		t.Errorf("a new outcome after the restore stopped: %v", v)
	}
	if v := ruletest.Check(t, g, act("Let me try again.", 1)); !v.Stop {
		t.Errorf("the text a third time, with an outcome the window holds, went on: %v", v)
	}
}

func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.Step{say("a"), say("b"), act("a", 1), act("", 2), {}, {Text: "a", Input: "u"}, {Text: "b", Input: "u"},
		act("a", 3), fail("a", 1), refused("a"), say("[a]"), say("a long text"), actRes("", 1, "r"), actRes("a", 2, "r"), actRes("", 3, "s"),
		failAs("a", "no x"), failAs("a", "no y"), failAs("", "no z"),
		{Text: "a", ToolCalls: []guard.ToolCall{
			{Name: "t", Args: 1, Result: 1}, {Name: "t", Args: 2, Result: 1}, {Name: "t", Args: 3, Result: 1}, {Name: "t", Args: 4, Result: 1}, {Name: "t", Args: 5, Result: 1}}}}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(2, 6).Draw(t, "window")
		opts := text.Options{Window: w, Threshold: rapid.IntRange(2, w).Draw(t, "threshold"), Warn: rapid.Bool().Draw(t, "warn"),
			LongBytes: rapid.IntRange(0, 8).Draw(t, "longBytes")}
		opts.Long = rapid.SampledFrom([]int{0, 2, opts.Threshold}).Draw(t, "long")
		ss := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 25).Draw(t, "steps")
		cut := rapid.IntRange(0, len(ss)).Draw(t, "cut")
		orig := newGuard(t, newDetector(t, opts))
		run(t, orig, ss[:cut]...)
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restored, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newDetector(t, opts)}})
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		if diff := cmp.Diff(run(t, orig, ss[cut:]...), run(t, restored, ss[cut:]...)); diff != "" {
			t.Fatalf("after restore (-orig +restored):\n%s", diff)
		}
	})
}

// TestWarnsOneStepBefore: with Warn, the second counted step warns and the
// third stops; a step with the text that brings a new outcome neither warns
// nor stops, and does not bring the stop nearer.
func TestWarnsOneStepBefore(t *testing.T) {
	g := newGuard(t, newDetector(t, text.Options{Warn: true}))
	const s = "Let me try again."
	var got []string
	for _, st := range []guard.Step{say(s), act(s, 1), act(s, 2), say(s), act(s, 3), say(s)} {
		v := ruletest.Check(t, g, st)
		switch {
		case v.Stop:
			got = append(got, v.Code)
		case len(v.Warnings) > 0:
			got = append(got, v.Warnings[0].Code)
		default:
			got = append(got, "")
		}
	}
	want := []string{"", "", "", text.WarningCode, "", text.Code}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: each counts its own texts, and stops at its own third.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	d := newDetector(t, text.Options{})
	cfg := guard.Config{Rules: []rule.Rule{d}}
	g1, g2 := ruletest.Pair(t, cfg)
	var got1, got2 []string
	for range 2 {
		got1 = append(got1, run(t, g1, say("Let me try again."))...)
		got2 = append(got2, run(t, g2, say("Let me try again."))...)
	}
	got1 = append(got1, run(t, g1, say("Let me try again."))...)
	got2 = append(got2, run(t, g2, say("Something else."))...)
	if diff := cmp.Diff([]string{"", "", "REPEATED_TEXT 3"}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "", ""}, got2); diff != "" {
		t.Errorf("second guard's stops (-want +got):\n%s", diff)
	}
}

// TestLongText: a text of LongBytes bytes or more stops at its second step
// when another step comes between, and at the threshold when the two are in
// a row; a byte shorter, it stops at the threshold. Long at Threshold adds
// nothing, and then reads as the rule before long texts.
func TestLongText(t *testing.T) {
	long := strings.Repeat("x", text.DefaultLongBytes)
	short := long[1:]
	// Upper case and white space around it are normalised away, before the
	// length is taken: padded, the short text is short still.
	loud := "  " + strings.ToUpper(long) + "\n\n"
	padded := "   " + short + "    "
	for _, tt := range []struct {
		name  string
		opts  text.Options
		steps []guard.Step
		want  []string
	}{
		{"long, a step between", text.Options{}, []guard.Step{say(long), say("other"), say(long)}, []string{"", "", "REPEATED_TEXT 2"}},
		{"normalised length", text.Options{}, []guard.Step{say(loud), say("other"), say(long)}, []string{"", "", "REPEATED_TEXT 2"}},
		{"a byte short", text.Options{}, []guard.Step{say(short), say("other"), say(short), say(short)}, []string{"", "", "", "REPEATED_TEXT 3"}},
		{"padded, a byte short", text.Options{}, []guard.Step{say(padded), say("other"), say(padded)}, []string{"", "", ""}},
		{"in a row", text.Options{}, []guard.Step{say(long), say(long), say(long)}, []string{"", "", "REPEATED_TEXT 3"}},
		{"in a row, then apart", text.Options{}, []guard.Step{say(long), say(long), say("other")}, []string{"", "", ""}},
		{"after a failure", text.Options{}, []guard.Step{fail(long, 1), fail("other", 2), fail(long, 1)}, []string{"", "", "REPEATED_TEXT 2"}},
		{"new outcomes are narration", text.Options{}, []guard.Step{act(long, 1), say("other"), act(long, 2), act(long, 3)}, []string{"", "", "", ""}},
		{"long at threshold adds nothing", text.Options{Long: 3}, []guard.Step{say(long), say("other"), say(long), say(long)}, []string{"", "", "", "REPEATED_TEXT 3"}},
		{"longBytes", text.Options{LongBytes: 5}, []guard.Step{say("hello"), say("x"), say("hello"), say("hell"), say("x"), say("hell")}, []string{"", "", "REPEATED_TEXT 2", "", "", ""}},
		{"long 3 of threshold 4", text.Options{Threshold: 4, Long: 3}, []guard.Step{say(long), say("a"), say(long), say("b"), say(long)}, []string{"", "", "", "", "REPEATED_TEXT 3"}},
		{"out of the window", text.Options{Window: 3}, []guard.Step{say(long), say("a"), say("b"), say(long)}, []string{"", "", "", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, newGuard(t, newDetector(t, tt.opts)), tt.steps...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
	v := ruletest.Check(t, newGuard(t, newDetector(t, text.Options{})), say(long))
	if v.Stop {
		t.Fatal("a first long text stopped")
	}
	g := newGuard(t, newDetector(t, text.Options{}))
	run(t, g, say(long), say("other"))
	v = ruletest.Check(t, g, say(long))
	ev := v.Evidence.(text.Evidence)
	if ev.Threshold != 2 || !strings.Contains(v.Detail, "(threshold 2 for a text of 200 bytes or more)") {
		t.Errorf("evidence %+v, detail %q", ev, v.Detail)
	}
	if d := newDetector(t, text.Options{Long: 3}); d.PriorOptions() != nil || d.Options() != (text.Options{Threshold: 3, Window: 10}) {
		t.Errorf("at the threshold: options %+v, prior %v", d.Options(), d.PriorOptions())
	}
	if p := newDetector(t, text.Options{}).PriorOptions(); p != (text.Options{Threshold: 3, Window: 10}) {
		t.Errorf("prior options %+v", p)
	}
}

// TestLongTextWarns: with Warn, a long text warns one step before the
// threshold that applies to it (from a count of 2).
func TestLongTextWarns(t *testing.T) {
	long := strings.Repeat("y", text.DefaultLongBytes)
	g := newGuard(t, newDetector(t, text.Options{Threshold: 4, Long: 3, Warn: true}))
	var got []string
	for _, st := range []guard.Step{say(long), say("a"), say(long), say("b"), say(long)} {
		v := ruletest.Check(t, g, st)
		switch {
		case v.Stop:
			got = append(got, v.Code)
		case len(v.Warnings) > 0:
			got = append(got, fmt.Sprintf("%s %v", v.Warnings[0].Code, v.Warnings[0].Limit))
		default:
			got = append(got, "")
		}
	}
	want := []string{"", "", text.WarningCode + " 3", "", text.Code}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}
