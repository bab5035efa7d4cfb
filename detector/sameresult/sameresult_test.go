package sameresult_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// sameResultPage is a result of exactly sameresult.DefaultMinBytes bytes.
var sameResultPage = "Page: Roald Dahl\nSummary: " + strings.Repeat("x", sameresult.DefaultMinBytes-len("Page: Roald Dahl\nSummary: "))

// sameResultSearch returns a search for query that returned result (a Go
// string, so that its size is its length).
func sameResultSearch(query, result string) guard.ToolCall {
	return guard.ToolCall{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"q":%q}`, query)), Result: result}
}

// sameResultQ returns a search for query that returned sameResultPage.
func sameResultQ(query string) guard.ToolCall { return sameResultSearch(query, sameResultPage) }

func sameResultStep(calls ...guard.ToolCall) guard.Step { return guard.Step{ToolCalls: calls} }

// sameResultSteps makes one step of each call.
func sameResultSteps(calls ...guard.ToolCall) []guard.Step {
	out := make([]guard.Step, len(calls))
	for i, c := range calls {
		out[i] = sameResultStep(c)
	}
	return out
}

func newSameResultRule(t testing.TB, o sameresult.Options) *sameresult.Rule {
	t.Helper()
	d, err := sameresult.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newSameResultGuard(t testing.TB, o sameresult.Options, cfg guard.Config) *guard.Guard {
	t.Helper()
	cfg.Rules = []rule.Rule{newSameResultRule(t, o)}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sameResultStops returns the 0-based indexes of the steps that stop, and
// of those that warn.
func sameResultStops(t testing.TB, g *guard.Guard, steps []guard.Step) (stops, warns []int) {
	t.Helper()
	for i, s := range steps {
		v := ruletest.Check(t, g, s)
		if v.Stop {
			stops = append(stops, i)
		}
		if len(v.Warnings) > 0 {
			warns = append(warns, i)
		}
	}
	return stops, warns
}

func TestSameResultStreaks(t *testing.T) {
	a, b, c, d, e := sameResultQ("a"), sameResultQ("a b"), sameResultQ("a b c"), sameResultQ("a b c d"), sameResultQ("a b c d e")
	short := func(q string) guard.ToolCall {
		return sameResultSearch(q, sameResultPage[:sameresult.DefaultMinBytes-1])
	}
	other := sameResultSearch("z", sameResultPage+"!")
	read := guard.ToolCall{Name: "read", Args: json.RawMessage(`{"path":"/a"}`), Result: sameResultPage}
	failed := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q":"f"}`), Result: sameResultPage, Err: errors.New("boom")}
	noResult := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q":"n"}`)}
	think := guard.ToolCall{Name: "think", Args: json.RawMessage(`{}`), Result: "ok"}
	tests := []struct {
		name  string
		o     sameresult.Options
		cfg   guard.Config
		steps []guard.Step
		stops []int
	}{
		{"threshold-1 goes on", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c), nil},
		{"threshold stops", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, d), []int{3}},
		{"and again on each later call", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, d, e), []int{3, 4}},
		{"threshold 2", sameresult.Options{Threshold: 2}, guard.Config{}, sameResultSteps(a, b), []int{1}},
		{"threshold 5: 4 go on", sameresult.Options{Threshold: 5}, guard.Config{}, sameResultSteps(a, b, c, d), nil},
		{"MinBytes-1 never counts", sameresult.Options{}, guard.Config{}, sameResultSteps(short("a"), short("b"), short("c"), short("d"), short("e")), nil},
		{"MinBytes counts", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, d), []int{3}},
		{"a lower MinBytes counts the short result", sameresult.Options{MinBytes: sameresult.DefaultMinBytes - 1}, guard.Config{},
			sameResultSteps(short("a"), short("b"), short("c"), short("d")), []int{3}},
		{"the same call neither counts nor ends the streak", sameresult.Options{}, guard.Config{}, sameResultSteps(a, a, b, b, c, c, d), []int{6}},
		{"two calls in turn count", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, a, b), []int{3}},
		{"another result ends the streak", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, other, d, e), nil},
		{"another tool ends the streak", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, read, d, e), nil},
		{"a failure ends the streak", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, failed, d, e), nil},
		{"a call without a result ends the streak", sameresult.Options{}, guard.Config{}, sameResultSteps(a, b, c, noResult, d, e), nil},
		{"an ignored tool is left out", sameresult.Options{}, guard.Config{Ignore: []string{"think"}}, sameResultSteps(a, think, b, think, c, think, d), []int{6}},
		{"the same tool not ignored ends it", sameresult.Options{}, guard.Config{}, sameResultSteps(a, think, b, think, c, think, d), nil},
		{"text-only steps change nothing", sameresult.Options{}, guard.Config{},
			[]guard.Step{sameResultStep(a), {Text: "hm"}, sameResultStep(b), {Text: "hm"}, sameResultStep(c), {}, sameResultStep(d)}, []int{6}},
		{"calls of one step count once", sameresult.Options{}, guard.Config{},
			[]guard.Step{sameResultStep(a, b), sameResultStep(c, d, e)}, nil},
		{"one step each after a shared one", sameresult.Options{}, guard.Config{},
			[]guard.Step{sameResultStep(a, b), sameResultStep(c), sameResultStep(d), sameResultStep(e)}, []int{3}},
		{"a streak starts within a step", sameresult.Options{}, guard.Config{},
			[]guard.Step{sameResultStep(other, a), sameResultStep(b), sameResultStep(c), sameResultStep(d)}, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newSameResultGuard(t, tt.o, tt.cfg)
			stops, _ := sameResultStops(t, g, tt.steps)
			if diff := cmp.Diff(tt.stops, stops); diff != "" {
				t.Errorf("stopping steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSameResultSizes: the size that MinBytes compares is that of the
// result's text, whatever its Go type.
func TestSameResultSizes(t *testing.T) {
	n := sameresult.DefaultMinBytes
	for _, tt := range []struct {
		name string
		mk   func(size int) any
	}{
		{"string", func(size int) any { return strings.Repeat("x", size) }},
		{"JSON string", func(size int) any { return json.RawMessage(`"` + strings.Repeat("x", size) + `"`) }},
		{"JSON object", func(size int) any { return json.RawMessage(`{"a":"` + strings.Repeat("x", size-8) + `"}`) }},
		{"bytes", func(size int) any { return []byte(strings.Repeat("x", size)) }},
		{"map", func(size int) any { return map[string]any{"a": strings.Repeat("x", size-8)} }},
	} {
		for _, size := range []int{n - 1, n} {
			t.Run(fmt.Sprintf("%s %d", tt.name, size), func(t *testing.T) {
				g := newSameResultGuard(t, sameresult.Options{}, guard.Config{})
				var steps []guard.Step
				for _, q := range []string{"a", "b", "c", "d"} {
					steps = append(steps, sameResultStep(guard.ToolCall{Name: "search", Args: map[string]any{"q": q}, Result: tt.mk(size)}))
				}
				stops, _ := sameResultStops(t, g, steps)
				if want := size >= n; (len(stops) > 0) != want {
					t.Errorf("stops %v, want a stop: %v", stops, want)
				}
			})
		}
	}
}

func TestSameResultVerdict(t *testing.T) {
	g := newSameResultGuard(t, sameresult.Options{}, guard.Config{})
	var v guard.Verdict
	for _, q := range []string{"a", "a b", "a b c", "a b c d"} {
		v = ruletest.Check(t, g, sameResultStep(sameResultQ(q)))
	}
	ev := sameresult.Evidence{Tool: "search", Count: 4, Threshold: 4, MinBytes: 512, ResultBytes: 512, ArgsPreview: `{"q":"a b c d"}`}
	want := guard.Verdict{Stop: true, Reason: sameresult.ReasonSameResult, Code: sameresult.Code, Detector: sameresult.Name,
		Detail:   `tool "search" returned the same result of 512 bytes 4 times in a row for other arguments, the last {"q":"a b c d"} (threshold 4)`,
		Evidence: ev, Feedback: ev.Feedback()}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	for _, secret := range []string{"a b c", "Roald", "xxxx"} {
		if strings.Contains(v.Feedback, secret) {
			t.Errorf("feedback %q repeats %q", v.Feedback, secret)
		}
	}
}

func TestSameResultWarn(t *testing.T) {
	qs := sameResultSteps(sameResultQ("a"), sameResultQ("b"), sameResultQ("c"), sameResultQ("d"), sameResultQ("e"))
	for _, tt := range []struct {
		o            sameresult.Options
		stops, warns []int
	}{
		{sameresult.Options{}, []int{3, 4}, nil},
		{sameresult.Options{Warn: true}, []int{3, 4}, []int{2}},
		{sameresult.Options{Warn: true, Threshold: 3}, []int{2, 3, 4}, []int{1}},
		{sameresult.Options{Warn: true, Threshold: 2}, []int{1, 2, 3, 4}, nil}, // a count of 1 never warns
	} {
		t.Run(fmt.Sprint(tt.o), func(t *testing.T) {
			g := newSameResultGuard(t, tt.o, guard.Config{})
			stops, warns := sameResultStops(t, g, qs)
			if diff := cmp.Diff([2][]int{tt.stops, tt.warns}, [2][]int{stops, warns}); diff != "" {
				t.Errorf("stops, warnings (-want +got):\n%s", diff)
			}
		})
	}
	g := newSameResultGuard(t, sameresult.Options{Warn: true}, guard.Config{})
	var v guard.Verdict
	for _, s := range qs[:3] {
		v = ruletest.Check(t, g, s)
	}
	w := rule.Warning{Code: sameresult.WarningCode, Detector: sameresult.Name, Tool: "search", Value: 3, Limit: 4, Ratio: 0.75,
		Detail: `tool "search" returned the same result 3 times in a row for other arguments; 4 stop the run`}
	w.Feedback = sameresult.WarningFeedback(w)
	if diff := cmp.Diff([]rule.Warning{w}, v.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestSameResultPreflightJudgesNothing(t *testing.T) {
	g := newSameResultGuard(t, sameresult.Options{Threshold: 2}, guard.Config{})
	ruletest.Check(t, g, sameResultStep(sameResultQ("a")))
	before := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{})
	if d := ruletest.Preflight(t, g, sameResultQ("b"), sameResultQ("c")); !d.Allow {
		t.Errorf("preflight refused: %+v", d)
	}
	if after := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{}); after != before {
		t.Errorf("preflight changed the state from %s to %s", before, after)
	}
}

// TestSameResultSnapshotRestoreContinues snapshots midway, restores into a
// fresh guard, and continues: the verdicts are those of the guard that was
// never restored. The snapshot holds no tool name.
func TestSameResultSnapshotRestoreContinues(t *testing.T) {
	steps := sameResultSteps(sameResultQ("a"), sameResultQ("b"), sameResultQ("b"), sameResultQ("c"), sameResultQ("d"), sameResultQ("e"))
	for cut := 0; cut <= len(steps); cut++ {
		o := sameresult.Options{Warn: true}
		g := newSameResultGuard(t, o, guard.Config{})
		model := newSameResultGuard(t, o, guard.Config{})
		for _, s := range steps[:cut] {
			ruletest.Check(t, g, s)
			ruletest.Check(t, model, s)
		}
		snap := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: true})
		if cut > 0 && strings.Contains(ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{Previews: true}), "search") {
			t.Errorf("the state names the tool: %s", ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{}))
		}
		restored, err := guard.Restore(snap, guard.Config{Rules: []rule.Rule{newSameResultRule(t, o)}})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		for i, s := range steps[cut:] {
			want, got := ruletest.Check(t, model, s), ruletest.Check(t, restored, s)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cut %d, step %d (-model +restored):\n%s", cut, cut+i, diff)
			}
		}
	}
}

