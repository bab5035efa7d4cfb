package repeat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// call returns a call of tool with JSON arguments.
func call(tool, args string) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args)}
}

// withResult returns c with a JSON result.
func withResult(c guard.ToolCall, result string) guard.ToolCall {
	c.Result = json.RawMessage(result)
	return c
}

// failed returns c with an error.
func failed(c guard.ToolCall) guard.ToolCall {
	c.Err = errors.New("boom")
	return c
}

func step(calls ...guard.ToolCall) guard.Step { return guard.Step{ToolCalls: calls} }

var (
	a     = call("search", `{"q":"a"}`)
	aSwap = call("search", `{ "q" : "a" }`)
	b     = call("search", `{"q":"b"}`)
	c     = call("read", `{"path":"/x"}`)
	think = call("think", `{}`)
)

// stop is the verdict the detector gives (or the refusal it makes) for ev.
func stop(ev repeat.Evidence, phase guard.Phase) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: repeat.ReasonRepeatedToolCall, Code: repeat.Code, Evidence: ev}
	v.Feedback = ev.Feedback(phase)
	v.Detector = repeat.Name
	return v
}

// ignoreDetail leaves the developer text out of table comparisons; it is
// checked on its own in TestDetail.
var ignoreDetail = cmpopts.IgnoreFields(guard.Verdict{}, "Detail")

// tb is what newGuard needs of a *testing.T or a *rapid.T.
type tb interface {
	ruletest.TB
	Fatal(args ...any)
}

func newGuard(t tb, o repeat.Options, g guard.Config) *guard.Guard {
	t.Helper()
	d, err := repeat.New(o)
	if err != nil {
		t.Fatal(err)
	}
	g.Rules = []rule.Rule{d}
	gd, err := guard.New(g)
	if err != nil {
		t.Fatal(err)
	}
	return gd
}

// run checks the steps in order and returns the verdicts.
func run(t ruletest.TB, g *guard.Guard, steps []guard.Step) []guard.Verdict {
	t.Helper()
	out := make([]guard.Verdict, len(steps))
	for i, s := range steps {
		out[i] = ruletest.Check(t, g, s)
	}
	return out
}

// goOn is n verdicts that go on.
func goOn(n int) []guard.Verdict { return make([]guard.Verdict, n) }

func ev(tool, preview string, count, threshold int, steps ...int) repeat.Evidence {
	return repeat.Evidence{Tool: tool, ArgsPreview: preview, Count: count, Threshold: threshold, StepIndexes: steps}
}

func withResults(e repeat.Evidence) repeat.Evidence {
	e.IdenticalResults = true
	return e
}

