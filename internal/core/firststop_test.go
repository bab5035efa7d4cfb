package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/finish"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// faultOn is a rule that stops the run for a fault at every step whose text
// is "loop", and at no other. It keeps nothing between steps but the
// verdict on the last one, so its state is no Saver: it is saved as null.
type faultOn struct{}

type faultOnState struct{ v guard.Verdict }

var (
	_ rule.Rule  = faultOn{}
	_ rule.State = (*faultOnState)(nil)
)

func (faultOn) Name() string                  { return "fault" }
func (faultOn) Priority() int                 { return rule.PriorityCustom }
func (faultOn) Options() any                  { return nil }
func (faultOn) NewState() rule.State          { return &faultOnState{} }
func (s *faultOnState) Verdict() rule.Verdict { return s.v }
func (*faultOnState) Preflight(*rule.Facts) rule.Verdict {
	return rule.Verdict{}
}
func (s *faultOnState) Observe(f *rule.Facts) {
	s.v = rule.Verdict{}
	if f.Text() == "loop" {
		s.v = rule.Verdict{Stop: true, Reason: "fault", Code: "FAULT", Detail: fmt.Sprintf("step %d", f.Index),
			Feedback: "stop now"}
	}
}

// normalEnd is evidence that says a stop is a normal finish.
type normalEnd struct{}

func (normalEnd) NormalFinish() bool { return true }

// finishOn stops at a step that finishes with reason "stop" and makes no
// call, as the finish rule does: a normal end of the run, no fault.
type finishOn struct{}

type finishOnState struct{ v guard.Verdict }

func (finishOn) Name() string                  { return "finisher" }
func (finishOn) Priority() int                 { return rule.PriorityFinish }
func (finishOn) Options() any                  { return nil }
func (finishOn) NewState() rule.State          { return &finishOnState{} }
func (s *finishOnState) Verdict() rule.Verdict { return s.v }
func (*finishOnState) Preflight(*rule.Facts) rule.Verdict {
	return rule.Verdict{}
}
func (s *finishOnState) Observe(f *rule.Facts) {
	s.v = rule.Verdict{}
	if f.FinishReason == "stop" && len(f.Calls) == 0 {
		s.v = rule.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL", Evidence: normalEnd{}}
	}
}

// faultAt is the verdict faultOn gives at step i, as FirstStop holds it in
// memory.
func faultAt(i int) *guard.Verdict {
	return &guard.Verdict{Stop: true, Reason: "fault", Code: "FAULT", Detail: fmt.Sprintf("step %d", i),
		Feedback: "stop now", Detector: "fault"}
}

func firstStopOf(t *testing.T, g *guard.Guard) *guard.Verdict {
	t.Helper()
	return testutil.Summary(t, g).FirstStop
}

// TestFirstStopIsTheRunsFirstFault: FirstStop is nil before the first fault
// stop, is that stop from the step that gives it, and stays so through later
// stops; Reset and a step with input clear it.
func TestFirstStopIsTheRunsFirstFault(t *testing.T) {
	g := mustNew(t, guard.Config{}, faultOn{})
	for i := range 3 {
		if v := testutil.Check(t, g, testutil.Text("work")); v.Stop {
			t.Fatalf("step %d stops: %+v", i, v)
		}
		if fs := firstStopOf(t, g); fs != nil {
			t.Fatalf("after step %d (no stop), FirstStop = %+v", i, fs)
		}
	}
	v := testutil.Check(t, g, testutil.Text("loop"))
	if diff := cmp.Diff(faultAt(3), &v); diff != "" {
		t.Fatalf("step 3 verdict (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(faultAt(3), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop at the stopping step (-want +got):\n%s", diff)
	}
	testutil.Check(t, g, testutil.Text("work"))
	if v := testutil.Check(t, g, testutil.Text("loop")); !v.Stop || v.Detail != "step 5" {
		t.Fatalf("step 5 = %+v, want the stop of step 5", v)
	}
	if diff := cmp.Diff(faultAt(3), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop after later steps and stops (-want +got):\n%s", diff)
	}

	if err := g.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fs := firstStopOf(t, g); fs != nil {
		t.Errorf("after Reset, FirstStop = %+v", fs)
	}
	testutil.Check(t, g, testutil.Text("loop"))
	if diff := cmp.Diff(faultAt(0), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop of the run after Reset (-want +got):\n%s", diff)
	}

	// A step with input opens a new segment: it clears the stop, and is
	// itself the new first stop if it stops.
	testutil.Check(t, g, guard.Step{Text: "work", Input: "go on"})
	if fs := firstStopOf(t, g); fs != nil {
		t.Errorf("after a step with input, FirstStop = %+v", fs)
	}
	testutil.Check(t, g, testutil.Text("loop"))
	if diff := cmp.Diff(faultAt(2), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop of the new segment (-want +got):\n%s", diff)
	}
	testutil.Check(t, g, guard.Step{Text: "loop", Input: "again"})
	if diff := cmp.Diff(faultAt(3), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop of a step with input that stops (-want +got):\n%s", diff)
	}
	// Input on a step that the input does not stop: no fault in the segment.
	testutil.Check(t, g, guard.Step{Input: "x"})
	if fs := firstStopOf(t, g); fs != nil {
		t.Errorf("after a quiet step with input, FirstStop = %+v", fs)
	}
}

