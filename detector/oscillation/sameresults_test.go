package oscillation_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// Two versions of one cell, as in MINT's mbpp-6: the first fails the same
// way each time, the second prints the same number.
var (
	sameResultsAssert = guard.ToolCall{Name: "execute", Args: json.RawMessage(`{"code":"assert f(2) == 16"}`),
		Err: errors.New("AssertionError: Expected 16 but got 5")}
	sameResultsPrint = withResult(call("execute", `{"code":"print(f(2))"}`), `"5"`)
	sameResultsThird = withResult(call("execute", `{"code":"print(f(3))"}`), `"25"`)
)

const (
	sameResultsA = `execute({"code":"assert f(2) == 16"})`
	sameResultsB = `execute({"code":"print(f(2))"})`
	sameResultsC = `execute({"code":"print(f(3))"})`
)

// sameResultsStop is the stop of a ping-pong whose results repeat.
func sameResultsStop(period, repeats int, cycle ...string) guard.Verdict {
	e := ev(period, repeats, 2, cycle...)
	e.SameResults = true
	return stop(e, guard.PhaseCheck)
}

// withInput returns s with new input.
func withInput(s guard.Step) guard.Step {
	s.Input = "the user says something new"
	return s
}

func TestSameResultsBoundaries(t *testing.T) {
	aa, bb := sameResultsAssert, sameResultsPrint
	changed := withResult(call("execute", `{"code":"print(f(2))"}`), `"6"`)
	plainA, plainB := call("execute", `{"code":"assert f(2) == 16"}`), call("execute", `{"code":"print(f(2))"}`)
	check := guard.PhaseCheck
	tests := []struct {
		name  string
		opts  oscillation.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "a b a goes on, the second round stops",
			steps: steps(aa, bb, aa, bb),
			want:  cat(goOn(3), one(sameResultsStop(2, 2, sameResultsA, sameResultsB))),
		},
		{
			name:  "a result that changes in the second round goes on, until three rounds of calls",
			steps: steps(aa, bb, aa, changed, aa, bb),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sameResultsA, sameResultsB), check))),
		},
		{
			name:  "calls of two tools keep the threshold of three rounds",
			steps: steps(withResult(a, `1`), withResult(b, `1`), withResult(a, `1`), withResult(b, `1`), withResult(a, `1`), withResult(b, `1`)),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "calls without results keep the threshold of three rounds",
			steps: steps(plainA, plainB, plainA, plainB, plainA, plainB),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sameResultsA, sameResultsB), check))),
		},
		{
			name:  "new input within the rounds: two fresh rounds after it",
			steps: []guard.Step{step(aa), withInput(step(bb)), step(aa), step(bb), step(aa)},
			want:  cat(goOn(4), one(sameResultsStop(2, 2, sameResultsB, sameResultsA))),
		},
		{
			name:  "at the same period, three rounds of calls are reported as such",
			steps: []guard.Step{step(aa), step(bb), withInput(step(aa)), step(bb), step(aa), step(bb)},
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sameResultsA, sameResultsB), check))),
		},
		{
			name:  "new input on a step without calls between the rounds",
			steps: []guard.Step{step(aa), step(bb), withInput(guard.Step{Text: "ok"}), step(aa), step(bb)},
			want:  goOn(5),
		},
		{
			name:  "new input before the first call counts for nothing",
			steps: []guard.Step{withInput(step(aa)), step(bb), step(aa), step(bb)},
			want:  cat(goOn(3), one(sameResultsStop(2, 2, sameResultsA, sameResultsB))),
		},
		{
			name:  "both rounds in one step go on: they were asked for before any result came back",
			steps: []guard.Step{step(aa, bb, aa, bb)},
			want:  goOn(1),
		},
		{
			name:  "after both rounds in one step, the next step's call stops",
			steps: []guard.Step{step(aa, bb, aa, bb), step(aa)},
			want:  cat(goOn(1), one(sameResultsStop(2, 2, sameResultsB, sameResultsA))),
		},
		{
			name:  "rounds that reach back one call before the step stop",
			steps: []guard.Step{step(aa), step(bb, aa, bb)},
			want:  cat(goOn(1), one(sameResultsStop(2, 2, sameResultsA, sameResultsB))),
		},
		{
			name:  "period 3: five calls go on, the sixth stops",
			steps: steps(aa, bb, sameResultsThird, aa, bb, sameResultsThird),
			want:  cat(goOn(5), one(sameResultsStop(3, 2, sameResultsA, sameResultsB, sameResultsC))),
		},
		{
			name:  "one call again and again is the repeat rule's",
			steps: steps(bb, bb, bb, bb),
			want:  goOn(4),
		},
		{
			name:  "the reference's reading: three rounds",
			opts:  reference,
			steps: steps(aa, bb, aa, bb, aa, bb),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sameResultsA, sameResultsB), check))),
		},
		{
			name:  "SameResults 3 under Repeats 4: the sixth call stops, not the fourth or fifth",
			opts:  oscillation.Options{Repeats: 4, SameResults: 3},
			steps: steps(aa, bb, aa, bb, aa, bb),
			want: cat(goOn(5), one(func() guard.Verdict {
				v := sameResultsStop(2, 3, sameResultsA, sameResultsB)
				e := v.Evidence.(oscillation.Evidence)
				e.Threshold = 3
				v.Evidence, v.Feedback = e, e.Feedback(check)
				return v
			}())),
		},
		{
			name:  "a cycle that goes on stops again with a growing count",
			steps: steps(aa, bb, aa, bb, aa),
			want:  cat(goOn(3), one(sameResultsStop(2, 2, sameResultsA, sameResultsB)), one(sameResultsStop(2, 2, sameResultsB, sameResultsA))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{})
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSameResultsHardNegatives: the ping-pongs of healthy runs that two
// rounds of calls alone would stop, and those of other tools, go on at
// their second round.
func TestSameResultsHardNegatives(t *testing.T) {
	handoffWriter := withResult(call("transfer_to_writer", `{}`), `"Transferred to writer"`)
	handoffCritic := withResult(call("transfer_to_critic", `{}`), `"Transferred to critic"`)
	status := withResult(call("job_status", `{"job":"deploy-42"}`), `"running"`)
	wait := withResult(call("wait", `{"seconds":30}`), `"waited 30 s"`)
	out := withResult(call("search_direct_flight", `{"origin":"IAH","destination":"SFO"}`), `[{"flight":"HAT072"}]`)
	back := withResult(call("search_direct_flight", `{"origin":"SFO","destination":"IAH"}`), `[{"flight":"HAT082"}]`)
	for name, ss := range map[string][]guard.Step{
		"handoffs between two agents":   steps(handoffWriter, handoffCritic, handoffWriter, handoffCritic),
		"a status check and a wait":     steps(status, wait, status, wait),
		"searches again on a new input": {step(out), step(back), {Text: "Here are the flights."}, withInput(step(out)), step(back)},
	} {
		t.Run(name, func(t *testing.T) {
			g := newGuard(t, oscillation.Options{}, guard.Config{})
			if diff := cmp.Diff(goOn(len(ss)), run(t, g, ss), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameResultsWarn(t *testing.T) {
	g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
	got := run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert, sameResultsPrint))
	want := cat(goOn(2), one(warning(3, `a cycle of 2 calls (execute -> execute) is one call short of repeating 2 times in a row`)),
		one(sameResultsStop(2, 2, sameResultsA, sameResultsB)))
	if diff := cmp.Diff(want, got, ignoreDetail); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	// The detail of the warning.
	g = newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
	got = run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert))
	if w := got[2].Warnings; len(w) != 1 || w[0].Detail != `a cycle of 2 calls (execute -> execute) is one call short of repeating 2 times in a row` {
		t.Errorf("warnings %+v", w)
	}
	// A call without a result cannot be followed with the same result; new
	// input on the step of the third call takes the warning back.
	for name, ss := range map[string][]guard.Step{
		"no result to repeat": steps(sameResultsAssert, call("execute", `{"code":"print(f(2))"}`), sameResultsAssert),
		"new input":           {step(sameResultsAssert), step(sameResultsPrint), withInput(step(sameResultsAssert))},
	} {
		g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
		if diff := cmp.Diff(goOn(3), run(t, g, ss), ignoreDetail); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestSameResultsPreflight: a call not yet run has no result, so preflight
// refuses nothing at the second round; the third round of calls is refused
// as before.
func TestSameResultsPreflight(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert))
	before := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: true})
	if d := ruletest.Preflight(t, g, sameResultsPrint); !d.Allow {
		t.Errorf("preflight of the fourth call: %+v, want allowed", d)
	}
	if after := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: true}); string(before) != string(after) {
		t.Errorf("preflight changed the state:\n%s\n%s", before, after)
	}
	g = newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert, changedPrint(), sameResultsAssert))
	if d := ruletest.Preflight(t, g, sameResultsPrint); d.Allow || d.Evidence.(oscillation.Evidence).SameResults {
		t.Errorf("preflight of the sixth call: %+v, want refused for three rounds of calls", d)
	}
}

