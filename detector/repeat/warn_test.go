package repeat_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func warning(tool string, count, threshold int, detail string) guard.Verdict {
	w := guard.Warning{Code: repeat.WarningCode, Tool: tool, Value: float64(count), Limit: float64(threshold),
		Ratio: float64(count) / float64(threshold), Detail: detail}
	w.Feedback = repeat.WarningFeedback(w)
	w.Detector = repeat.Name
	return guard.Verdict{Warnings: []guard.Warning{w}}
}

func TestWarn(t *testing.T) {
	const pa = `{"q":"a"}`
	warn := repeat.Options{Warn: true}
	check := guard.PhaseCheck
	wa := func(count, threshold int) guard.Verdict {
		return warning("search", count, threshold,
			`tool "search" called 2 times in a row with the same arguments {"q":"a"}; one more stops the run (threshold 3)`)
	}
	tests := []struct {
		name  string
		opts  repeat.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "the second same call warns, the third stops",
			opts:  warn,
			steps: []guard.Step{step(a), step(a), step(a)},
			want:  append(append(goOn(1), wa(2, 3)), stop(ev("search", pa, 3, 3, 0, 1, 2), check)),
		},
		{
			name:  "no warning without Warn",
			steps: []guard.Step{step(a), step(a)},
			want:  goOn(2),
		},
		{
			name:  "a step that ends the run warns nothing",
			opts:  warn,
			steps: []guard.Step{step(a), step(a, b)},
			want:  goOn(2),
		},
		{
			name:  "the run at the end of the step is judged",
			opts:  warn,
			steps: []guard.Step{step(b), step(a, a)},
			want:  append(goOn(1), wa(2, 3)),
		},
		{
			name:  "a step without calls warns nothing",
			opts:  warn,
			steps: []guard.Step{step(a), step(a), {Text: "hm"}},
			want:  append(append(goOn(1), wa(2, 3)), goOn(1)...),
		},
		{
			name:  "ignored calls neither warn nor hide a warning",
			opts:  warn,
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step(a), step(think), step(a, think)},
			want:  append(goOn(2), wa(2, 3)),
		},
		{
			name:  "threshold 2 never warns: a run of one would",
			opts:  repeat.Options{Threshold: 2, Warn: true},
			steps: []guard.Step{step(a), step(b)},
			want:  goOn(2),
		},
		{
			name:  "a tool's own threshold applies",
			opts:  repeat.Options{Warn: true, Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 4}}},
			steps: []guard.Step{step(a), step(a), step(a)},
			want: append(goOn(2), warning("search", 3, 4,
				`tool "search" called 3 times in a row with the same arguments {"q":"a"}; one more stops the run (threshold 4)`)),
		},
		{
			name: "a polling tool warns on identical outcomes",
			opts: repeat.Options{Warn: true, Tools: map[string]repeat.ToolPolicy{"search": {Polling: true}}},
			steps: []guard.Step{step(withResult(a, `"pending"`)), step(withResult(a, `"running"`)),
				step(withResult(a, `"running"`))},
			want: append(goOn(2), warning("search", 2, 3,
				`tool "search" called 2 times in a row with the same arguments and the same outcome {"q":"a"}; one more stops the run (threshold 3)`)),
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

// TestWarnChangesNoStop runs random runs with and without warnings and
// checks that the stops are the same, and that no stop carries this
// detector's warning.
func TestWarnChangesNoStop(t *testing.T) {
	pool := []guard.ToolCall{a, b, c, think, failed(a), withResult(call("poll", `1`), `"p"`), withResult(call("poll", `1`), `"q"`)}
	rapid.Check(t, func(t *rapid.T) {
		opts := repeat.Options{Threshold: rapid.IntRange(2, 4).Draw(t, "threshold"), IgnoreErrors: rapid.Bool().Draw(t, "ignoreErrors"),
			RequireIdenticalResults: rapid.Bool().Draw(t, "identical"), Tools: map[string]repeat.ToolPolicy{"poll": {Polling: true}}}
		gopts := guard.Config{Ignore: []string{"think"}}
		plain := newGuard(t, opts, gopts)
		opts.Warn = true
		warned := newGuard(t, opts, gopts)
		for i, calls := range rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3), 1, 30).Draw(t, "steps") {
			p, w := ruletest.Check(t, plain, step(calls...)), ruletest.Check(t, warned, step(calls...))
			if w.Stop && len(w.Warnings) > 0 {
				t.Fatalf("step %d: a stop with a warning", i)
			}
			w.Warnings = nil
			if diff := cmp.Diff(p, w); diff != "" {
				t.Fatalf("step %d: warnings changed the verdict (-without +with):\n%s", i, diff)
			}
		}
	})
}

func TestWarnFingerprint(t *testing.T) {
	d1, _ := repeat.New(repeat.Options{})
	d2, _ := repeat.New(repeat.Options{Warn: true})
	if rule.Fingerprint(d1) == rule.Fingerprint(d2) {
		t.Error("Warn does not change the fingerprint")
	}
}
