package window_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/window"
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

func step(calls ...guard.ToolCall) guard.Step { return guard.Step{ToolCalls: calls} }

// q returns a search for s.
func q(s string) guard.ToolCall { return call("search", fmt.Sprintf(`{"q":%q}`, s)) }

var (
	a     = q("a")
	aSwap = call("search", `{ "q" : "a" }`)
	x, y  = q("x"), q("y")
	z     = call("read", `{"path":"/z"}`)
	think = call("think", `{}`)
)

const pa = `{"q":"a"}`

func stop(tool, preview string, count, threshold, win int, phase guard.Phase) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: window.ReasonWindowedRepeat, Code: window.Code,
		Evidence: window.Evidence{Tool: tool, ArgsPreview: preview, Count: count, Threshold: threshold, Window: win}}
	v.Feedback = v.Evidence.(window.Evidence).Feedback(phase)
	v.Detector = window.Name
	return v
}

// stopA is the stop on a call of a with the default options.
func stopA(count int) guard.Verdict { return stop("search", pa, count, 3, 10, guard.PhaseCheck) }

func warn(tool string, count int) guard.Verdict {
	w := guard.Warning{Code: window.WarningCode, Tool: tool, Value: float64(count), Limit: float64(count + 1),
		Ratio: float64(count) / float64(count+1)}
	w.Feedback = window.WarningFeedback(w)
	w.Detector = window.Name
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

// keysOf returns the keys of the window rule's state in g's snapshot.
func keysOf(t *testing.T, g *guard.Guard) []canonical.Sum {
	t.Helper()
	var s struct{ Keys []canonical.Sum }
	if err := json.Unmarshal([]byte(ruletest.StateOf(t, g, window.Name, guard.SnapshotOptions{})), &s); err != nil {
		t.Fatal(err)
	}
	return s.Keys
}

// windowState is what a state of the window rule is besides a rule.State.
type windowState interface {
	rule.State
	rule.Saver
	Len() int
	RecentKeys() []canonical.Sum
}

// newState returns a fresh state of d.
func newState(t *testing.T, d *window.Rule) windowState {
	t.Helper()
	st, ok := d.NewState().(windowState)
	if !ok {
		t.Fatal("a state has no Snapshot, Restore, Len or RecentKeys")
	}
	return st
}

func newDetector(t tb, o window.Options) *window.Rule {
	t.Helper()
	d, err := window.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newGuard returns a guard with the window rule. The tests that do not say
// how calls are compared judge the crate's rule (CompareCall); those of the
// default, CompareOutcome, say so.
func newGuard(t tb, o window.Options, g guard.Config) *guard.Guard {
	t.Helper()
	if o.Compare == "" {
		o.Compare = window.CompareCall
	}
	g.Rules = []rule.Rule{newDetector(t, o)}
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

// each makes one step per call.
func each(calls ...guard.ToolCall) []guard.Step {
	out := make([]guard.Step, len(calls))
	for i, c := range calls {
		out[i] = step(c)
	}
	return out
}

// fillers returns n distinct calls.
func fillers(n int) []guard.ToolCall {
	out := make([]guard.ToolCall, n)
	for i := range out {
		out[i] = q(fmt.Sprint("filler ", i))
	}
	return out
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		opts  window.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "a x a y a z a: three go on, the fourth stops",
			steps: each(a, x, a, y, a, z, a),
			want:  cat(goOn(6), one(stopA(4))),
		},
		{
			name:  "three same calls in the window go on",
			steps: each(a, x, a, y, a, z),
			want:  goOn(6),
		},
		{
			name:  "a call that left the window no longer counts",
			steps: each(slices.Concat([]guard.ToolCall{a}, fillers(7), []guard.ToolCall{a, a, a})...),
			want:  goOn(11),
		},
		{
			name:  "the window is the last Window calls, the new one included",
			steps: each(slices.Concat([]guard.ToolCall{a}, fillers(6), []guard.ToolCall{a, a, a})...),
			want:  cat(goOn(9), one(stopA(4))),
		},
		{
			name:  "a call that goes over again stops again, with its count",
			steps: each(a, a, a, a, x, a),
			want:  cat(goOn(3), one(stopA(4)), goOn(1), one(stopA(5))),
		},
		{
			name:  "arguments are compared canonically",
			steps: each(a, aSwap, a, aSwap),
			want:  cat(goOn(3), one(stop("search", `{"q":"a"}`, 4, 3, 10, guard.PhaseCheck))),
		},
		{
			name:  "results are not compared",
			steps: each(withResult(a, `1`), withResult(a, `2`), withResult(a, `3`), withResult(a, `4`)),
			want:  cat(goOn(3), one(stopA(4))),
		},
		{
			name:  "ignored calls are not in the window",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: each(a, think, think, think, think, think, think, think, think, think, a, a, a),
			want:  cat(goOn(12), one(stopA(4))),
		},
		{
			name:  "steps without calls change nothing",
			steps: []guard.Step{step(a), {Text: "hm"}, step(a), {}, step(a), {Text: "hm"}, step(a)},
			want:  cat(goOn(6), one(stopA(4))),
		},
		{
			name:  "within a step, calls are judged one by one and the first over is reported",
			steps: []guard.Step{step(a, x, a, x, a, x), step(x, a)},
			want:  cat(goOn(1), one(stop("search", `{"q":"x"}`, 4, 3, 10, guard.PhaseCheck))),
		},
		{
			name:  "threshold 2, window 2: the crate's smallest guard",
			opts:  window.Options{Window: 2, Threshold: 2},
			steps: each(a, a, x, a),
			want:  goOn(4),
		},
		{
			name:  "window 4, threshold 2: in a x a y a, the first a has left",
			opts:  window.Options{Window: 4, Threshold: 2},
			steps: each(a, x, a, y, a),
			want:  goOn(5),
		},
		{
			name:  "window 5, threshold 2: a x a y a stops",
			opts:  window.Options{Window: 5, Threshold: 2},
			steps: each(a, x, a, y, a),
			want:  cat(goOn(4), one(stop("search", pa, 3, 2, 5, guard.PhaseCheck))),
		},
		{
			name:  "threshold equal to the window never stops",
			opts:  window.Options{Window: 3, Threshold: 3},
			steps: each(a, a, a, a, a),
			want:  goOn(5),
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

// TestConsecutiveRuleMisses checks the case the rule exists for: the
// consecutive repeat rule never stops a x a y a z a, this one does.
func TestConsecutiveRuleMisses(t *testing.T) {
	rep, _ := repeat.New(repeat.Options{})
	g, _ := guard.New(guard.Config{Rules: []rule.Rule{rep, newDetector(t, window.Options{})}})
	var got []string
	for _, s := range each(a, x, a, y, a, z, a) {
		got = append(got, ruletest.Check(t, g, s).Detector)
	}
	if diff := cmp.Diff([]string{"", "", "", "", "", "", window.Name}, got); diff != "" {
		t.Errorf("stopping detectors (-want +got):\n%s", diff)
	}
	// A plain run that both rules stop is the repeat rule's, which ranks
	// first.
	rep, _ = repeat.New(repeat.Options{})
	g, _ = guard.New(guard.Config{Rules: []rule.Rule{newDetector(t, window.Options{Threshold: 2}), rep}})
	got = nil
	for _, s := range each(a, a, a) {
		got = append(got, ruletest.Check(t, g, s).Detector)
	}
	if diff := cmp.Diff([]string{"", "", repeat.Name}, got); diff != "" {
		t.Errorf("stopping detectors (-want +got):\n%s", diff)
	}
}

func TestPreflight(t *testing.T) {
	pre := guard.PhasePreflight
	tests := []struct {
		name    string
		opts    window.Options
		history []guard.Step
		calls   []guard.ToolCall
		want    guard.Verdict
	}{
		{
			name:    "the call that would be the fourth in the window is refused",
			history: each(a, x, a, y, a),
			calls:   []guard.ToolCall{a},
			want:    stop("search", pa, 4, 3, 10, pre),
		},
		{
			name:    "the third is allowed",
			history: each(a, x, a, y),
			calls:   []guard.ToolCall{a},
		},
		{
			name:    "a call that would push the oldest same call out is allowed",
			opts:    window.Options{Window: 4, Threshold: 2},
			history: each(a, x, a, y),
			calls:   []guard.ToolCall{a},
		},
		{
			name:    "parallel calls are pushed in order; the first over is refused",
			history: each(a, x, a),
			calls:   []guard.ToolCall{y, a, x, a},
			want:    stop("search", pa, 4, 3, 10, pre),
		},
		{
			name:  "parallel calls alone can go over",
			calls: []guard.ToolCall{x, x, x, a, x},
			want:  stop("search", `{"q":"x"}`, 4, 3, 10, pre),
		},
		{
			name:    "ignored calls are not judged",
			history: each(think, think, think),
			calls:   []guard.ToolCall{think, think},
		},
		{
			name:  "no calls, no refusal",
			calls: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{Ignore: []string{"think"}})
			run(t, g, tt.history)
			before := testutil.Snapshot(t, g, guard.SnapshotOptions{})
			got := ruletest.Preflight(t, g, tt.calls...).Verdict()
			if !got.Stop {
				got = guard.Verdict{}
			}
			if diff := cmp.Diff(tt.want, got, ignoreDetail); diff != "" {
				t.Errorf("preflight (-want +got):\n%s", diff)
			}
			if after := testutil.Snapshot(t, g, guard.SnapshotOptions{}); string(after) != string(before) {
				t.Errorf("preflight changed the state:\n%s\n%s", before, after)
			}
			// Check of the same calls agrees.
			v := ruletest.Check(t, g, step(tt.calls...))
			if v.Stop != tt.want.Stop || v.Code != tt.want.Code {
				t.Errorf("Check of the same calls: %v", v)
			}
		})
	}
}

func TestWarn(t *testing.T) {
	tests := []struct {
		name  string
		opts  window.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "the third same call warns, the fourth stops",
			opts:  window.Options{Warn: true},
			steps: each(a, x, a, y, a, z, a),
			want:  cat(goOn(4), one(warn("search", 3)), goOn(1), one(stopA(4))),
		},
		{
			name: "comparing outcomes, a call whose result changes is not the same: no warning, no stop",
			opts: window.Options{Warn: true, Compare: window.CompareOutcome},
			steps: each(withResult(a, "1"), x, withResult(a, "2"), y, withResult(a, "3"), z,
				withResult(a, "4")),
			want: goOn(7),
		},
		{
			name: "comparing outcomes, the third same answer warns, the fourth stops",
			opts: window.Options{Warn: true, Compare: window.CompareOutcome},
			steps: each(withResult(a, "1"), x, withResult(a, "1"), y, withResult(a, "1"), z,
				withResult(a, "1")),
			want: cat(goOn(4), one(warn("search", 3)), goOn(1), one(func() guard.Verdict {
				v := stopA(4)
				ev := v.Evidence.(window.Evidence)
				ev.IdenticalResults = true
				v.Evidence = ev
				return v
			}())),
		},
		{
			name:  "no warning without Warn",
			steps: each(a, x, a, y, a),
			want:  goOn(5),
		},
		{
			name: "no warning when the oldest same call leaves the window with the next call",
			opts: window.Options{Window: 4, Threshold: 2, Warn: true},
			// After a x y a, the next a pushes the first a out.
			steps: each(a, x, y, a, x),
			want:  goOn(5),
		},
		{
			name:  "the first call of the step that would trip is reported",
			opts:  window.Options{Warn: true},
			steps: []guard.Step{step(x, x, a, a), step(z, a, x)},
			want:  cat(goOn(1), one(warn("search", 3))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{})
			got := run(t, g, tt.steps)
			if diff := cmp.Diff(tt.want, got, ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
	// The warning names the tool and the call; the preview stays out of
	// the feedback.
	g := newGuard(t, window.Options{Warn: true}, guard.Config{})
	v := run(t, g, each(a, x, a, y, a))[4]
	if len(v.Warnings) != 1 {
		t.Fatalf("warnings = %+v", v.Warnings)
	}
	w := v.Warnings[0]
	if want := `tool "search" called 3 times within the last 10 calls with the same arguments {"q":"a"}; one more stops the run (threshold 3)`; w.Detail != want {
		t.Errorf("detail = %q, want %q", w.Detail, want)
	}
	if strings.Contains(w.Feedback, `"a"`) || !strings.Contains(w.Feedback, "`search`") {
		t.Errorf("feedback = %q", w.Feedback)
	}
}

// TestWarnChangesNoStop runs random runs with and without warnings and
// checks that they stop alike, and that a warning comes before every
// stop that follows a call made once more.
func TestWarnChangesNoStop(t *testing.T) {
	pool := []guard.ToolCall{a, x, y, z, think}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(2, 6).Draw(t, "window")
		opts := window.Options{Window: w, Threshold: rapid.IntRange(2, w).Draw(t, "threshold")}
		plain := newGuard(t, opts, guard.Config{Ignore: []string{"think"}})
		opts.Warn = true
		warned := newGuard(t, opts, guard.Config{Ignore: []string{"think"}})
		for i, calls := range rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3), 1, 30).Draw(t, "steps") {
			p, v := ruletest.Check(t, plain, step(calls...)), ruletest.Check(t, warned, step(calls...))
			warned := v.Warnings != nil
			v.Warnings = nil
			if diff := cmp.Diff(p, v); diff != "" {
				t.Fatalf("step %d: warnings changed the verdict (-without +with):\n%s", i, diff)
			}
			if warned && v.Stop {
				t.Fatalf("step %d: a warning on a stop", i)
			}
		}
	})
}