func changedPrint() guard.ToolCall {
	return withResult(call("execute", `{"code":"print(f(2))"}`), `"6"`)
}

// TestSameResultsFeedback: the stop's feedback and detail name tools only in
// the feedback, never arguments, results or errors.
func TestSameResultsFeedback(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	v := run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert, sameResultsPrint))[3]
	if !v.Stop || !strings.Contains(v.Feedback, "`execute`") || !strings.Contains(v.Detail, "with the same results (threshold 2)") {
		t.Fatalf("verdict %+v", v)
	}
	for _, secret := range []string{"assert", "16", "5", "print", "AssertionError"} {
		if strings.Contains(v.Feedback, secret) {
			t.Errorf("feedback %q holds %q", v.Feedback, secret)
		}
	}
	b, _ := json.Marshal(v.Evidence)
	if !strings.Contains(string(b), `"sameResults":true`) || !strings.Contains(string(b), `"threshold":2`) {
		t.Errorf("evidence %s", b)
	}
}

// TestSameResultsSnapshot: a guard restored mid-ping-pong stops where the
// original does, names hashed by a snapshot without previews included; a
// state written before the rule compared results restores with nothing
// counted, so its next round goes on.
func TestSameResultsSnapshot(t *testing.T) {
	odd := func(c guard.ToolCall) guard.ToolCall { c.Name = "run cell/é"; return c } // no identifier: hashed without previews
	for _, previews := range []bool{true, false} {
		r := newRule(t, oscillation.Options{})
		g := testutil.New(t, r)
		run(t, g, steps(odd(sameResultsAssert), odd(sameResultsPrint), odd(sameResultsAssert)))
		data := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: previews})
		restored, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{r}})
		if err != nil {
			t.Fatal(err)
		}
		v := ruletest.Check(t, restored, step(odd(sameResultsPrint)))
		if e, _ := v.Evidence.(oscillation.Evidence); !v.Stop || !e.SameResults {
			t.Errorf("previews %v: restored guard goes on with %+v, want the second round to stop", previews, v)
		}
	}

	r := newRule(t, oscillation.Options{})
	g := testutil.New(t, r)
	run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert))
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	state := ruletest.StateOf(t, g, oscillation.Name, guard.SnapshotOptions{})
	var st map[string]json.RawMessage
	if err := json.Unmarshal([]byte(state), &st); err != nil || st["same"] == nil || st["fresh"] == nil {
		t.Fatalf("state %s: want same and fresh (%v)", state, err)
	}
	delete(st, "same")
	delete(st, "fresh")
	delete(st, "lastStep")
	old, _ := json.Marshal(st)
	restored, err := guard.Restore([]byte(strings.Replace(string(data), state, string(old), 1)), guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatalf("Restore with the state %s: %v", old, err)
	}
	got := run(t, restored, steps(sameResultsPrint, sameResultsAssert, sameResultsPrint))
	if got[0].Stop || got[1].Stop || !got[2].Stop {
		t.Errorf("after restoring %s: %v, want two fresh rounds (the sixth call) to stop", old, got)
	}
}

