package stall_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

func call(tool, args string) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args)}
}

func withResult(c guard.ToolCall, result string) guard.ToolCall {
	c.Result = json.RawMessage(result)
	return c
}

func failed(c guard.ToolCall, msg string) guard.ToolCall {
	c.Err = errors.New(msg)
	return c
}

func step(text string, calls ...guard.ToolCall) guard.Step {
	return guard.Step{Text: text, ToolCalls: calls}
}

// talk returns a text-only step whose text differs with i.
func talk(i int) guard.Step { return step(fmt.Sprintf("Attempt %d: let me try another way.", i)) }

// distinct returns a step whose only outcome is the i-th of a series.
func distinct(i int) guard.Step {
	return step("", withResult(call("fetch", fmt.Sprintf(`{"page":%d}`, i)), `"ok"`))
}

var (
	a     = withResult(call("search", `{"q":"a"}`), `["r1"]`)
	a2    = withResult(call("search", `{"q":"a"}`), `["r2"]`)
	b     = withResult(call("read", `{"path":"/x"}`), `"text"`)
	think = call("think", `{}`)
)

func stop(steps, threshold int) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: stall.ReasonStall, Code: stall.Code,
		Evidence: stall.Evidence{Steps: steps, Threshold: threshold}}
	v.Feedback = v.Evidence.(stall.Evidence).Feedback()
	v.Detector = stall.Name
	return v
}

func warn(steps, threshold int) guard.Verdict {
	w := guard.Warning{Code: stall.WarningCode, Metric: "stalledSteps", Value: float64(steps),
		Limit: float64(threshold), Ratio: float64(steps) / float64(threshold)}
	w.Feedback = stall.WarningFeedback(w)
	w.Detector = stall.Name
	return guard.Verdict{Warnings: []guard.Warning{w}}
}

var ignoreDetail = cmp.Options{
	cmpopts.IgnoreFields(guard.Verdict{}, "Detail"),
	cmpopts.IgnoreFields(guard.Warning{}, "Detail"),
}

type tb interface {
	ruletest.TB
	Fatal(args ...any)
}