func TestSameResultSnapshotState(t *testing.T) {
	d := newSameResultRule(t, sameresult.Options{})
	g := testutil.New(t, d)
	if got := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{}); got != "null" {
		t.Errorf("fresh state = %s, want null", got)
	}
	for _, s := range sameResultSteps(sameResultQ("a"), sameResultQ("b")) {
		ruletest.Check(t, g, s)
	}
	got := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{})
	var st struct {
		Tool, Result, Key string
		Count             int
	}
	if err := json.Unmarshal([]byte(got), &st); err != nil || st.Count != 2 || len(st.Tool) != 32 || len(st.Result) != 32 || len(st.Key) != 32 {
		t.Errorf("state %s (%v)", got, err)
	}
	// A failure ends the streak: the state is fresh again.
	ruletest.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{testutil.Failed("search", `{"q":"x"}`, "boom")}})
	if got := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{}); got != "null" {
		t.Errorf("state after a failure = %s, want null", got)
	}
}

func TestSameResultRestoreRejects(t *testing.T) {
	const k = `"0123456789abcdef0123456789abcdef"`
	const z = `"00000000000000000000000000000000"`
	d := newSameResultRule(t, sameresult.Options{})
	g := testutil.New(t, d)
	for _, s := range sameResultSteps(sameResultQ("a"), sameResultQ("b")) {
		ruletest.Check(t, g, s)
	}
	running := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{})
	state := func(tool, result, key string, count any) string {
		return fmt.Sprintf(`{"tool":%s,"result":%s,"key":%s,"count":%v}`, tool, result, key, count)
	}
	ruletest.RejectsKeeping(t, d, running, []string{
		``, `[]`, `{`, `"x"`, `{}`,
		state(k, k, k, 0), state(k, k, k, -1), state(k, k, k, sameresult.MaxThreshold+1), state(k, k, k, `"2"`),
		state(z, k, k, 2), state(k, z, k, 2), state(k, k, z, 2),
		state(`"0123"`, k, k, 2), state(`"0123456789ABCDEF0123456789abcdef"`, k, k, 2),
		`{"tool":` + k + `,"result":` + k + `,"key":` + k + `,"count":2,"extra":1}`,
	})
	st := ruletest.Saver(t, d)
	if err := st.Restore([]byte(state(k, k, k, 3))); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != state(k, k, k, 3) {
		t.Errorf("snapshot after restore = %s", got)
	}
}

