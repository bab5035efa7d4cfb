package noprogress_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func warning(count, threshold int, detail string) guard.Verdict {
	w := guard.Warning{Code: noprogress.WarningCode, Metric: "stalledSteps", Value: float64(count), Limit: float64(threshold),
		Ratio: float64(count) / float64(threshold), Detail: detail}
	w.Feedback = noprogress.WarningFeedback(w)
	w.Detector = noprogress.Name
	return guard.Verdict{Warnings: []guard.Warning{w}}
}

func TestWarn(t *testing.T) {
	same := step("Let me look again.")
	warn := noprogress.Options{Warn: true}
	w2 := warning(2, 3, `2 steps in a row brought no new tool outcome and had the same text "let me look again."; one more stops the run (threshold 3)`)
	tests := []struct {
		name  string
		opts  noprogress.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "the second stalled step warns, the third stops",
			opts:  warn,
			steps: []guard.Step{same, same, same},
			want:  cat(goOn(1), one(w2), one(stop(3, 3, "let me look again."))),
		},
		{
			name:  "no warning without Warn",
			steps: []guard.Step{same, same},
			want:  goOn(2),
		},
		{
			name:  "another text starts again: no warning",
			opts:  warn,
			steps: []guard.Step{same, step("something else"), same},
			want:  goOn(3),
		},
		{
			name:  "a new outcome takes the count back, and the warning comes again",
			opts:  warn,
			steps: []guard.Step{same, same, step("Let me look again.", a), same, same},
			want:  cat(goOn(1), one(w2), goOn(2), one(w2)),
		},
		{
			name:  "no text",
			opts:  noprogress.Options{Threshold: 4, Warn: true},
			steps: []guard.Step{step("", a), step("", a), step("", a), step("", a)},
			want: cat(goOn(3), one(warning(3, 4,
				`3 steps in a row brought no new tool outcome and had no text; one more stops the run (threshold 4)`))),
		},
		{
			name:  "threshold 2 never warns",
			opts:  noprogress.Options{Threshold: 2, Warn: true},
			steps: []guard.Step{same, same},
			want:  cat(goOn(1), one(stop(2, 2, "let me look again."))),
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
	pool := []guard.Step{step("x", a), step("x", a2), step("X", b), step("y"), step("x"), step(""), {Input: "hi"}, distinct(0), distinct(1)}
	rapid.Check(t, func(t *rapid.T) {
		opts := noprogress.Options{Threshold: rapid.IntRange(2, 4).Draw(t, "threshold"), Window: rapid.IntRange(1, 4).Draw(t, "window")}
		plain := newGuard(t, opts, guard.Config{})
		opts.Warn = true
		warned := newGuard(t, opts, guard.Config{})
		for i, s := range rapid.SliceOfN(rapid.SampledFrom(pool), 1, 30).Draw(t, "steps") {
			p, w := ruletest.Check(t, plain, s), ruletest.Check(t, warned, s)
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
	d1, _ := noprogress.New(noprogress.Options{})
	d2, _ := noprogress.New(noprogress.Options{Warn: true})
	if rule.Fingerprint(d1) == rule.Fingerprint(d2) {
		t.Error("Warn does not change the fingerprint")
	}
}