func newGuard(t tb, o stall.Options, g guard.Config) *guard.Guard {
	t.Helper()
	d, err := stall.New(o)
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

func run(t ruletest.TB, g *guard.Guard, steps []guard.Step) []guard.Verdict {
	t.Helper()
	out := make([]guard.Verdict, len(steps))
	for i, s := range steps {
		out[i] = ruletest.Check(t, g, s)
	}
	return out
}

func goOn(n int) []guard.Verdict { return make([]guard.Verdict, n) }

func cat(vs ...[]guard.Verdict) []guard.Verdict {
	var out []guard.Verdict
	for _, v := range vs {
		out = append(out, v...)
	}
	return out
}

func one(v guard.Verdict) []guard.Verdict { return []guard.Verdict{v} }

func talks(from, n int) []guard.Step {
	out := make([]guard.Step, n)
	for i := range out {
		out[i] = talk(from + i)
	}
	return out
}

func steps(parts ...[]guard.Step) []guard.Step {
	var out []guard.Step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		opts  stall.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "four stalled steps go on, the fifth stops, whatever their text",
			steps: talks(0, 5),
			want:  cat(goOn(4), one(stop(5, 5))),
		},
		{
			name:  "a stall that goes on stops again, with a growing count",
			steps: talks(0, 7),
			want:  cat(goOn(4), one(stop(5, 5)), one(stop(6, 5)), one(stop(7, 5))),
		},
		{
			name:  "threshold 2",
			opts:  stall.Options{Threshold: 2},
			steps: talks(0, 2),
			want:  cat(goOn(1), one(stop(2, 2))),
		},
		{
			name:  "threshold 3: two go on, three stop",
			opts:  stall.Options{Threshold: 3},
			steps: steps(talks(0, 2), []guard.Step{distinct(0)}, talks(2, 3)),
			want:  cat(goOn(5), one(stop(3, 3))),
		},
		{
			name:  "a step with a refused call neither counts nor starts the count again",
			opts:  stall.Options{Threshold: 3},
			steps: steps(talks(0, 2), []guard.Step{{Text: "again", Refused: []guard.ToolCall{a}}, {Refused: []guard.ToolCall{a}}}, talks(2, 1)),
			want:  cat(goOn(4), one(stop(3, 3))),
		},
		{
			name:  "empty steps are stalled",
			opts:  stall.Options{Threshold: 3},
			steps: []guard.Step{{}, {}, {}},
			want:  cat(goOn(2), one(stop(3, 3))),
		},
		{
			name:  "a new outcome restarts the count",
			steps: steps(talks(0, 4), []guard.Step{step("", a)}, talks(4, 5)),
			want:  cat(goOn(9), one(stop(5, 5))),
		},
		{
			name:  "the same outcome again is no progress",
			opts:  stall.Options{Threshold: 3},
			steps: []guard.Step{step("x", a), step("y", a), step("z", a), step("w", a)},
			want:  cat(goOn(3), one(stop(3, 3))),
		},
		{
			name:  "a new result of the same call is progress, results seen before are not",
			opts:  stall.Options{Threshold: 2},
			steps: []guard.Step{step("", a), step("", a2), step("", a), step("", a2), step("", a)},
			want:  cat(goOn(3), one(stop(2, 2)), one(stop(3, 2))),
		},
		{
			name:  "errors are outcomes",
			opts:  stall.Options{Threshold: 2},
			steps: []guard.Step{step("", a), step("", failed(a, "timeout")), step("", failed(a, "timeout")), step("", failed(a, "timeout"))},
			want:  cat(goOn(3), one(stop(2, 2))),
		},
		{
			name:  "a step is progress when any of its outcomes is new",
			opts:  stall.Options{Threshold: 2},
			steps: []guard.Step{step("", a), step("", a), step("", a), step("", a, b), step("", b, a), step("", b, a)},
			want:  cat(goOn(2), one(stop(2, 2)), goOn(2), one(stop(2, 2))),
		},
		{
			name:  "ignored calls are not outcomes",
			opts:  stall.Options{Threshold: 3},
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step("", think), step("", withResult(think, `1`)), step("", withResult(think, `2`))},
			want:  cat(goOn(2), one(stop(3, 3))),
		},
		{
			name: "new input is progress",
			steps: steps(talks(0, 4), []guard.Step{{Text: "Which city?", Input: "Paris"}}, talks(4, 4),
				[]guard.Step{{Input: "Rome"}}, talks(8, 5)),
			want: cat(goOn(14), one(stop(5, 5))),
		},
		{
			name:  "an outcome older than the window is new again",
			opts:  stall.Options{Threshold: 2, Window: 2},
			steps: []guard.Step{distinct(0), distinct(1), distinct(2), distinct(0), distinct(1), distinct(1), distinct(1)},
			want:  cat(goOn(6), one(stop(2, 2))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, tt.gopts)
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarn(t *testing.T) {
	tests := []struct {
		name  string
		opts  stall.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "the step one short of the threshold warns, the threshold stops",
			opts:  stall.Options{Warn: true},
			steps: talks(0, 6),
			want:  cat(goOn(3), one(warn(4, 5)), one(stop(5, 5)), one(stop(6, 5))),
		},
		{
			name:  "no warning without Warn",
			steps: talks(0, 4),
			want:  goOn(4),
		},
		{
			name:  "a warned stall that ends goes on, and warns again when it comes back",
			opts:  stall.Options{Threshold: 3, Warn: true},
			steps: steps(talks(0, 2), []guard.Step{distinct(0)}, talks(2, 2)),
			want:  cat(goOn(1), one(warn(2, 3)), goOn(2), one(warn(2, 3))),
		},
		{
			name:  "threshold 2 never warns: every stalled step would",
			opts:  stall.Options{Threshold: 2, Warn: true},
			steps: steps([]guard.Step{distinct(0)}, talks(0, 2)),
			want:  cat(goOn(2), one(stop(2, 2))),
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

// TestWarnChangesNoStop runs random runs with and without warnings and
// checks that the stops are the same.
func TestWarnChangesNoStop(t *testing.T) {
	pool := []guard.Step{step("x", a), step("y", a2), step("", b), step("z"), {}, {Input: "hi"}, distinct(0), distinct(1)}
	rapid.Check(t, func(t *rapid.T) {
		th := rapid.IntRange(2, 5).Draw(t, "threshold")
		plain := newGuard(t, stall.Options{Threshold: th}, guard.Config{})
		warned := newGuard(t, stall.Options{Threshold: th, Warn: true}, guard.Config{})
		for i, s := range rapid.SliceOfN(rapid.SampledFrom(pool), 1, 30).Draw(t, "steps") {
			p, w := ruletest.Check(t, plain, s), ruletest.Check(t, warned, s)
			w.Warnings = nil
			if diff := cmp.Diff(p, w); diff != "" {
				t.Fatalf("step %d: warnings changed the verdict (-without +with):\n%s", i, diff)
			}
		}
	})
}

func TestDetail(t *testing.T) {
	g := newGuard(t, stall.Options{Threshold: 2, Warn: true}, guard.Config{})
	v := run(t, g, talks(0, 2))[1]
	if want := `2 steps in a row brought no new tool outcome and no new input (threshold 2)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	g = newGuard(t, stall.Options{Threshold: 3, Warn: true}, guard.Config{})
	v = run(t, g, talks(0, 2))[1]
	if len(v.Warnings) != 1 || v.Warnings[0].Detail != "2 steps in a row brought no new tool outcome and no new input; 3 stop the run" {
		t.Errorf("warnings = %+v", v.Warnings)
	}
}

// TestUserReply checks that the JSON field userReply is new input.
func TestUserReply(t *testing.T) {
	g := newGuard(t, stall.Options{Threshold: 2}, guard.Config{})
	for i := range 6 {
		var s guard.Step
		if err := json.Unmarshal(fmt.Appendf(nil, `{"text": "Anything else? (%d)", "toolCalls": [], "userReply": "yes, %d more"}`, i, i), &s); err != nil {
			t.Fatal(err)
		}
		if v := ruletest.Check(t, g, s); v.Stop {
			t.Fatalf("step %d stopped: %v", i, v)
		}
	}
}

// TestNoProgressFirst checks that a stall with one text, which both rules
// see, is reported by no progress, which ranks first.
func TestNoProgressFirst(t *testing.T) {
	np, _ := noprogress.New(noprogress.Options{})
	st, _ := stall.New(stall.Options{Threshold: 3})
	g, err := guard.New(guard.Config{Rules: []rule.Rule{st, np}})
	if err != nil {
		t.Fatal(err)
	}
	v := run(t, g, []guard.Step{step("again"), step("again"), step("again")})[2]
	if v.Reason != noprogress.ReasonNoProgress {
		t.Errorf("reason = %s, want no-progress", v.Reason)
	}
	if st.Priority() <= np.Priority() || st.Priority() >= rule.PriorityCustom {
		t.Errorf("priority %d is not between no progress and custom", st.Priority())
	}
}

func TestPreflightJudgesNothing(t *testing.T) {
	g := newGuard(t, stall.Options{Threshold: 2}, guard.Config{})
	run(t, g, talks(0, 5))
	if d := ruletest.Preflight(t, g, a); !d.Allow || d.Warnings != nil {
		t.Errorf("preflight: %+v", d)
	}
}

// TestSnapshotRestoreContinues cuts random runs at random points, restores
// and checks that the restored guard gives the same verdicts.
func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.Step{step("x", a), step("x", a2), step("X", b), step("y"), step("x"), step(""),
		{Input: "hi"}, step("", think), distinct(0), distinct(1), distinct(2), distinct(3)}
	rapid.Check(t, func(t *rapid.T) {
		opts := stall.Options{Window: rapid.IntRange(1, 4).Draw(t, "window"), Threshold: rapid.IntRange(2, 4).Draw(t, "threshold"),
			Warn: rapid.Bool().Draw(t, "warn")}
		gopts := guard.Config{Ignore: []string{"think"}}
		steps := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 30).Draw(t, "steps")
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")
		orig := newGuard(t, opts, gopts)
		run(t, orig, steps[:cut])
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{Previews: rapid.Bool().Draw(t, "previews")})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := stall.New(opts)
		gopts.Rules = []rule.Rule{d}
		restored, err := guard.Restore(data, gopts)
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		again, _ := restored.Snapshot(context.Background(), guard.SnapshotOptions{})
		if diff := cmp.Diff(string(data), string(again)); diff != "" {
			t.Fatalf("snapshot of the restored guard (-saved +restored):\n%s", diff)
		}
		if diff := cmp.Diff(run(t, orig, steps[cut:]), run(t, restored, steps[cut:])); diff != "" {
			t.Fatalf("verdicts after the cut (-original +restored):\n%s", diff)
		}
	})
}

func TestSnapshotState(t *testing.T) {
	d, _ := stall.New(stall.Options{Window: 2})
	g := testutil.New(t, d)
	if s, err := ruletest.Saver(t, d).Snapshot(guard.SnapshotOptions{}); err != nil || string(s) != "null" {
		t.Errorf("fresh state = %s, %v; want null", s, err)
	}
	if s := ruletest.StateOf(t, g, stall.Name, guard.SnapshotOptions{}); s != "null" {
		t.Errorf("fresh guard's state = %s; want null", s)
	}
	run(t, g, []guard.Step{distinct(0), distinct(1), distinct(2), distinct(1), talk(0)})
	s := []byte(ruletest.StateOf(t, g, stall.Name, guard.SnapshotOptions{Previews: true}))
	var got struct {
		Stalled  int
		Outcomes string
	}
	if err := json.Unmarshal(s, &got); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawStdEncoding.DecodeString(got.Outcomes)
	if got.Stalled != 2 || err != nil || len(raw) != 32 {
		t.Errorf("state = %s", s)
	}
	if r := ruletest.StateOf(t, g, stall.Name, guard.SnapshotOptions{}); r != string(s) {
		t.Errorf("redacted state %s differs from %s, but holds no preview", r, s)
	}
	if diff := cmp.Diff(stall.Summary{StalledSteps: 2, Outcomes: 2}, testutil.Summary(t, g).Detectors[stall.Name]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

func TestRestoreRejects(t *testing.T) {
	sums := testutil.Sums
	bad := []string{
		``, `[]`, `{`, `"x"`, `{"stalled":"1","outcomes":""}`,
		`{"stalled":-1,"outcomes":""}`,
		`{"stalled":1e300,"outcomes":""}`,
		`{"stalled":0,"outcomes":"` + sums(1, 2, 3, 4) + `"}`,
		`{"stalled":0,"outcomes":"` + sums(1, 2, 1) + `"}`,
		`{"stalled":0,"outcomes":"` + sums(1)[:20] + `"}`,
		`{"stalled":0,"outcomes":"***"}`,
		`{"stalled":0,"outcomes":5}`,
	}
	d, _ := stall.New(stall.Options{Threshold: 3, Window: 3})
	g := testutil.New(t, d)
	run(t, g, talks(0, 2))
	running := ruletest.StateOf(t, g, stall.Name, guard.SnapshotOptions{})
	ruletest.RejectsKeeping(t, d, running, bad)
	good := []string{
		`{"stalled":0,"outcomes":"` + sums(1, 2, 3) + `"}`,
		`{"stalled":7,"outcomes":""}`,
		`{"stalled":0,"outcomes":"` + sums(0) + `"}`,
	}
	for _, s := range good {
		d, _ := stall.New(stall.Options{Window: 3})
		st := ruletest.Saver(t, d)
		if err := st.Restore([]byte(s)); err != nil {
			t.Errorf("Restore(%s): %v", s, err)
		}
		if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != s {
			t.Errorf("snapshot after restore = %s, want %s", got, s)
		}
	}
}

func TestRestoreNullAndResetAreFresh(t *testing.T) {
	seq := steps([]guard.Step{step("", a)}, talks(0, 2), []guard.Step{step("", a)}, talks(2, 3), []guard.Step{step("", b), step("", a)})
	opts := stall.Options{Threshold: 3, Warn: true}
	ruletest.ResetIsFresh(t, func() *guard.Guard { return newGuard(t, opts, guard.Config{}) }, seq)

	// A state restored from a run, then from null, is a fresh state.
	d, _ := stall.New(opts)
	g := testutil.New(t, d)
	run(t, g, seq)
	ruletest.RestoreNullIsFresh(t, d, g)
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: the second guard's new outcomes are not the first's, so each
// stops at its own third stalled step, and not before.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	d, _ := stall.New(stall.Options{Threshold: 3})
	cfg := guard.Config{Rules: []rule.Rule{d}}
	g1, g2 := ruletest.Pair(t, cfg)
	var got1, got2 []bool
	for i := range 3 {
		got1 = append(got1, ruletest.Check(t, g1, step("", a)).Stop) // new once, then stalled
		got2 = append(got2, ruletest.Check(t, g2, distinct(i)).Stop) // new every time
	}
	got1 = append(got1, ruletest.Check(t, g1, step("", a)).Stop)
	for range 3 {
		got2 = append(got2, ruletest.Check(t, g2, distinct(0)).Stop)
	}
	if diff := cmp.Diff([]bool{false, false, false, true}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, false, false, false, true}, got2); diff != "" {
		t.Errorf("second guard's stops (-want +got):\n%s", diff)
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   stall.Options
		fields []string
	}{
		{stall.Options{Threshold: 1}, []string{"Threshold"}},
		{stall.Options{Threshold: -1}, []string{"Threshold"}},
		{stall.Options{Window: -1}, []string{"Window"}},
		{stall.Options{Window: stall.MaxWindow + 1}, []string{"Window"}},
		{stall.Options{Threshold: 1, Window: -5}, []string{"Threshold", "Window"}},
	} {
		d, err := stall.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		fields := testutil.OptionFields(t, err, stall.Name)
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for _, o := range []stall.Options{{Threshold: 2, Window: 1}, {Window: stall.MaxWindow}} {
		if _, err := stall.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	fp := func(o stall.Options) string {
		d, err := stall.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return rule.Fingerprint(d).String()
	}
	if fp(stall.Options{}) != fp(stall.Options{Threshold: stall.DefaultThreshold, Window: stall.DefaultWindow}) {
		t.Error("the zero options and the explicit defaults fingerprint differently")
	}
	if fp(stall.Options{}) == fp(stall.Options{Warn: true}) || fp(stall.Options{Threshold: 4}) == fp(stall.Options{Window: 4}) {
		t.Error("different options fingerprint alike")
	}
	d, _ := stall.New(stall.Options{})
	if diff := cmp.Diff(stall.Options{Threshold: 5, Window: 1024}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "stall" || d.Priority() != stall.Priority {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

// TestRealTraces replays the real runs of testdata/traces with only this
// rule, at its default threshold: no healthy run may stop but those listed
// below (ALFWorld runs and a group chat), each where it stops, and the format-error stall of
// the Gemini run must. The ALFWorld agent answers each command with a
// thought and its action path on steps of their own, so a few failed
// commands make five steps without a new outcome: that is why the rule is
// not in detector.Defaults (docs/thresholds.md).
func TestRealTraces(t *testing.T) {
	want := map[string]int{ // the line of the first stop, 1-based
		"mini-gemini3pro-django-11299.jsonl": 35, // format errors on lines 31-38
		"mini-gemini3pro-sympy-15976.jsonl":  25,
		"react-webshop-ep024.jsonl":          11,
		"react-webshop-ep031.jsonl":          8,
		"react-webshop-ep349.jsonl":          8,
	}
	// Healthy runs it stops (8 ALFWorld runs, and an AutoGen group chat
	// whose agents hand the turn on in words).
	for file, line := range map[string]int{
		"knowagent-llama2-13b-d0-puttwo-pen-dresser-327.jsonl":       34,
		"autogen-gpt4o-groupchat-fsm-chocolates.jsonl":               6,
		"knowagent-alfworld-d0-put-cd-dresser-323.jsonl":             34,
		"knowagent-alfworld-d1-examine-book-desklamp-302.jsonl":      26,
		"knowagent-alfworld-d1-examine-newspaper-desklamp-225.jsonl": 29,
		"knowagent-alfworld-d0-examine-box-desklamp-205.jsonl":       39,
		"knowagent-alfworld-d0-examine-cd-desklamp-307.jsonl":        18,
		"knowagent-alfworld-d0-put-creditcard-shelf-307.jsonl":       34,
		"knowagent-alfworld-d1-examine-book-desklamp-304.jsonl":      16,
	} {
		want[file] = line
	}
	// The other loops are the default set's to catch; this rule need not.
	ruletest.FirstStops(t, ruletest.Traces(t), func() *guard.Guard { return newGuard(t, stall.Options{}, guard.Config{}) }, want)
}

func ExampleNew() {
	d, err := stall.New(stall.Options{Threshold: 3, Warn: true})
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	// The harness rejects the model's output each time; the text differs.
	for i, text := range []string{"Sorry, one action:", "Here is the single action:", "Trying again:", "Once more:"} {
		v, _ := g.Check(context.Background(), guard.Step{Text: text})
		fmt.Printf("step %d: %v\n", i, v)
	}
	// Output:
	// step 0: go on
	// step 1: go on
	// warning: STALL_WARNING: 2 steps in a row brought no new tool outcome and no new input; 3 stop the run
	// step 2: stop: stall (STALL): 3 steps in a row brought no new tool outcome and no new input (threshold 3); hint: steps keep coming back with nothing new, whatever the text
	// step 3: stop: stall (STALL): 4 steps in a row brought no new tool outcome and no new input (threshold 3); hint: steps keep coming back with nothing new, whatever the text
}