func TestCheck(t *testing.T) {
	const pa = `{"q":"a"}`
	check := guard.PhaseCheck
	tests := []struct {
		name  string
		opts  repeat.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "two same calls go on",
			steps: []guard.Step{step(a), step(a)},
			want:  goOn(2),
		},
		{
			name:  "the third same call stops",
			steps: []guard.Step{step(a), step(a), step(a)},
			want:  append(goOn(2), stop(ev("search", pa, 3, 3, 0, 1, 2), check)),
		},
		{
			name:  "arguments are compared canonically",
			steps: []guard.Step{step(a), step(aSwap), step(a)},
			want:  append(goOn(2), stop(ev("search", pa, 3, 3, 0, 1, 2), check)),
		},
		{
			name:  "threshold 2: one call goes on, two stop",
			opts:  repeat.Options{Threshold: 2},
			steps: []guard.Step{step(a), step(a)},
			want:  []guard.Verdict{{}, stop(ev("search", pa, 2, 2, 0, 1), check)},
		},
		{
			name:  "threshold 5: four go on, five stop",
			opts:  repeat.Options{Threshold: 5},
			steps: []guard.Step{step(a), step(a), step(a), step(a), step(a)},
			want:  append(goOn(4), stop(ev("search", pa, 5, 5, 0, 1, 2, 3, 4), check)),
		},
		{
			name:  "a longer run stops on every step that extends it",
			steps: []guard.Step{step(a), step(a), step(a), step(a), step(a, a)},
			want: append(goOn(2),
				stop(ev("search", pa, 3, 3, 0, 1, 2), check),
				stop(ev("search", pa, 4, 3, 0, 1, 2, 3), check),
				stop(ev("search", pa, 5, 3, 0, 1, 2, 3, 4), check)),
		},
		{
			name:  "different arguments break the run",
			steps: []guard.Step{step(a), step(a), step(b), step(a), step(a)},
			want:  goOn(5),
		},
		{
			name:  "another tool breaks the run",
			steps: []guard.Step{step(a), step(a), step(c), step(a)},
			want:  goOn(4),
		},
		{
			name:  "parallel calls count one by one",
			steps: []guard.Step{step(a, a, a)},
			want:  []guard.Verdict{stop(ev("search", pa, 3, 3, 0), check)},
		},
		{
			name:  "a run that reaches the threshold mid-step counts though the step ends it",
			steps: []guard.Step{step(a, a), step(a, b), step(b), step(a)},
			want:  []guard.Verdict{{}, stop(ev("search", pa, 3, 3, 0, 1), check), {}, {}},
		},
		{
			name:  "the first call that reaches its threshold is reported",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"read": {RepeatThreshold: 2}}},
			steps: []guard.Step{step(a, a), step(a, c, c, b, b, b)},
			want:  []guard.Verdict{{}, stop(ev("search", pa, 3, 3, 0, 1), check)},
		},
		{
			name:  "steps without calls neither extend nor break a run",
			steps: []guard.Step{step(a), {Text: "hm"}, step(a), {}, step(a), {}},
			want:  []guard.Verdict{{}, {}, {}, {}, stop(ev("search", pa, 3, 3, 0, 2, 4), check), {}},
		},
		{
			name:  "ignored calls neither extend nor break a run, nor fire again",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step(a, think), step(think, a), step(think), step(a), step(think)},
			want:  []guard.Verdict{{}, {}, {}, stop(ev("search", pa, 3, 3, 0, 1, 3), check), {}},
		},
		{
			name:  "failed calls count by default",
			steps: []guard.Step{step(failed(a)), step(a), step(failed(a))},
			want:  append(goOn(2), stop(ev("search", pa, 3, 3, 0, 1, 2), check)),
		},
		{
			name:  "failed calls break a run by default",
			steps: []guard.Step{step(a), step(failed(b)), step(a), step(a)},
			want:  goOn(4),
		},
		{
			name:  "IgnoreErrors removes failed calls",
			opts:  repeat.Options{IgnoreErrors: true},
			steps: []guard.Step{step(a), step(failed(b)), step(a), step(failed(a)), step(a)},
			want:  []guard.Verdict{{}, {}, {}, {}, stop(ev("search", pa, 3, 3, 0, 2, 4), check)},
		},
		{
			name: "RequireIdenticalResults: changing results are no repeat",
			opts: repeat.Options{RequireIdenticalResults: true},
			steps: []guard.Step{step(withResult(a, `1`)), step(withResult(a, `2`)), step(withResult(a, `3`)),
				step(withResult(a, `3`))},
			want: goOn(4),
		},
		{
			name: "RequireIdenticalResults: the third identical outcome stops",
			opts: repeat.Options{RequireIdenticalResults: true},
			steps: []guard.Step{step(withResult(a, `1`)), step(withResult(a, `{"x":1,"y":2}`)),
				step(withResult(a, `{"y":2,"x":1}`)), step(withResult(a, `{"x":1,"y":2}`))},
			want: append(goOn(3), stop(withResults(ev("search", pa, 3, 3, 1, 2, 3)), check)),
		},
		{
			name:  "RequireIdenticalResults: calls without a result compare equal",
			opts:  repeat.Options{RequireIdenticalResults: true},
			steps: []guard.Step{step(a), step(a), step(a)},
			want:  append(goOn(2), stop(withResults(ev("search", pa, 3, 3, 0, 1, 2)), check)),
		},
		{
			name:  "RequireIdenticalResults: errors are outcomes",
			opts:  repeat.Options{RequireIdenticalResults: true},
			steps: []guard.Step{step(failed(a)), step(withResult(a, `"boom"`)), step(failed(a)), step(failed(a))},
			want:  goOn(4),
		},
		{
			name:  "a tool's RepeatThreshold replaces the global one",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"read": {RepeatThreshold: 2}}},
			steps: []guard.Step{step(a), step(a), step(c), step(c)},
			want:  append(goOn(3), stop(ev("read", `{"path":"/x"}`, 2, 2, 2, 3), check)),
		},
		{
			name:  "a tool's RepeatThreshold may be higher",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 4}}},
			steps: []guard.Step{step(a), step(a), step(a), step(a)},
			want:  append(goOn(3), stop(ev("search", pa, 4, 4, 0, 1, 2, 3), check)),
		},
		{
			name: "polling: same arguments are fine while results change",
			opts: repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {Polling: true}}},
			steps: []guard.Step{step(withResult(a, `"pending 1"`)), step(withResult(a, `"pending 2"`)),
				step(withResult(a, `"pending 3"`)), step(withResult(a, `"done"`))},
			want: goOn(4),
		},
		{
			name: "polling: identical outcomes stop at the global threshold",
			opts: repeat.Options{Threshold: 4, Tools: map[string]repeat.ToolPolicy{"search": {Polling: true}}},
			steps: []guard.Step{step(withResult(a, `"x"`)), step(withResult(a, `"p"`)), step(withResult(a, `"p"`)),
				step(withResult(a, `"p"`)), step(withResult(a, `"p"`))},
			want: append(goOn(4), stop(withResults(ev("search", pa, 4, 4, 1, 2, 3, 4)), check)),
		},
		{
			name: "polling: MaxIdenticalResults defaults to the tool's RepeatThreshold",
			opts: repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {Polling: true, RepeatThreshold: 2}}},
			steps: []guard.Step{step(withResult(a, `"x"`)), step(withResult(a, `"p"`)),
				step(withResult(a, `"p"`))},
			want: append(goOn(2), stop(withResults(ev("search", pa, 2, 2, 1, 2)), check)),
		},
		{
			name: "polling: MaxIdenticalResults 5 goes on at 4 and stops at 5",
			opts: repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {Polling: true, RepeatThreshold: 2, MaxIdenticalResults: 5}}},
			steps: []guard.Step{step(withResult(a, `"p"`), withResult(a, `"p"`)), step(withResult(a, `"p"`), withResult(a, `"p"`)),
				step(withResult(a, `"p"`))},
			want: append(goOn(2), stop(withResults(ev("search", pa, 5, 5, 0, 1, 2)), check)),
		},
		{
			name: "polling applies only to its tool",
			opts: repeat.Options{Tools: map[string]repeat.ToolPolicy{"read": {Polling: true}}},
			steps: []guard.Step{step(withResult(a, `"page 1"`)), step(withResult(a, `"page 2"`)), step(withResult(a, `"page 3"`)),
				step(withResult(c, `"page 1"`)), step(withResult(c, `"page 2"`)), step(withResult(c, `"page 3"`))},
			want: append(append(goOn(2), stop(ev("search", pa, 3, 3, 0, 1, 2), check)), goOn(3)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, tt.gopts)
			got := run(t, g, tt.steps)
			if diff := cmp.Diff(tt.want, got, ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepIndexesKeepTheNewest(t *testing.T) {
	g := newGuard(t, repeat.Options{Threshold: 100}, guard.Config{})
	var v guard.Verdict
	for i := 0; i < 99; i++ {
		if v = ruletest.Check(t, g, step(a)); v.Stop {
			t.Fatalf("step %d: stop", i)
		}
	}
	var want []int
	for i := 100 - repeat.MaxStepIndexes; i < 100; i++ {
		want = append(want, i)
	}
	d := ruletest.Preflight(t, g, a)
	if got := d.Evidence.(repeat.Evidence).StepIndexes; !cmp.Equal(want, got) {
		t.Errorf("preflight stepIndexes (-want +got):\n%s", cmp.Diff(want, got))
	}
	v = ruletest.Check(t, g, step(a))
	if got := v.Evidence.(repeat.Evidence).StepIndexes; !cmp.Equal(want, got) {
		t.Errorf("check stepIndexes (-want +got):\n%s", cmp.Diff(want, got))
	}
}

func TestDetail(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	run(t, g, []guard.Step{step(a), step(a)})
	v := ruletest.Check(t, g, step(a))
	if want := `tool "search" called 3 times in a row with the same arguments {"q":"a"} (threshold 3)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	g = newGuard(t, repeat.Options{RequireIdenticalResults: true}, guard.Config{})
	run(t, g, []guard.Step{step(a), step(a)})
	v = ruletest.Check(t, g, step(a))
	if want := `tool "search" called 3 times in a row with the same arguments and the same outcome {"q":"a"} (threshold 3)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	if v.Feedback == "" {
		t.Error("no feedback")
	}
}

func TestPreflight(t *testing.T) {
	const pa = `{"q":"a"}`
	pre := guard.PhasePreflight
	polling := map[string]repeat.ToolPolicy{"search": {Polling: true}}
	tests := []struct {
		name  string
		opts  repeat.Options
		gopts guard.Config
		steps []guard.Step
		calls []guard.ToolCall
		want  guard.Verdict // the refusal as a verdict; zero to allow
	}{
		{name: "nothing recorded, one call", calls: []guard.ToolCall{a}},
		{name: "one recorded, the second is allowed", steps: []guard.Step{step(a)}, calls: []guard.ToolCall{a}},
		{
			name:  "the third same call is refused",
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{a},
			want:  stop(ev("search", pa, 3, 3, 0, 1, 2), pre),
		},
		{
			name:  "arguments are compared canonically",
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{aSwap},
			want:  stop(ev("search", pa, 3, 3, 0, 1, 2), pre),
		},
		{
			name:  "another call is allowed",
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{b},
		},
		{
			name:  "parallel calls are judged in order: a break comes first",
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{b, a},
		},
		{
			name:  "a run that reaches the threshold part-way is refused",
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{a, b},
			want:  stop(ev("search", pa, 3, 3, 0, 1, 2), pre),
		},
		{
			name:  "three parallel calls from scratch",
			calls: []guard.ToolCall{b, a, a, a, a},
			want:  stop(ev("search", pa, 3, 3, 0), pre),
		},
		{
			name:  "a run started in the proposal lists only the next step",
			steps: []guard.Step{step(a), step(b)},
			calls: []guard.ToolCall{a, a, a},
			want:  stop(ev("search", pa, 3, 3, 2), pre),
		},
		{
			name:  "a run longer than the threshold is refused with its count",
			steps: []guard.Step{step(a, a, a, a), {}},
			calls: []guard.ToolCall{a},
			want:  stop(ev("search", pa, 5, 3, 0, 2), pre),
		},
		{
			name:  "ignored calls are skipped",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step(a, think), step(a)},
			calls: []guard.ToolCall{think, a},
			want:  stop(ev("search", pa, 3, 3, 0, 1, 2), pre),
		},
		{
			name:  "a tool's RepeatThreshold applies",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 2}}},
			steps: []guard.Step{step(a)},
			calls: []guard.ToolCall{a},
			want:  stop(ev("search", pa, 2, 2, 0, 1), pre),
		},
		{
			name:  "RequireIdenticalResults refuses nothing",
			opts:  repeat.Options{RequireIdenticalResults: true},
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{a, a, a},
		},
		{
			name:  "a polling tool's call is not judged",
			opts:  repeat.Options{Tools: polling},
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{a, a, a},
		},
		{
			name:  "a polling tool's call breaks the simulated run",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"read": {Polling: true}}},
			steps: []guard.Step{step(a), step(a)},
			calls: []guard.ToolCall{c, a},
		},
		{
			name:  "other tools are judged beside a polling one",
			opts:  repeat.Options{Tools: map[string]repeat.ToolPolicy{"read": {Polling: true}}},
			steps: []guard.Step{step(c), step(a), step(a)},
			calls: []guard.ToolCall{a},
			want:  stop(ev("search", pa, 3, 3, 1, 2, 3), pre),
		},
		{
			name:  "IgnoreErrors: failed calls recorded before do not break the run",
			opts:  repeat.Options{IgnoreErrors: true},
			steps: []guard.Step{step(a), step(failed(b)), step(a)},
			calls: []guard.ToolCall{a},
			want:  stop(ev("search", pa, 3, 3, 0, 2, 3), pre),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, tt.gopts)
			run(t, g, tt.steps)
			before, err := g.Snapshot(context.Background(), guard.SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := ruletest.Preflight(t, g, tt.calls...)
			if diff := cmp.Diff(tt.want, got.Verdict(), ignoreDetail); diff != "" {
				t.Errorf("preflight (-want +got):\n%s", diff)
			}
			after, err := g.Snapshot(context.Background(), guard.SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("preflight changed the state (-before +after):\n%s", diff)
			}
		})
	}
}