// TestSameResultsRestoreRejects: counters that disagree with the calls held,
// or that options which do not compare results cannot hold.
func TestSameResultsRestoreRejects(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(sameResultsAssert, sameResultsPrint, sameResultsAssert))
	good := string(stateOf(t, g, guard.SnapshotOptions{}))
	if !strings.Contains(good, `"same":[1,0],"fresh":3`) {
		t.Fatalf("state %s", good)
	}
	for _, bad := range []string{
		strings.Replace(good, `"same":[1,0]`, `"same":[0,0]`, 1),
		strings.Replace(good, `"same":[1,0]`, `"same":[1]`, 1),
		strings.Replace(good, `"same":[1,0]`, `"same":[-1,0]`, 1),
		strings.Replace(good, `"fresh":3`, `"fresh":-1`, 1),
		strings.Replace(good, `,"fresh":3`, ``, 1),
		strings.Replace(good, `"same":[1,0],`, ``, 1),
		strings.Replace(good, `"lastStep":1`, `"lastStep":-1`, 1),
		strings.Replace(good, `"lastStep":1`, `"lastStep":4`, 1),
		strings.Replace(strings.Replace(good, `"same":[1,0],`, ``, 1), `"fresh":3,`, ``, 1),
	} {
		d := newState(t, oscillation.Options{})
		if err := d.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s) succeeded", bad)
		}
	}
	if err := newState(t, oscillation.Options{}).Restore([]byte(good)); err != nil {
		t.Errorf("Restore(%s): %v", good, err)
	}
	if err := newState(t, reference).Restore([]byte(good)); err == nil {
		t.Errorf("Restore(%s) under the reference's reading succeeded", good)
	}
	// The counters must fit the calls recorded (3): a full tail may stand
	// for a longer sequence, but not for more calls than were made.
	data := string(testutil.Snapshot(t, g, guard.SnapshotOptions{}))
	for _, forged := range []string{
		strings.Replace(data, `"same":[1,0]`, `"same":[2,0]`, 1),
		strings.Replace(data, `"fresh":3`, `"fresh":4`, 1),
	} {
		if forged == data {
			t.Fatalf("nothing replaced in %s", data)
		}
		if _, err := guard.Restore([]byte(forged), guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{})}}); err == nil {
			t.Errorf("restored %s", forged)
		}
	}
}

func TestSameResultsOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   oscillation.Options
		fields []string
	}{
		{oscillation.Options{SameResults: 1}, []string{"SameResults"}},
		{oscillation.Options{SameResults: -1}, []string{"SameResults"}},
		{oscillation.Options{SameResults: 4}, []string{"SameResults"}},
		{oscillation.Options{Repeats: 2, SameResults: 3}, []string{"SameResults"}},
	} {
		_, err := oscillation.New(tt.opts)
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, want an invalid option", tt.opts, err)
			continue
		}
		if diff := cmp.Diff(tt.fields, testutil.OptionFields(t, err, oscillation.Name)); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for o, want := range map[oscillation.Options]oscillation.Options{
		{}:                           {MaxPeriod: 3, Repeats: 3, SameResults: 2},
		{SameResults: 3}:             {MaxPeriod: 3, Repeats: 3},
		{Repeats: 2}:                 {MaxPeriod: 3, Repeats: 2},
		{Repeats: 5, SameResults: 4}: {MaxPeriod: 3, Repeats: 5, SameResults: 4},
	} {
		d, err := oscillation.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, d.Options()); diff != "" {
			t.Errorf("New(%+v).Options() (-want +got):\n%s", o, diff)
		}
	}
}

// TestRoundsInOneStepSummary: after a step whose calls alone make two rounds
// with the same results, the summary counts one call short of them (the
// next step's call stops), before and after a restore, which keeps the calls
// of the newest step.
func TestRoundsInOneStepSummary(t *testing.T) {
	aa, bb := sameResultsAssert, sameResultsPrint
	r := newRule(t, oscillation.Options{})
	g := testutil.New(t, r)
	if v := ruletest.Check(t, g, step(aa, bb, aa, bb)); v.Stop {
		t.Fatalf("the rounds of one step stopped: %v", v)
	}
	want := oscillation.Summary{Period: 2, Calls: 4, SamePeriod: 2, SameCalls: 3}
	if diff := cmp.Diff(want, summary(t, g).Detectors[oscillation.Name]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// A step without calls changes nothing.
	if v := ruletest.Check(t, g, guard.Step{Text: "let me think"}); v.Stop {
		t.Fatalf("a step without calls stopped: %v", v)
	}
	if diff := cmp.Diff(want, summary(t, g).Detectors[oscillation.Name]); diff != "" {
		t.Errorf("summary after a step without calls (-want +got):\n%s", diff)
	}
	state := ruletest.StateOf(t, g, oscillation.Name, guard.SnapshotOptions{})
	if !strings.Contains(state, `"lastStep":4`) {
		t.Errorf("state %s: want lastStep 4", state)
	}
	restored, err := guard.Restore(testutil.Snapshot(t, g, guard.SnapshotOptions{}), guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, summary(t, restored).Detectors[oscillation.Name]); diff != "" {
		t.Errorf("summary after restore (-want +got):\n%s", diff)
	}
	if v := ruletest.Check(t, restored, step(aa)); !v.Stop {
		t.Errorf("the next step's call went on: %v", v)
	}
	// New input on a step without calls: no round counts from before it,
	// and the state restores.
	g = testutil.New(t, r)
	ruletest.Check(t, g, step(aa, bb, aa, bb))
	ruletest.Check(t, g, guard.Step{Text: "ok", Input: "the user says something new"})
	if got := summary(t, g).Detectors[oscillation.Name].(oscillation.Summary); got.SameCalls != 0 {
		t.Errorf("summary after new input: %+v, want no rounds of same results", got)
	}
	if _, err := guard.Restore(testutil.Snapshot(t, g, guard.SnapshotOptions{}), guard.Config{Rules: []rule.Rule{r}}); err != nil {
		t.Errorf("restore after new input: %v", err)
	}
}