func TestDetail(t *testing.T) {
	g := newGuard(t, window.Options{}, guard.Config{})
	v := run(t, g, each(a, x, a, y, a, z, a))[6]
	if want := `tool "search" called 4 times within the last 10 calls with the same arguments {"q":"a"} (threshold 3)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	g = newGuard(t, window.Options{}, guard.Config{})
	run(t, g, each(a, a, a))
	d := ruletest.Preflight(t, g, a)
	if want := `tool "search" would be called 4 times within the last 10 calls with the same arguments {"q":"a"} (threshold 3)`; d.Detail != want {
		t.Errorf("preflight detail = %q, want %q", d.Detail, want)
	}
	if !strings.HasPrefix(d.Feedback, "That call was not run") {
		t.Errorf("preflight feedback = %q", d.Feedback)
	}
}

func TestLenAndRecentKeys(t *testing.T) {
	d := newDetector(t, window.Options{Window: 3, Threshold: 2})
	g := testutil.New(t, d)
	if keys := keysOf(t, g); len(keys) != 0 {
		t.Errorf("fresh: keys %v", keys)
	}
	key := func(c guard.ToolCall) canonical.Sum {
		// The key is what the guard computed: read it back through a
		// one-call guard.
		gk := testutil.New(t, newDetector(t, window.Options{Window: 2, Threshold: 2}))
		ruletest.Check(t, gk, step(c))
		return keysOf(t, gk)[0]
	}
	run(t, g, each(a, x))
	if diff := cmp.Diff([]canonical.Sum{key(a), key(x)}, keysOf(t, g)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	run(t, g, []guard.Step{step(y, z)})
	if diff := cmp.Diff([]canonical.Sum{key(x), key(y), key(z)}, keysOf(t, g)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if key(a) == key(q("b")) || key(a) != key(aSwap) {
		t.Error("keys do not follow the canonical arguments")
	}
	if diff := cmp.Diff(window.Summary{Calls: 3, MaxCount: 1}, testutil.Summary(t, g).Detectors[window.Name]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	// A state driven by hand: Len and RecentKeys follow the window.
	st := newState(t, d)
	if st.Len() != 0 || len(st.RecentKeys()) != 0 {
		t.Errorf("fresh: Len %d, keys %v", st.Len(), st.RecentKeys())
	}
	ka, kx, ky, kz := canonical.HashString("a"), canonical.HashString("x"), canonical.HashString("y"), canonical.HashString("z")
	st.Observe(&rule.Facts{Calls: []rule.Call{{Tool: "search", Key: ka}, {Tool: "search", Key: kx}}})
	if diff := cmp.Diff([]canonical.Sum{ka, kx}, st.RecentKeys()); diff != "" || st.Len() != 2 {
		t.Errorf("Len %d, keys (-want +got):\n%s", st.Len(), diff)
	}
	st.Observe(&rule.Facts{Index: 1, Calls: []rule.Call{{Tool: "search", Key: ky}, {Tool: "search", Key: kz}}})
	keys := st.RecentKeys()
	if diff := cmp.Diff([]canonical.Sum{kx, ky, kz}, keys); diff != "" || st.Len() != 3 {
		t.Errorf("Len %d, keys (-want +got):\n%s", st.Len(), diff)
	}
	keys[0] = canonical.Sum{}
	if st.RecentKeys()[0] == (canonical.Sum{}) {
		t.Error("RecentKeys shares memory with the state")
	}
}

// TestDropArgs checks that the guard's call keys apply: calls that differ
// only in a dropped field are the same call.
func TestDropArgs(t *testing.T) {
	g := newGuard(t, window.Options{}, guard.Config{DropArgs: []string{"request_id"}})
	var got []bool
	for i := range 4 {
		v := ruletest.Check(t, g, step(call("search", fmt.Sprintf(`{"q":"a","request_id":%d}`, i))))
		got = append(got, v.Stop)
	}
	if diff := cmp.Diff([]bool{false, false, false, true}, got); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
}

// TestSnapshotRestoreContinues cuts random runs at random points, restores
// and checks that the restored guard gives the same verdicts and preflight
// answers.
func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.ToolCall{a, aSwap, x, y, z, think, withResult(a, `1`), withResult(a, `2`), withResult(x, `1`)}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(2, 6).Draw(t, "window")
		opts := window.Options{Window: w, Threshold: rapid.IntRange(2, w).Draw(t, "threshold"), Warn: rapid.Bool().Draw(t, "warn"),
			Compare: rapid.SampledFrom([]string{window.CompareCall, window.CompareOutcome}).Draw(t, "compare")}
		gopts := guard.Config{Ignore: []string{"think"}}
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) guard.Step {
			return step(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3).Draw(t, "calls")...)
		}), 1, 30).Draw(t, "steps")
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")
		orig := newGuard(t, opts, gopts)
		run(t, orig, steps[:cut])
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{Previews: rapid.Bool().Draw(t, "previews")})
		if err != nil {
			t.Fatal(err)
		}
		gopts.Rules = []rule.Rule{newDetector(t, opts)}
		restored, err := guard.Restore(data, gopts)
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		again, _ := restored.Snapshot(context.Background(), guard.SnapshotOptions{})
		if diff := cmp.Diff(string(data), string(again)); diff != "" {
			t.Fatalf("snapshot of the restored guard (-saved +restored):\n%s", diff)
		}
		for _, s := range steps[cut:] {
			if diff := cmp.Diff(ruletest.Preflight(t, orig, s.ToolCalls...), ruletest.Preflight(t, restored, s.ToolCalls...)); diff != "" {
				t.Fatalf("preflight after the cut (-original +restored):\n%s", diff)
			}
			if diff := cmp.Diff(ruletest.Check(t, orig, s), ruletest.Check(t, restored, s)); diff != "" {
				t.Fatalf("verdict after the cut (-original +restored):\n%s", diff)
			}
		}
	})
}

func TestSnapshotState(t *testing.T) {
	d := newDetector(t, window.Options{Window: 3, Threshold: 2})
	g := testutil.New(t, d)
	if s := ruletest.StateOf(t, g, window.Name, guard.SnapshotOptions{}); s != "null" {
		t.Errorf("fresh state = %s; want null", s)
	}
	if s, err := newState(t, d).Snapshot(guard.SnapshotOptions{}); err != nil || string(s) != "null" {
		t.Errorf("fresh state = %s, %v; want null", s, err)
	}
	run(t, g, each(a, x, y, z))
	s := ruletest.StateOf(t, g, window.Name, guard.SnapshotOptions{Previews: true})
	var got struct{ Keys []canonical.Sum }
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatal(err)
	}
	st := newState(t, d)
	if err := st.Restore([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st.RecentKeys(), got.Keys); diff != "" || len(got.Keys) != 3 {
		t.Errorf("state %s (-recent keys +state):\n%s", s, diff)
	}
	if r := ruletest.StateOf(t, g, window.Name, guard.SnapshotOptions{}); r != s {
		t.Errorf("redacted state %s differs from %s, but holds no preview", r, s)
	}
}

func TestRestoreRejects(t *testing.T) {
	const k = `"0123456789abcdef0123456789abcdef"`
	bad := []string{
		``, `[]`, `{`, `"x"`, `{"keys":5}`, `{"keys":[]}`, `{"keys":null}`, `{}`,
		`{"keys":[` + k + `,` + k + `,` + k + `,` + k + `]}`,
		`{"keys":["0123456789ABCDEF0123456789abcdef"]}`,
		`{"keys":["0123"]}`,
		`{"keys":[7]}`,
	}
	for _, compare := range []string{window.CompareCall, window.CompareOutcome} {
		more := []string{`{"keys":[` + k + `],"outcomes":[` + k + `]}`} // outcomes when comparing calls
		if compare == window.CompareOutcome {
			more = []string{`{"keys":[` + k + `]}`, `{"keys":[` + k + `],"outcomes":[]}`, `{"keys":[` + k + `],"outcomes":[` + k + `,` + k + `]}`}
		}
		d := newDetector(t, window.Options{Window: 3, Threshold: 2, Compare: compare})
		g := testutil.New(t, d)
		run(t, g, each(a, a))
		running := ruletest.StateOf(t, g, window.Name, guard.SnapshotOptions{})
		t.Run(compare, func(t *testing.T) { ruletest.RejectsKeeping(t, d, running, append(bad, more...)) })
	}
	for _, tt := range []struct{ compare, state string }{
		{window.CompareCall, `{"keys":[` + k + `]}`},
		{window.CompareCall, `{"keys":[` + k + `,` + k + `,` + k + `]}`},
		{window.CompareOutcome, `{"keys":[` + k + `],"outcomes":[` + k + `]}`},
	} {
		st := newState(t, newDetector(t, window.Options{Window: 3, Threshold: 2, Compare: tt.compare}))
		if err := st.Restore([]byte(tt.state)); err != nil {
			t.Errorf("Restore(%s): %v", tt.state, err)
		}
		if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != tt.state {
			t.Errorf("snapshot after restore = %s, want %s", got, tt.state)
		}
	}
}

func TestRestoreNullAndResetAreFresh(t *testing.T) {
	seq := each(a, x, a, y, a, z, a, a, x)
	opts := window.Options{Warn: true, Compare: window.CompareCall}
	ruletest.ResetIsFresh(t, func() *guard.Guard { return newGuard(t, opts, guard.Config{}) }, seq)

	// A state restored from a run, then from null, is a fresh state.
	d := newDetector(t, opts)
	g := testutil.New(t, d)
	run(t, g, seq)
	ruletest.RestoreNullIsFresh(t, d, g)
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: each keeps its own window, so each stops at its own fourth
// same call within it, and not before.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	d := newDetector(t, window.Options{Compare: window.CompareCall})
	cfg := guard.Config{Rules: []rule.Rule{d}}
	g1, g2 := ruletest.Pair(t, cfg)
	var got1, got2 []bool
	for _, c := range []guard.ToolCall{a, x, a, y, a, z} {
		got1 = append(got1, ruletest.Check(t, g1, step(c)).Stop)
		got2 = append(got2, ruletest.Check(t, g2, step(a)).Stop)
	}
	got1 = append(got1, ruletest.Check(t, g1, step(a)).Stop)
	if diff := cmp.Diff([]bool{false, false, false, false, false, false, true}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, false, true, true, true}, got2); diff != "" {
		t.Errorf("second guard's stops (-want +got):\n%s", diff)
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   window.Options
		fields []string
	}{
		{window.Options{Window: 1}, []string{"Window"}},
		{window.Options{Window: -1}, []string{"Window"}},
		{window.Options{Window: window.MaxWindow + 1}, []string{"Window"}},
		{window.Options{Threshold: 1}, []string{"Threshold"}},
		{window.Options{Window: 1, Threshold: 1}, []string{"Window", "Threshold"}},
		{window.Options{Window: 4, Threshold: 5}, []string{"Threshold"}},
		{window.Options{Threshold: 11}, []string{"Threshold"}}, // over the default window
		{window.Options{Window: 2}, []string{"Threshold"}},     // the default threshold is over it
		{window.Options{Compare: "args"}, []string{"Compare"}},
	} {
		d, err := window.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		fields := testutil.OptionFields(t, err, window.Name)
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for _, o := range []window.Options{{Window: 2, Threshold: 2}, {Window: window.MaxWindow}, {Threshold: 10}} {
		if _, err := window.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	fp := func(o window.Options) string { return rule.Fingerprint(newDetector(t, o)).String() }
	if fp(window.Options{}) != fp(window.Options{Window: 10, Threshold: 3, Compare: window.CompareOutcome}) {
		t.Error("the zero options and the explicit defaults fingerprint differently")
	}
	if fp(window.Options{}) == fp(window.Options{Warn: true}) || fp(window.Options{Threshold: 4}) == fp(window.Options{Window: 4}) ||
		fp(window.Options{}) == fp(window.Options{Compare: window.CompareCall}) {
		t.Error("different options fingerprint alike")
	}
	d := newDetector(t, window.Options{})
	if diff := cmp.Diff(window.Options{Window: 10, Threshold: 3, Compare: window.CompareOutcome}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "window" || d.Priority() != 450 {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

// TestRealTraces replays the real runs of testdata/traces with only this
// rule, at its defaults (comparing outcomes): no healthy run may stop but the
// one listed, not even the chess players that poll get_legal_moves every
// turn, which the crate's reading (comparing calls) stops; and the loops
// listed stop where they did.
func TestRealTraces(t *testing.T) {
	want := map[string]int{ // the line of the first stop, 1-based
		"mini-gemini3pro-sympy-15976.jsonl": 24,
		"react-webshop-ep024.jsonl":         14,
		"react-webshop-ep031.jsonl":         6,
		"react-webshop-ep349.jsonl":         6,
		"react-webshop-ep315.jsonl":         0, // unclear: "< Prev" 4 times within 8 calls, each to another page
		"reflexion-hotpotqa-t1-a102.jsonl":  6,
		// healthy: the same lookup after each of the customer's replies,
		// with the same result; this opt-in rule does not tell turns of a
		// conversation, as repeat does (docs/rules.md)
		"tau2-telecom-ftgpt41-sim11.jsonl": 17,
	}
	traces := ruletest.Traces(t)
	// The other loops are the default set's to catch; this rule need not.
	ruletest.FirstStops(t, traces, func() *guard.Guard {
		return newGuard(t, window.Options{Compare: window.CompareOutcome}, guard.Config{})
	}, want)
	for _, tr := range traces {
		if tr.File == "autogen-chess-tools-gpt4-white.jsonl" &&
			ruletest.FirstStop(t, newGuard(t, window.Options{Compare: window.CompareCall}, guard.Config{}), tr.Steps) == 0 {
			t.Errorf("%s: comparing calls no longer stops the polling run; the test shows nothing", tr.File)
		}
	}
}

func ExampleRule() {
	d, err := window.New(window.Options{Window: 8, Threshold: 3, Compare: window.CompareCall}) // the crate's example
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	search := func(q string) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: map[string]string{"q": q}}}}
	}
	for _, q := range []string{"a", "x", "a", "y", "a", "z", "a"} {
		if v, _ := g.Check(ctx, search(q)); v.Stop {
			fmt.Println(v)
		}
	}
	sum, _ := g.Summary(ctx)
	w := sum.Detectors[window.Name].(window.Summary)
	fmt.Println(w.Calls, "calls in the window, the most repeated", w.MaxCount, "times")
	// Output:
	// stop: windowed-repeat (WINDOWED_REPEAT): tool "search" called 4 times within the last 8 calls with the same arguments {"q":"a"} (threshold 3); hint: the agent keeps coming back to the same call between others
	// 7 calls in the window, the most repeated 4 times
}

// TestCompareOutcome checks the default comparison: the same call with the
// same result.
func TestCompareOutcome(t *testing.T) {
	outcome := window.Options{Compare: window.CompareOutcome}
	stopOutcome := func(count int) guard.Verdict {
		v := stopA(count)
		ev := v.Evidence.(window.Evidence)
		ev.IdenticalResults = true
		v.Evidence = ev
		v.Feedback = ev.Feedback(guard.PhaseCheck)
		return v
	}
	a1, a2, a3, a4 := withResult(a, `1`), withResult(a, `2`), withResult(a, `3`), withResult(a, `4`)
	tests := []struct {
		name  string
		opts  window.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "polling with a new answer each time goes on",
			opts:  outcome,
			steps: each(a1, x, a2, y, a3, z, a4, x, withResult(a, `5`)),
			want:  goOn(9),
		},
		{
			name:  "the same calls compared by key stop",
			opts:  window.Options{Compare: window.CompareCall},
			steps: each(a1, x, a2, y, a3, z, a4),
			want:  cat(goOn(6), one(stopA(4))),
		},
		{
			name:  "three same outcomes go on, the fourth stops",
			opts:  outcome,
			steps: each(a1, x, a1, y, a1, z, a1),
			want:  cat(goOn(6), one(stopOutcome(4))),
		},
		{
			name:  "other results in between do not count",
			opts:  outcome,
			steps: each(a1, a2, a1, a2, a1, a2),
			want:  goOn(6),
		},
		{
			name:  "calls without results compare by key",
			opts:  outcome,
			steps: each(a, x, a, y, a, z, a),
			want:  cat(goOn(6), one(stopOutcome(4))),
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

	// In preflight, a call is taken to return what it returned last time.
	g := newGuard(t, outcome, guard.Config{})
	run(t, g, each(a1, a1, a1))
	if d := ruletest.Preflight(t, g, a); d.Allow || !d.Evidence.(window.Evidence).IdenticalResults {
		t.Errorf("after three same results, preflight of the same call = %v, want a refusal", d.Verdict())
	}
	g = newGuard(t, outcome, guard.Config{})
	run(t, g, each(a1, a1, a2, a2))
	if d := ruletest.Preflight(t, g, a); !d.Allow {
		t.Errorf("the last result was seen twice: preflight = %v, want allow", d.Verdict())
	}
	run(t, g, each(a2))
	if d := ruletest.Preflight(t, g, a); d.Allow {
		t.Errorf("the last result was seen three times: preflight = %v, want a refusal", d.Verdict())
	}
}