// TestSameResultRestoreOutOfBounds: a restored streak longer than the run's
// calls or steps is refused by the guard.
func TestSameResultRestoreOutOfBounds(t *testing.T) {
	g := newSameResultGuard(t, sameresult.Options{}, guard.Config{})
	for _, s := range []guard.Step{sameResultStep(sameResultQ("a"), sameResultQ("b")), sameResultStep(sameResultQ("c"))} {
		ruletest.Check(t, g, s)
	}
	snap := string(testutil.Snapshot(t, g, guard.SnapshotOptions{}))
	state := ruletest.StateOf(t, g, sameresult.Name, guard.SnapshotOptions{})
	if !strings.Contains(state, `"count":2`) || !strings.Contains(snap, state) {
		t.Fatalf("state %s in %s", state, snap)
	}
	bad := strings.Replace(snap, state, strings.Replace(state, `"count":2`, `"count":3`, 1), 1)
	if _, err := guard.Restore([]byte(bad), guard.Config{Rules: []rule.Rule{newSameResultRule(t, sameresult.Options{})}}); err == nil {
		t.Errorf("a streak of 3 calls in 2 steps was restored")
	}
}

func TestSameResultResetAndNullAreFresh(t *testing.T) {
	seq := sameResultSteps(sameResultQ("a"), sameResultQ("b"), sameResultQ("c"), sameResultQ("d"), sameResultQ("e"))
	o := sameresult.Options{Warn: true}
	ruletest.ResetIsFresh(t, func() *guard.Guard { return newSameResultGuard(t, o, guard.Config{}) }, seq)
	d := newSameResultRule(t, o)
	g := testutil.New(t, d)
	for _, s := range seq[:2] {
		ruletest.Check(t, g, s)
	}
	ruletest.RestoreNullIsFresh(t, d, g)
}