// TestFirstStopSurvivesSnapshot: the snapshot holds the first stop under
// firstStop (only once there is one), and a restored guard has it with its
// reason, code and rule, and a Detail that names its step.
func TestFirstStopSurvivesSnapshot(t *testing.T) {
	cfg := guard.Config{Rules: []guard.Rule{faultOn{}}}
	g := testutil.New(t, cfg.Rules...)
	testutil.Check(t, g, testutil.Text("work"))
	before := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	if bytes.Contains(before, []byte("firstStop")) {
		t.Errorf("a snapshot before any stop has firstStop:\n%s", before)
	}
	r, err := guard.Restore(before, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fs := firstStopOf(t, r); fs != nil {
		t.Errorf("restored from before the stop: FirstStop = %+v", fs)
	}

	testutil.Check(t, g, testutil.Text("loop"))
	testutil.Check(t, g, testutil.Text("loop"))
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	const key = `"firstStop":{"step":1,"reason":"fault","code":"FAULT","detector":"fault"}`
	if !bytes.Contains(data, []byte(key)) {
		t.Errorf("snapshot has no %s:\n%s", key, data)
	}
	r, err = guard.Restore(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := &guard.Verdict{Stop: true, Reason: "fault", Code: "FAULT", Detector: "fault", Detail: "the run stopped at step 1"}
	if diff := cmp.Diff(want, firstStopOf(t, r)); diff != "" {
		t.Errorf("restored FirstStop (-want +got):\n%s", diff)
	}
	again, err := r.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Errorf("a restored guard's snapshot differs:\n got %s\nwant %s", again, data)
	}
	// A restored stop refuses turns with the generic text: its own feedback
	// was not saved.
	_, err = r.Begin().Run(t.Context(), testutil.Q("x"), func(context.Context) (any, error) { return "ran", nil })
	var re *guard.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("Run on a restored stopped run: %v, want a *RefusedError", err)
	}
	wantD := guard.Decision{Reason: "fault", Code: "FAULT", Detector: "fault", Detail: "the run stopped at step 1",
		Feedback: "That call was not run: this run has been stopped. Do not call any more tools; give your final answer."}
	if diff := cmp.Diff(wantD, re.Decision); diff != "" {
		t.Errorf("refusal of a restored stopped run (-want +got):\n%s", diff)
	}
	if err := r.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fs := firstStopOf(t, r); fs != nil {
		t.Errorf("restored, then Reset: FirstStop = %+v", fs)
	}
}