// TestPreflightAgreesWithCheck checks that a refusal's evidence is what Check
// reports when the same calls run, counting the refused call.
func TestPreflightAgreesWithCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		threshold := rapid.IntRange(2, 4).Draw(t, "threshold")
		g := newGuard(t, repeat.Options{Threshold: threshold, IgnoreErrors: true}, guard.Config{Ignore: []string{"think"}})
		pool := []guard.ToolCall{a, b, c, think, failed(a)}
		steps := rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3), 0, 8).Draw(t, "steps")
		for _, s := range steps {
			st := step(s...)
			if len(s) == 0 { // an answer in words, sometimes with its reply
				st = guard.Step{Text: "ok", Input: rapid.SampledFrom([]string{"", "again"}).Draw(t, "input")}
			}
			ruletest.Check(t, g, st)
		}
		proposal := rapid.SliceOfN(rapid.SampledFrom(pool[:4]), 1, 4).Draw(t, "proposal")
		d := ruletest.Preflight(t, g, proposal...)
		v := ruletest.Check(t, g, step(proposal...))
		if d.Allow {
			if v.Stop {
				t.Fatalf("preflight allowed calls that Check stops: %v", v)
			}
			return
		}
		if !v.Stop {
			t.Fatalf("preflight refused calls that Check lets go on: %v", d.Verdict())
		}
		if diff := cmp.Diff(v.Evidence, d.Evidence); diff != "" {
			t.Fatalf("evidence (-check +preflight):\n%s", diff)
		}
		if diff := cmp.Diff(v.Detail, d.Detail); diff != "" {
			t.Fatalf("detail (-check +preflight):\n%s", diff)
		}
	})
}