func TestSameResultOptions(t *testing.T) {
	d := newSameResultRule(t, sameresult.Options{})
	if diff := cmp.Diff(sameresult.Options{Threshold: 4, MinBytes: 512}, d.Options()); diff != "" {
		t.Errorf("default options (-want +got):\n%s", diff)
	}
	if d.Name() != "sameresult" || d.Priority() != rule.PriorityRepeat+75 {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
	for _, tt := range []struct {
		o      sameresult.Options
		fields []string
	}{
		{sameresult.Options{Threshold: 1}, []string{"Threshold"}},
		{sameresult.Options{Threshold: -1}, []string{"Threshold"}},
		{sameresult.Options{Threshold: sameresult.MaxThreshold + 1}, []string{"Threshold"}},
		{sameresult.Options{MinBytes: -1}, []string{"MinBytes"}},
		{sameresult.Options{MinBytes: sameresult.MaxMinBytes + 1}, []string{"MinBytes"}},
		{sameresult.Options{Threshold: 1, MinBytes: -1}, []string{"Threshold", "MinBytes"}},
		{sameresult.Options{Threshold: 2, MinBytes: 1}, nil},
		{sameresult.Options{Threshold: sameresult.MaxThreshold, MinBytes: sameresult.MaxMinBytes}, nil},
	} {
		_, err := sameresult.New(tt.o)
		if tt.fields == nil {
			if err != nil {
				t.Errorf("New(%+v): %v", tt.o, err)
			}
			continue
		}
		if diff := cmp.Diff(tt.fields, testutil.OptionFields(t, err, sameresult.Name)); diff != "" {
			t.Errorf("New(%+v): fields (-want +got):\n%s", tt.o, diff)
		}
	}
}

// TestSameResultRealTraces runs the rule alone on every labelled trace: it
// stops the two MINT runs whose searches only add words and get the same
// summary back, on their fourth search, and no healthy run.
func TestSameResultRealTraces(t *testing.T) {
	want := map[string]int{ // the line of the first stop, 1-based
		"mint-codeactmistral7b-hotpotqa-6.jsonl": 4,
		"mint-codellama34b-fbgpt4-mmlu-50.jsonl": 4,
	}
	ruletest.FirstStops(t, ruletest.Traces(t), func() *guard.Guard { return newSameResultGuard(t, sameresult.Options{}, guard.Config{}) }, want)
}

// TestSameResultUpgrade: a run saved under the default set without this
// rule (the set before it, but for oscillation.sameResults: see
// TestSameResultUpgradeFromMain) does not restore under the new defaults, with
// an error that names the rule, and restores with the rule off.
func TestSameResultUpgrade(t *testing.T) {
	before, err := detector.FromJSON([]byte(`{"sameResult": false}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(before)
	if err != nil {
		t.Fatal(err)
	}
	ruletest.Check(t, g, sameResultStep(sameResultQ("a")))
	snap := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	_, err = guard.Restore(snap, guard.Config{Rules: detector.Defaults()})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Extra, []string{sameresult.Name}) || len(fe.Changed)+len(fe.Missing) != 0 {
		t.Errorf("restoring under the new defaults: %v, want a FingerprintError with Extra [sameresult]", err)
	}
	if _, err := guard.Restore(snap, before); err != nil {
		t.Errorf("restoring with the rule off: %v", err)
	}

	// With AllowNewRules the new rule starts fresh: the call before the
	// restore is not in its streak, so the restored run stops at its own
	// fourth call (three go on), not at its third.
	r, err := guard.Restore(snap, guard.Config{Rules: detector.Defaults(), AllowNewRules: true})
	if err != nil {
		t.Fatalf("restoring with AllowNewRules: %v", err)
	}
	for i, q := range []string{"b", "c", "d"} {
		if v := ruletest.Check(t, r, sameResultStep(sameResultQ(q))); v.Stop {
			t.Fatalf("restored call %d stopped (%s): the new rule saw the steps before the restore", i+1, v.Code)
		}
	}
	if v := ruletest.Check(t, r, sameResultStep(sameResultQ("e"))); !v.Stop || v.Code != sameresult.Code {
		t.Errorf("fourth call after the restore: %+v, want a %s stop", v, sameresult.Code)
	}

	// A snapshot's state for a rule that is not given is an error still.
	_, err = guard.Restore(testutil.Snapshot(t, r, guard.SnapshotOptions{}), guard.Config{Rules: before.Rules, AllowNewRules: true})
	if !errors.As(err, &fe) || !slices.Equal(fe.Missing, []string{sameresult.Name}) {
		t.Errorf("restoring without the rule, AllowNewRules set: %v, want a FingerprintError with Missing [sameresult]", err)
	}
}