// TestStoppedRunRefusesTurnsAndStartCall: once the run stopped for a fault,
// every call of a turn and every StartCall is refused with the stop, and
// nothing of them is recorded but the turn's own step; Check and Preflight
// answer each step as before.
func TestStoppedRunRefusesTurnsAndStartCall(t *testing.T) {
	ctx := t.Context()
	g := mustNew(t, guard.Config{}, faultOn{})
	testutil.Check(t, g, testutil.Calls(testutil.Q("a")))
	t1 := g.Begin()
	if ds, err := t1.Preflight(ctx, testutil.Q("b")); err != nil || !ds[0].Allow {
		t.Fatalf("a turn before the stop: %+v, %v", ds, err)
	}
	if _, err := t1.End(ctx, guard.Step{Text: "loop"}); err == nil {
		t.Fatal("the stopping step's End gave no error")
	}
	before := testutil.Summary(t, g)
	if before.Steps != 2 || before.ToolCalls != 1 || before.FirstStop == nil {
		t.Fatalf("summary at the stop: %+v", before)
	}
	stop := func(index int, id string) guard.Decision {
		return guard.Decision{Reason: "fault", Code: "FAULT", Detector: "fault", Detail: "the run stopped at step 1",
			Feedback: "That call was not run. stop now", CallIndex: index, CallID: id}
	}

	turn := g.Begin()
	calls := []guard.ToolCall{{ID: "c1", Name: "search", Args: raw(`{"q":"new"}`)}, {ID: "c2", Name: "read", Args: raw(`{}`)}}
	ds, err := turn.Preflight(ctx, calls...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]guard.Decision{stop(0, "c1"), stop(1, "c2")}, ds); diff != "" {
		t.Errorf("turn preflight of a stopped run (-want +got):\n%s", diff)
	}
	ran := false
	_, err = turn.Run(ctx, guard.ToolCall{ID: "c3", Name: "write", Args: raw(`{}`)}, func(context.Context) (any, error) {
		ran = true
		return "done", nil
	})
	var re *guard.RefusedError
	if !errors.As(err, &re) || ran {
		t.Fatalf("Run in a stopped run: err %v, ran %v; want a refusal, not run", err, ran)
	}
	if diff := cmp.Diff(stop(0, "c3"), re.Decision); diff != "" {
		t.Errorf("Run's refusal (-want +got):\n%s", diff)
	}
	if re.Error() != "That call was not run. stop now" {
		t.Errorf("refusal text = %q, want the stop's feedback after the sentence a refusal starts with", re.Error())
	}
	if diff := cmp.Diff(before, testutil.Summary(t, g)); diff != "" {
		t.Errorf("the turn's refusals were recorded (-before +after):\n%s", diff)
	}
	// StartCall refuses the same way and records nothing.
	r, d, err := g.StartCall(ctx, guard.ToolCall{ID: "s1", Name: "search", Args: raw(`{"q":"other"}`)})
	if err != nil || r != nil {
		t.Fatalf("StartCall in a stopped run: %v, %v; want a refusal", r, err)
	}
	if diff := cmp.Diff(stop(0, "s1"), d); diff != "" {
		t.Errorf("StartCall's refusal (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, testutil.Summary(t, g)); diff != "" {
		t.Errorf("StartCall's refusal was recorded (-before +after):\n%s", diff)
	}
	// The turn's End records its own step only: no call, no refused call.
	if v, err := turn.End(ctx, guard.Step{Text: "answer"}); err != nil || v.Stop {
		t.Errorf("End of the refused turn = %+v, %v", v, err)
	}
	after := testutil.Summary(t, g)
	if after.Steps != before.Steps+1 || after.ToolCalls != before.ToolCalls || after.FailedToolCalls != before.FailedToolCalls {
		t.Errorf("after the turn's End: %d steps, %d calls, %d failed; want %d, %d, %d",
			after.Steps, after.ToolCalls, after.FailedToolCalls, before.Steps+1, before.ToolCalls, before.FailedToolCalls)
	}
	if diff := cmp.Diff(before.FirstStop, after.FirstStop); diff != "" {
		t.Errorf("FirstStop changed (-before +after):\n%s", diff)
	}

	// Check and Preflight answer as the reference reads each step: a
	// different call is allowed, a quiet step goes on.
	if d := testutil.Preflight(t, g, testutil.Q("different")); !d.Allow {
		t.Errorf("Preflight of a different call in a stopped run: %+v, want allowed", d)
	}
	if v := testutil.Check(t, g, testutil.Calls(testutil.Done("search", `{"q":"different"}`, "r"))); v.Stop {
		t.Errorf("Check of a quiet step in a stopped run: %+v, want go on", v)
	}
	// A step with input opens a new segment: turns run calls again.
	testutil.Check(t, g, guard.Step{Input: "try again"})
	if ds, err := g.Begin().Preflight(ctx, testutil.Q("x")); err != nil || !ds[0].Allow {
		t.Errorf("a turn after new input: %+v, %v; want allowed", ds, err)
	}
	if r, d, err := g.StartCall(ctx, testutil.Q("y")); err != nil || r == nil || !d.Allow {
		t.Errorf("StartCall after new input: %v, %+v, %v; want allowed", r, d, err)
	} else if _, err := r.Finish(ctx, "ok", nil); err != nil {
		t.Error(err)
	}
}