func TestSnapshotRestoreContinues(t *testing.T) {
	opts := repeat.Options{IgnoreErrors: true, Warn: true, Tools: map[string]repeat.ToolPolicy{
		"read": {RepeatThreshold: 2}, "poll": {Polling: true},
	}}
	gopts := guard.Config{Ignore: []string{"think"}}
	pool := []guard.ToolCall{a, b, c, think, failed(a), withResult(call("poll", `1`), `"p"`), withResult(call("poll", `1`), `"q"`)}
	rapid.Check(t, func(t *rapid.T) {
		steps := rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3), 1, 30).Draw(t, "steps")
		// Each step may answer in words and bring input, so that turns
		// are saved too.
		words := rapid.SliceOfN(rapid.SampledFrom([]string{"", "ok"}), len(steps), len(steps)).Draw(t, "text")
		inputs := rapid.SliceOfN(rapid.SampledFrom([]string{"", "again"}), len(steps), len(steps)).Draw(t, "input")
		full := func(i int) guard.Step {
			return guard.Step{ToolCalls: steps[i], Text: words[i], Input: inputs[i]}
		}
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")
		redact := rapid.Bool().Draw(t, "redact")
		orig := newGuard(t, opts, gopts)
		for i := range steps[:cut] {
			ruletest.Check(t, orig, full(i))
		}
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{Previews: !redact})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := repeat.New(opts)
		gopts.Rules = []rule.Rule{d}
		restored, err := guard.Restore(data, gopts)
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		again, err := restored.Snapshot(context.Background(), guard.SnapshotOptions{Previews: !redact})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(data), string(again)); diff != "" {
			t.Fatalf("snapshot of the restored guard (-saved +restored):\n%s", diff)
		}
		for i, s := range steps[cut:] {
			want, got := ruletest.Preflight(t, orig, s...), ruletest.Preflight(t, restored, s...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("preflight before step %d (-original +restored):\n%s", cut+i, diff)
			}
			if diff := cmp.Diff(ruletest.Check(t, orig, full(cut+i)), ruletest.Check(t, restored, full(cut+i))); diff != "" {
				t.Fatalf("step %d (-original +restored):\n%s", cut+i, diff)
			}
		}
	})
}

