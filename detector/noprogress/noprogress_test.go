package noprogress_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
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

var (
	a     = withResult(call("search", `{"q":"a"}`), `["r1"]`)
	a2    = withResult(call("search", `{"q":"a"}`), `["r2"]`)
	b     = withResult(call("read", `{"path":"/x"}`), `"text"`)
	think = call("think", `{}`)
)

func stop(steps, threshold int, preview string) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: noprogress.ReasonNoProgress, Code: noprogress.Code,
		Evidence: noprogress.Evidence{Steps: steps, Threshold: threshold, TextPreview: preview}}
	v.Feedback = v.Evidence.(noprogress.Evidence).Feedback()
	v.Detector = noprogress.Name
	return v
}

var ignoreDetail = cmpopts.IgnoreFields(guard.Verdict{}, "Detail")

type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newRule(t tb, o noprogress.Options) *noprogress.Rule { return ruletest.Rule(t, noprogress.New, o) }

// newState returns a fresh state of the rule with these options.
func newState(t tb, o noprogress.Options) ruletest.State { return ruletest.NewState(t, newRule(t, o)) }

// newGuard returns a guard with options g and the rule with options o.
func newGuard(t tb, o noprogress.Options, g guard.Config) *guard.Guard {
	return ruletest.New(t, g, newRule(t, o))
}

func run(t tb, g *guard.Guard, steps []guard.Step) []guard.Verdict {
	t.Helper()
	out := make([]guard.Verdict, len(steps))
	for i, s := range steps {
		out[i] = ruletest.Check(t, g, s)
	}
	return out
}