// TestNormalFinishIsNoFirstStop: a stop that is the model finishing (finish
// reason stop, text only) sets no FirstStop, and turns go on.
func TestNormalFinishIsNoFirstStop(t *testing.T) {
	g := mustNew(t, guard.Config{}, finishOn{}, faultOn{})
	v := testutil.Check(t, g, guard.Step{Text: "the answer", FinishReason: "stop"})
	if !v.Stop || guard.IsFault(v) {
		t.Fatalf("verdict = %+v, want a normal finish", v)
	}
	if fs := firstStopOf(t, g); fs != nil {
		t.Errorf("a normal finish set FirstStop = %+v", fs)
	}
	if ds, err := g.Begin().Preflight(t.Context(), testutil.Q("x")); err != nil || !ds[0].Allow {
		t.Errorf("a turn after a normal finish: %+v, %v; want allowed", ds, err)
	}
	// The fault after it is the first stop.
	testutil.Check(t, g, testutil.Text("loop"))
	if diff := cmp.Diff(faultAt(1), firstStopOf(t, g)); diff != "" {
		t.Errorf("FirstStop after a finish, then a fault (-want +got):\n%s", diff)
	}
}

// TestRestoreRefusesMalformedFirstStop: a firstStop that this run cannot
// have is an invalid state.
func TestRestoreRefusesMalformedFirstStop(t *testing.T) {
	cfg := guard.Config{Rules: []guard.Rule{faultOn{}}}
	g := testutil.New(t, cfg.Rules...)
	testutil.Check(t, g, testutil.Text("work"))
	testutil.Check(t, g, testutil.Text("loop"))
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	const good = `"firstStop":{"step":1,"reason":"fault","code":"FAULT","detector":"fault"}`
	if !bytes.Contains(data, []byte(good)) {
		t.Fatalf("the snapshot has no %s:\n%s", good, data)
	}
	with := func(fs string) []byte { return bytes.Replace(data, []byte(good), []byte(fs), 1) }
	for name, fs := range map[string]string{
		"step 0 of 2 steps": `"firstStop":{"step":0,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"no rule":           `"firstStop":{"step":1,"reason":"fault","code":"FAULT"}`,
		"null":              `"firstStop":null`,
	} {
		if _, err := guard.Restore(with(fs), cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, fs := range map[string]string{
		"negative step":      `"firstStop":{"step":-1,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"step = steps":       `"firstStop":{"step":2,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"step > steps":       `"firstStop":{"step":9,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"fractional step":    `"firstStop":{"step":1.5,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"empty code":         `"firstStop":{"step":1,"reason":"fault","code":"","detector":"fault"}`,
		"no code":            `"firstStop":{"step":1,"reason":"fault","detector":"fault"}`,
		"empty reason":       `"firstStop":{"step":1,"reason":"","code":"FAULT","detector":"fault"}`,
		"long code":          `"firstStop":{"step":1,"reason":"fault","code":"` + strings.Repeat("C", rule.MaxNameLen+1) + `","detector":"fault"}`,
		"string step":        `"firstStop":{"step":"1","reason":"fault","code":"FAULT","detector":"fault"}`,
		"number code":        `"firstStop":{"step":1,"reason":"fault","code":7,"detector":"fault"}`,
		"an array":           `"firstStop":[1,"fault","FAULT"]`,
		"a string":           `"firstStop":"fault"`,
		"unknown key":        `"firstStop":{"step":1,"reason":"fault","code":"FAULT","detector":"fault","x":1}`,
		"key in other case":  `"firstStop":{"Step":1,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"duplicate key":      `"firstStop":{"step":1,"step":1,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"envelope key twice": good + `,"firstStop":{"step":0,"reason":"fault","code":"FAULT","detector":"fault"}`,
		"envelope key case":  `"FirstStop":{"step":1,"reason":"fault","code":"FAULT","detector":"fault"}`,
	} {
		if _, err := guard.Restore(with(fs), cfg); !errors.Is(err, guard.ErrInvalidState) {
			t.Errorf("%s: Restore = %v, want ErrInvalidState", name, err)
		}
	}
}

// TestFinishRuleAndFirstStop: with the finish rule, a step that ends with
// reason "stop" and only text is a normal finish (no FirstStop); one cut off
// ("length") is a fault, and the first stop.
func TestFinishRuleAndFirstStop(t *testing.T) {
	for _, tt := range []struct {
		finish string
		fault  bool
	}{{"stop", false}, {"end_turn", false}, {"length", true}} {
		f, err := finish.New(finish.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g := testutil.New(t, f)
		v := testutil.Check(t, g, guard.Step{Text: "the answer", FinishReason: tt.finish})
		if !v.Stop || guard.IsFault(v) != tt.fault {
			t.Errorf("%s: verdict %+v, want a stop, fault %v", tt.finish, v, tt.fault)
		}
		fs := firstStopOf(t, g)
		if tt.fault {
			want := v
			want.Warnings = nil
			if diff := cmp.Diff(&want, fs); diff != "" {
				t.Errorf("%s: FirstStop (-want +got):\n%s", tt.finish, diff)
			}
		} else if fs != nil {
			t.Errorf("%s: a normal finish set FirstStop = %+v", tt.finish, fs)
		}
	}
}

// hostileHint is evidence whose hint holds characters a terminal acts on.
type hostileHint struct{}

func (hostileHint) Hint() string { return "see \x1b[31mred\x1b[0m" }

// TestExplainEscapesHints checks that a custom evidence's hint is escaped
// as details are: Explain's output is safe for a terminal.
func TestExplainEscapesHints(t *testing.T) {
	got := guard.Explain(guard.Verdict{Stop: true, Reason: "custom", Code: "CUSTOM", Evidence: hostileHint{}})
	if strings.ContainsRune(got, '\x1b') {
		t.Errorf("Explain = %q: the hint's escape character reached the output", got)
	}
	if !strings.Contains(got, "hint: see") {
		t.Errorf("Explain = %q, want the hint", got)
	}
}

// onceRule makes one state and panics when asked for a second one.
type onceRule struct{ made *int }

func (onceRule) Name() string  { return "once" }
func (onceRule) Priority() int { return guard.PriorityCustom }
func (onceRule) Options() any  { return nil }
func (r onceRule) NewState() guard.State {
	*r.made++
	if *r.made > 1 {
		panic("no second state")
	}
	return stateless{}
}

// stateless keeps nothing and never stops.
type stateless struct{}

func (stateless) Observe(*guard.Facts)                 {}
func (stateless) Verdict() guard.Verdict               { return guard.Verdict{} }
func (stateless) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }

// TestResetOfABrokenRuleKeepsTheRun checks that a Reset whose rule cannot
// make a fresh state returns the error, names the rule, and leaves the run
// as it was (before, it panicked with the run half reset).
func TestResetOfABrokenRuleKeepsTheRun(t *testing.T) {
	ctx := context.Background()
	made := 0
	g, err := guard.New(guard.Config{Rules: []guard.Rule{onceRule{&made}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := g.Check(ctx, guard.Step{Text: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	err = g.Reset(ctx)
	var de *guard.DetectorError
	if !errors.As(err, &de) || de.Name != "once" {
		t.Fatalf("Reset = %v, want a *DetectorError naming the rule", err)
	}
	if s := testutil.Summary(t, g); s.Steps != 2 {
		t.Errorf("after the failed Reset: %d steps, want the run's 2", s.Steps)
	}
}