func TestStepIndexesContinueAcrossRestore(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	run(t, g, []guard.Step{step(a), {}, step(a)})
	data, err := g.Snapshot(context.Background(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := repeat.New(repeat.Options{})
	g, err = guard.Restore(data, guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		t.Fatal(err)
	}
	want := stop(ev("search", `{"q":"a"}`, 3, 3, 0, 2, 3), guard.PhaseCheck)
	if diff := cmp.Diff(want, ruletest.Check(t, g, step(a)), ignoreDetail); diff != "" {
		t.Errorf("verdict after restore (-want +got):\n%s", diff)
	}
}

func TestSnapshotState(t *testing.T) {
	d, _ := repeat.New(repeat.Options{})
	g := testutil.New(t, d)
	state, err := ruletest.Saver(t, d).Snapshot(guard.SnapshotOptions{})
	if err != nil || string(state) != "null" {
		t.Errorf("fresh state = %s, %v; want null", state, err)
	}
	if got := ruletest.StateOf(t, g, repeat.Name, guard.SnapshotOptions{}); got != "null" {
		t.Errorf("fresh guard's state = %s; want null", got)
	}
	run(t, g, []guard.Step{step(a), {}, step(a, a, a)})
	state = []byte(ruletest.StateOf(t, g, repeat.Name, guard.SnapshotOptions{Previews: true}))
	redacted := ruletest.StateOf(t, g, repeat.Name, guard.SnapshotOptions{})
	var got struct {
		Sig   string
		Count int
		Steps []int
	}
	if err := json.Unmarshal(state, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != 4 || !cmp.Equal(got.Steps, []int{0, 2}) || len(got.Sig) != 32 {
		t.Errorf("state = %s", state)
	}
	if string(redacted) != string(state) {
		t.Errorf("redacted state %s differs from %s, but holds no preview", redacted, state)
	}
}

func TestRestoreRejects(t *testing.T) {
	const sig = `"0123456789abcdef0123456789abcdef"`
	tooMany := make([]int, repeat.MaxStepIndexes+1)
	for i := range tooMany {
		tooMany[i] = i
	}
	many, _ := json.Marshal(tooMany)
	bad := []string{
		``,
		`{`,
		`[]`,
		`"x"`,
		`1`,
		`{"sig":` + sig + `,"count":0,"steps":[]}`,
		`{"sig":` + sig + `,"count":-1,"steps":[0]}`,
		`{"sig":` + sig + `,"count":1}`,
		`{"sig":` + sig + `,"count":1,"steps":[0,1]}`,
		`{"sig":` + sig + `,"count":3,"steps":[1,0]}`,
		`{"sig":` + sig + `,"count":3,"steps":[1,1]}`,
		`{"sig":` + sig + `,"count":3,"steps":[-1]}`,
		`{"sig":` + sig + `,"count":1e30,"steps":[0]}`,
		`{"sig":` + sig + `,"count":"3","steps":[0]}`,
		`{"sig":` + sig + `,"count":100,"steps":` + string(many) + `}`,
		`{"sig":"0123","count":1,"steps":[0]}`,
		`{"sig":"0123456789ABCDEF0123456789ABCDEF","count":1,"steps":[0]}`,
		`{"sig":5,"count":1,"steps":[0]}`,
	}
	d, _ := repeat.New(repeat.Options{})
	good := `{"sig":` + sig + `,"count":2,"steps":[4,7]}`
	// A failed restore leaves the state alone.
	ruletest.RejectsKeeping(t, d, good, bad)
	restoresAs(t, d, good)
}

func TestRestoreNullAndResetAreFresh(t *testing.T) {
	steps := []guard.Step{step(a), step(a), step(a), step(b, b), step(b)}
	ruletest.ResetIsFresh(t, func() *guard.Guard { return newGuard(t, repeat.Options{}, guard.Config{}) }, steps)

	// A state restored from a run, then from null, is a fresh state.
	d, _ := repeat.New(repeat.Options{})
	g := testutil.New(t, d)
	run(t, g, steps)
	ruletest.RestoreNullIsFresh(t, d, g)
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: each stops at its own third same call, and not before.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	d, _ := repeat.New(repeat.Options{})
	cfg := guard.Config{Rules: []rule.Rule{d}}
	g1, g2 := ruletest.Pair(t, cfg)
	var got1, got2 []bool
	for range 2 {
		got1 = append(got1, ruletest.Check(t, g1, step(a)).Stop)
	}
	for range 3 {
		got2 = append(got2, ruletest.Check(t, g2, step(b)).Stop)
	}
	got1 = append(got1, ruletest.Check(t, g1, step(a)).Stop)
	if diff := cmp.Diff([]bool{false, false, true}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, true}, got2); diff != "" {
		t.Errorf("second guard's stops (-want +got):\n%s", diff)
	}
	if got := testutil.Summary(t, g2).Detectors[repeat.Name]; !cmp.Equal(got, repeat.Summary{Count: 3, StepIndexes: []int{0, 1, 2}}) {
		t.Errorf("second guard's summary = %+v", got)
	}
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		opts   repeat.Options
		fields []string
	}{
		{repeat.Options{Threshold: 1}, []string{"Threshold"}},
		{repeat.Options{Threshold: -3}, []string{"Threshold"}},
		{repeat.Options{Tools: map[string]repeat.ToolPolicy{"x": {RepeatThreshold: 1}}}, []string{`Tools["x"].RepeatThreshold`}},
		{repeat.Options{Tools: map[string]repeat.ToolPolicy{"x": {Polling: true, MaxIdenticalResults: 1}}}, []string{`Tools["x"].MaxIdenticalResults`}},
		{repeat.Options{Tools: map[string]repeat.ToolPolicy{"x": {MaxIdenticalResults: 4}}}, []string{`Tools["x"].MaxIdenticalResults`}},
		{repeat.Options{Threshold: 1, Tools: map[string]repeat.ToolPolicy{"b": {RepeatThreshold: -1}, "a": {RepeatThreshold: 1}}},
			[]string{"Threshold", `Tools["a"].RepeatThreshold`, `Tools["b"].RepeatThreshold`}},
	}
	for _, tt := range tests {
		d, err := repeat.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		fields := testutil.OptionFields(t, err, repeat.Name)
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
}

func TestOptionsFingerprint(t *testing.T) {
	fp := func(o repeat.Options) string {
		d, err := repeat.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return rule.Fingerprint(d).String()
	}
	same := [][]repeat.Options{
		{{}, {Threshold: 3}, {Tools: map[string]repeat.ToolPolicy{}}, {Tools: map[string]repeat.ToolPolicy{"x": {}}},
			{Tools: map[string]repeat.ToolPolicy{"x": {RepeatThreshold: 3}}}},
		{{Threshold: 4, Tools: map[string]repeat.ToolPolicy{"x": {Polling: true}}},
			{Threshold: 4, Tools: map[string]repeat.ToolPolicy{"x": {Polling: true, RepeatThreshold: 4}}},
			{Threshold: 4, Tools: map[string]repeat.ToolPolicy{"x": {Polling: true, MaxIdenticalResults: 4}}}},
	}
	for _, group := range same {
		for _, o := range group[1:] {
			if fp(o) != fp(group[0]) {
				t.Errorf("options %+v and %+v fingerprint differently", group[0], o)
			}
		}
	}
	different := []repeat.Options{
		{}, {Threshold: 4}, {RequireIdenticalResults: true}, {IgnoreErrors: true},
		{Tools: map[string]repeat.ToolPolicy{"x": {RepeatThreshold: 2}}},
		{Tools: map[string]repeat.ToolPolicy{"y": {RepeatThreshold: 2}}},
		{Tools: map[string]repeat.ToolPolicy{"x": {Polling: true}}},
		{Tools: map[string]repeat.ToolPolicy{"x": {Polling: true, MaxIdenticalResults: 5}}},
	}
	seen := map[string]int{}
	for i, o := range different {
		if j, dup := seen[fp(o)]; dup {
			t.Errorf("options %+v and %+v fingerprint alike", different[j], o)
		}
		seen[fp(o)] = i
	}
	d, _ := repeat.New(repeat.Options{Tools: map[string]repeat.ToolPolicy{"x": {Polling: true}, "y": {}}})
	want := repeat.Options{Threshold: 3, Tools: map[string]repeat.ToolPolicy{"x": {RepeatThreshold: 3, Polling: true, MaxIdenticalResults: 3}}}
	if diff := cmp.Diff(want, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "repeat" || d.Priority() != rule.PriorityRepeat {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

func TestSummary(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	run(t, g, []guard.Step{step(b), step(a), {}, step(a)})
	got := testutil.Summary(t, g).Detectors[repeat.Name]
	want := repeat.Summary{Count: 2, StepIndexes: []int{1, 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

func ExampleNew() {
	d, err := repeat.New(repeat.Options{Tools: map[string]repeat.ToolPolicy{
		"job_status": {Polling: true}, // the same call is fine while its result changes
	}})
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	search := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q": "weather"}`)}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if d, _ := g.Preflight(ctx, search); !d.Allow {
			fmt.Println("refused before it runs:", d.Detail)
		}
		v, _ := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{search}})
		if v.Stop {
			ev := v.Evidence.(repeat.Evidence)
			fmt.Println(v.Code, ev.Tool, ev.Count, ev.StepIndexes)
		}
	}
	// Output:
	// refused before it runs: tool "search" called 3 times in a row with the same arguments {"q":"weather"} (threshold 3)
	// REPEATED_TOOL_CALL search 3 [0 1 2]
}

// optionsJSON is the JSON of the options of a repeat rule made from o.
func optionsJSON(t *testing.T, o repeat.Options) string {
	t.Helper()
	d, err := repeat.New(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d.Options())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// restoresAs checks that a fresh run of d restores good and saves it again
// byte for byte.
func restoresAs(t *testing.T, d rule.Rule, good string) {
	t.Helper()
	st := ruletest.Saver(t, d)
	if err := st.Restore([]byte(good)); err != nil {
		t.Errorf("Restore(%s): %v", good, err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != good {
		t.Errorf("snapshot after restore = %s, want %s", got, good)
	}
}