// stateOf returns the state of the noprogress rule in g's snapshot.
func stateOf(t *testing.T, g *guard.Guard, o guard.SnapshotOptions) []byte {
	t.Helper()
	return []byte(ruletest.StateOf(t, g, noprogress.Name, o))
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

func TestCheck(t *testing.T) {
	same := step("Let me look again.")
	tests := []struct {
		name  string
		opts  noprogress.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "two stalled steps go on, the third stops",
			steps: []guard.Step{same, same, same},
			want:  cat(goOn(2), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "text is compared normalised",
			steps: []guard.Step{step("Let me  look\tagain."), step(" let ME look again. "), same},
			want:  cat(goOn(2), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "a stall that goes on stops again",
			steps: []guard.Step{same, same, same, same},
			want:  cat(goOn(2), one(stop(3, 3, "let me look again.")), one(stop(4, 3, "let me look again."))),
		},
		{
			name:  "threshold 2",
			opts:  noprogress.Options{Threshold: 2},
			steps: []guard.Step{same, same},
			want:  cat(goOn(1), one(stop(2, 2, "let me look again."))),
		},
		{
			name:  "threshold 5: four go on, five stop",
			opts:  noprogress.Options{Threshold: 5},
			steps: []guard.Step{same, same, same, same, same},
			want:  cat(goOn(4), one(stop(5, 5, "let me look again."))),
		},
		{
			name: "a step with a refused call neither counts nor starts the count again",
			steps: []guard.Step{same, {Text: "Let me look again.", Refused: []guard.ToolCall{a}}, {Text: "Let me look again.", Refused: []guard.ToolCall{a}},
				same, {Refused: []guard.ToolCall{a}}, same},
			want: cat(goOn(5), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "a step with a refused call and a new outcome is progress",
			steps: []guard.Step{same, same, {Text: "Let me look again.", ToolCalls: []guard.ToolCall{b}, Refused: []guard.ToolCall{a}}, same, same},
			want:  goOn(5),
		},
		{
			name:  "another text starts a new count of one",
			steps: []guard.Step{same, same, step("something else"), same, same, step("something else")},
			want:  goOn(6),
		},
		{
			name:  "a new outcome restarts the count",
			steps: []guard.Step{same, same, step("Let me look again.", a), same, same, same},
			want:  cat(goOn(5), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "the first step with an outcome is progress, the same outcome again is not",
			steps: []guard.Step{step("", a), step("", a), step("", a), step("", a)},
			want:  cat(goOn(3), one(stop(3, 3, ""))),
		},
		{
			name:  "a new result of the same call is progress",
			steps: []guard.Step{step("", a), step("", a2), step("", a), step("", a2), step("", a)},
			want:  cat(goOn(4), one(stop(3, 3, ""))),
		},
		{
			name:  "a step is progress when any of its outcomes is new",
			steps: []guard.Step{step("", a), step("", a), step("", a), step("", a), step("", a, b), step("", b, a)},
			want:  cat(goOn(3), one(stop(3, 3, "")), goOn(2)),
		},
		{
			name:  "errors are outcomes",
			steps: []guard.Step{step("", a), step("", failed(a, "timeout")), step("", failed(a, "timeout")), step("", failed(a, "503")), step("", failed(a, "503"))},
			want:  goOn(5),
		},
		{
			name:  "calls without a result are outcomes, once",
			steps: []guard.Step{step("", think), step("", think), step("", think), step("", think)},
			want:  cat(goOn(3), one(stop(3, 3, ""))),
		},
		{
			name:  "ignored calls are not outcomes",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step("", think), step("", withResult(think, `1`)), step("", withResult(think, `2`))},
			want:  cat(goOn(2), one(stop(3, 3, ""))),
		},
		{
			// Canned replies: the same text answers the user's changing
			// messages. A new input is not progress (the reference's reading).
			name: "new input is not progress",
			steps: []guard.Step{{Text: "Sorry, could you rephrase that?", Input: "I want to change my flight"},
				{Text: "Sorry, could you rephrase that?", Input: "Change flight ABC123 to Friday"},
				{Text: "Sorry, could you rephrase that?", Input: "Please move my booking"}},
			want: cat(goOn(2), one(stop(3, 3, "sorry, could you rephrase that?"))),
		},
		{
			name:  "new input with another text starts a new count",
			steps: []guard.Step{same, same, {Text: "Trying something else.", Input: "try harder"}, same, same, same},
			want:  cat(goOn(5), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "a step with text differs from one without",
			steps: []guard.Step{step("", a), step(""), step(".", a), step("")},
			want:  goOn(4),
		},
		{
			name:  "the preview is cut",
			steps: []guard.Step{step(strings.Repeat("ab ", 40)), step(strings.Repeat("AB ", 40)), step(strings.Repeat("ab ", 40))},
			want:  cat(goOn(2), one(stop(3, 3, strings.Repeat("ab ", 25)+"ab..."))),
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

// distinct returns a step whose only outcome is the i-th of a series.
func distinct(i int) guard.Step {
	return step("", withResult(call("fetch", fmt.Sprintf(`{"page":%d}`, i)), `"ok"`))
}

func TestWindow(t *testing.T) {
	tests := []struct {
		name  string
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "an outcome within the window is not new",
			steps: []guard.Step{distinct(0), distinct(1), distinct(2), distinct(0), distinct(1), distinct(2)},
			want:  cat(goOn(5), one(stop(3, 3, ""))),
		},
		{
			name:  "an outcome older than the window is new again",
			steps: []guard.Step{distinct(0), distinct(1), distinct(2), distinct(3), distinct(0), distinct(1), distinct(2), distinct(3)},
			want:  goOn(8),
		},
		{
			name: "an outcome seen again does not move in the window",
			// 0 stays the oldest though seen again, so 3 evicts it
			// and 1, 2, 3 are all remembered.
			steps: []guard.Step{distinct(0), distinct(1), distinct(2), distinct(0), distinct(3), distinct(1), distinct(2), distinct(3)},
			want:  cat(goOn(7), one(stop(3, 3, ""))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, noprogress.Options{Window: 3}, guard.Config{})
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOverlap checks the reference's overlap: a b a b a with identical results
// and no text is reported by no-progress a step before oscillation would fire.
func TestOverlap(t *testing.T) {
	np, _ := noprogress.New(noprogress.Options{})
	osc, _ := oscillation.New(oscillation.Options{})
	rep, _ := repeat.New(repeat.Options{})
	g := testutil.New(t, np, osc, rep)
	var got []string
	for _, c := range []guard.ToolCall{a, b, a, b, a, b} {
		v := testutil.Check(t, g, step("", c))
		got = append(got, string(v.Reason))
	}
	want := []string{"", "", "", "", "no-progress", "oscillation"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}

	g = testutil.New(t, osc)
	for i, c := range []guard.ToolCall{a, b, a, b, a} {
		if v := testutil.Check(t, g, step("", c)); v.Stop {
			t.Errorf("oscillation alone stops at step %d", i)
		}
	}
}

func TestDetail(t *testing.T) {
	g := newGuard(t, noprogress.Options{}, guard.Config{})
	v := run(t, g, []guard.Step{step("Hm"), step("hm"), step("HM")})[2]
	if want := `3 steps in a row brought no new tool outcome and had the same text "hm" (threshold 3)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	g = newGuard(t, noprogress.Options{}, guard.Config{})
	v = run(t, g, []guard.Step{step(""), step(" "), step("")})[2]
	if want := `3 steps in a row brought no new tool outcome and had no text (threshold 3)`; v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	if v.Feedback == "" {
		t.Error("no feedback")
	}
}

func TestPreflightJudgesNothing(t *testing.T) {
	g := newGuard(t, noprogress.Options{}, guard.Config{})
	run(t, g, []guard.Step{step("x", a), step("x", a), step("x", a)})
	if d := testutil.Preflight(t, g, a); !d.Allow {
		t.Errorf("preflight refused: %v", d.Verdict())
	}
}

// TestSnapshotRestoreContinues cuts random runs at random points, restores
// and checks that the restored guard gives the same verdicts.
func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.Step{step("x", a), step("x", a2), step("X", b), step("y"), step("x"), step(""),
		{Input: "hi"}, step("", think), distinct(0), distinct(1), distinct(2), distinct(3)}
	rapid.Check(t, func(t *rapid.T) {
		opts := noprogress.Options{Window: rapid.IntRange(1, 4).Draw(t, "window"), Threshold: rapid.IntRange(2, 4).Draw(t, "threshold"),
			Warn: rapid.Bool().Draw(t, "warn")}
		gopts := guard.Config{Ignore: []string{"think"}, Rules: []rule.Rule{newRule(t, opts)}}
		steps := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 30).Draw(t, "steps")
		cut := rapid.IntRange(0, len(steps)).Draw(t, "cut")
		orig, err := guard.New(gopts)
		if err != nil {
			t.Fatal(err)
		}
		run(t, orig, steps[:cut])
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{Previews: rapid.Bool().Draw(t, "previews")})
		if err != nil {
			t.Fatal(err)
		}
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
	r := newRule(t, noprogress.Options{Window: 2})
	g := testutil.New(t, r)
	if s := stateOf(t, g, guard.SnapshotOptions{}); string(s) != "null" {
		t.Errorf("fresh state = %s; want null", s)
	}
	run(t, g, []guard.Step{distinct(0), distinct(1), distinct(2), distinct(1)})
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: true})
	s := stateOf(t, g, guard.SnapshotOptions{Previews: true})
	var got struct {
		Stalled  int
		Text     string
		Outcomes string
	}
	if err := json.Unmarshal(s, &got); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawStdEncoding.DecodeString(got.Outcomes)
	if got.Stalled != 1 || len(got.Text) != 32 || err != nil || len(raw) != 32 {
		t.Errorf("state = %s", s)
	}
	if r := stateOf(t, g, guard.SnapshotOptions{}); string(r) != string(s) {
		t.Errorf("redacted state %s differs from %s, but holds no preview", r, s)
	}
	// The oldest outcome comes first: after evicting 0, the window holds 1
	// then 2. Restoring it and adding 3 evicts 1, so 1 is new again.
	g2, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, false, false} // 2 is old; 3 is new; 1 is new again
	var stops []bool
	for _, v := range run(t, g2, []guard.Step{distinct(2), distinct(3), distinct(1)}) {
		stops = append(stops, v.Stop)
	}
	if diff := cmp.Diff(want, stops); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
	if got := testutil.Summary(t, g2).Detectors[noprogress.Name]; !cmp.Equal(got, noprogress.Summary{StalledSteps: 0, Outcomes: 2}) {
		t.Errorf("summary = %+v", got)
	}
}

func TestRestoreRejects(t *testing.T) {
	sums := testutil.Sums
	const text = `"0123456789abcdef0123456789abcdef"`
	bad := []string{
		``, `[]`, `{`, `"x"`,
		`{"stalled":-1,"outcomes":""}`,
		`{"stalled":1,"outcomes":""}`,
		`{"stalled":0,"text":` + text + `,"outcomes":""}`,
		`{"stalled":1,"text":"abc","outcomes":""}`,
		`{"stalled":0,"outcomes":"` + sums(1, 2, 3, 4) + `"}`,
		`{"stalled":0,"outcomes":"` + sums(1, 2, 1) + `"}`,
		`{"stalled":0,"outcomes":"` + sums(1)[:20] + `"}`,
		`{"stalled":0,"outcomes":"` + sums(1) + `=="}`,
		`{"stalled":0,"outcomes":"` + base64.RawStdEncoding.EncodeToString(make([]byte, 15)) + `"}`,
		`{"stalled":0,"outcomes":"***"}`,
		`{"stalled":0,"outcomes":"` + sums(1)[:21] + `B"}`, // bits past the 16 bytes must be zero
		`{"stalled":0,"outcomes":5}`,
		`{"stalled":1e300,"text":` + text + `,"outcomes":""}`,
	}
	x := &rule.Facts{TextHash: canonical.HashString("x")} // a step with text "x" and no calls
	for _, s := range bad {
		d := newState(t, noprogress.Options{Window: 3})
		d.Observe(x)
		d.Observe(x)
		if err := d.Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
		if d.Observe(x); !d.Verdict().Stop {
			t.Errorf("after Restore(%s) failed, the state was lost", s)
		}
	}
	good := []string{
		`{"stalled":0,"outcomes":"` + sums(1, 2, 3) + `"}`,
		`{"stalled":2,"text":` + text + `,"outcomes":""}`,
		`{"stalled":0,"outcomes":"` + sums(0) + `"}`,
	}
	for _, s := range good {
		d := newState(t, noprogress.Options{Window: 3})
		if err := d.Restore([]byte(s)); err != nil {
			t.Errorf("Restore(%s): %v", s, err)
		}
		if got, _ := d.Snapshot(guard.SnapshotOptions{}); string(got) != s {
			t.Errorf("snapshot after restore = %s, want %s", got, s)
		}
	}
}

func TestRestoreNullAndResetAreFresh(t *testing.T) {
	seq := []guard.Step{step("", a), step("x"), step("x"), step("", a), step("x"), step("", b), step("", a)}
	fresh := run(t, newGuard(t, noprogress.Options{}, guard.Config{}), seq)

	g := newGuard(t, noprogress.Options{}, guard.Config{})
	run(t, g, seq)
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, run(t, g, seq)); diff != "" {
		t.Errorf("after Reset (-fresh +got):\n%s", diff)
	}
	// A state restored from null is fresh: the state of a fresh run, facts
	// by facts.
	facts := []*rule.Facts{{TextHash: canonical.HashString("x")}, {TextHash: canonical.HashString("x")},
		{TextHash: canonical.HashString("x")}}
	d, want := newState(t, noprogress.Options{}), newState(t, noprogress.Options{})
	for _, f := range facts {
		d.Observe(f)
	}
	if err := d.Restore([]byte("null")); err != nil {
		t.Fatal(err)
	}
	for i, f := range facts {
		d.Observe(f)
		want.Observe(f)
		if diff := cmp.Diff(want.Verdict(), d.Verdict()); diff != "" {
			t.Errorf("step %d after Restore(null) (-fresh +got):\n%s", i, diff)
		}
	}
	if !d.Verdict().Stop {
		t.Error("the steps after Restore(null) never stop: the test proves little")
	}
}

// TestSnapshotSize checks that a guard's snapshot stays small however long
// the run: 6,000 steps, each with a new 2 KB argument, a 3 KB result and 500
// characters of text, under the default options of the standard set.
func TestSnapshotSize(t *testing.T) {
	g := testutil.New(t, detector.Defaults()...)
	pad := func(n int, i int) string { return fmt.Sprintf("%0*d", n, i) }
	var size int
	for i := 0; i < 6000; i++ {
		testutil.Check(t, g, guard.Step{
			Text: strings.Repeat("x", 490) + pad(10, i),
			ToolCalls: []guard.ToolCall{{Name: "search",
				Args:   map[string]string{"q": pad(2000, i)},
				Result: map[string]string{"body": pad(3000, i)}}},
		})

		if i == 1499 || i == 5999 {
			data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
			if len(data) > 28<<10 {
				t.Errorf("snapshot after %d steps is %d bytes, more than 28 KB", i+1, len(data))
			}
			if i == 1499 {
				size = len(data)
			} else if len(data) != size {
				t.Errorf("snapshot grew from %d to %d bytes between 1,500 and 6,000 steps", size, len(data))
			}
		}
	}
	t.Logf("snapshot: %d bytes", size)
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   noprogress.Options
		fields []string
	}{
		{noprogress.Options{Threshold: 1}, []string{"Threshold"}},
		{noprogress.Options{Threshold: -1}, []string{"Threshold"}},
		{noprogress.Options{Window: -1}, []string{"Window"}},
		{noprogress.Options{Window: noprogress.MaxWindow + 1}, []string{"Window"}},
		{noprogress.Options{Threshold: 1, Window: -5}, []string{"Threshold", "Window"}},
	} {
		d, err := noprogress.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		fields := testutil.OptionFields(t, err, noprogress.Name)
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for _, o := range []noprogress.Options{{Threshold: 2, Window: 1}, {Window: noprogress.MaxWindow}} {
		if _, err := noprogress.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	fp := func(o noprogress.Options) string {
		d, err := noprogress.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return rule.Fingerprint(d).String()
	}
	if fp(noprogress.Options{}) != fp(noprogress.Options{Threshold: 3, Window: 1024}) {
		t.Error("the zero options and the explicit defaults fingerprint differently")
	}
	if fp(noprogress.Options{Threshold: 4}) == fp(noprogress.Options{Window: 4}) {
		t.Error("different options fingerprint alike")
	}
	d, _ := noprogress.New(noprogress.Options{})
	if diff := cmp.Diff(noprogress.Options{Threshold: 3, Window: 1024}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "noprogress" || d.Priority() != rule.PriorityNoProgress {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

func ExampleNew() {
	d, err := noprogress.New(noprogress.Options{}) // three stalled steps with the same text
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	status := guard.ToolCall{Name: "status", Args: json.RawMessage(`{}`), Result: json.RawMessage(`"pending"`)}
	for i := 0; i < 4; i++ {
		v, _ := g.Check(context.Background(), guard.Step{Text: "Still waiting.", ToolCalls: []guard.ToolCall{status}})
		fmt.Printf("step %d: %v\n", i, v)
	}
	// Output:
	// step 0: go on
	// step 1: go on
	// step 2: go on
	// step 3: stop: no-progress (NO_PROGRESS): 3 steps in a row brought no new tool outcome and had the same text "still waiting." (threshold 3); hint: the agent repeats itself while nothing new comes back
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first stops at its k-th identical stalled step, the second has seen none
// of its outcomes and stops at exactly its own k-th, and the first's count
// went on.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	for _, tt := range []struct {
		opts noprogress.Options
		step guard.Step
		k    int // the step that stops: the first brings a new outcome
	}{
		{noprogress.Options{}, step("x", a), 4},
		{noprogress.Options{Threshold: 2}, step("x", a), 3},
		{noprogress.Options{Threshold: 5, Warn: true}, step("", b), 6},
		{noprogress.Options{}, step("thinking"), 3}, // no calls: every step is stalled
	} {
		r := newRule(t, tt.opts)
		g1, g2 := testutil.New(t, r), testutil.New(t, r)
		ss := make([]guard.Step, tt.k)
		for i := range ss {
			ss[i] = tt.step
		}
		for n, g := range []*guard.Guard{g1, g2} {
			vs := run(t, g, ss)
			for i, v := range vs[:tt.k-1] {
				if v.Stop {
					t.Errorf("%+v, guard %d: step %d of %d stops: %v", tt.opts, n+1, i+1, tt.k, v)
				}
			}
			if ev, ok := vs[tt.k-1].Evidence.(noprogress.Evidence); !vs[tt.k-1].Stop || !ok || ev.Steps != ev.Threshold {
				t.Errorf("%+v, guard %d: step %d = %v, want a stop at the threshold", tt.opts, n+1, tt.k, vs[tt.k-1])
			}
		}
		v := ruletest.Check(t, g1, tt.step)
		if ev, ok := v.Evidence.(noprogress.Evidence); !ok || ev.Steps != ev.Threshold+1 {
			t.Errorf("%+v: guard 1 after guard 2's run: %v, want a stop one past the threshold", tt.opts, v)
		}
	}
}
