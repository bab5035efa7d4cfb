package toollimit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

func newWarnGuard(t testing.TB, caps map[string]int) *guard.Guard {
	t.Helper()
	d, err := toollimit.New(toollimit.Options{MaxCalls: caps, Warn: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(with(d))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func capWarning(tool string, calls int, detail string) guard.Warning {
	w := guard.Warning{Code: toollimit.WarningCode, Tool: tool, Value: float64(calls), Limit: float64(calls + 1),
		Ratio: float64(calls) / float64(calls+1), Detail: detail}
	w.Feedback = toollimit.WarningFeedback(w)
	w.Detector = toollimit.Name
	return w
}

func TestWarn(t *testing.T) {
	wa := capWarning("a", 2, `"a" is at its cap of 2; one more call stops the run`)
	wb := capWarning("b", 1, `"b" is at its cap of 1; one more call stops the run`)
	tests := []struct {
		name  string
		caps  map[string]int
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "the call that reaches the cap warns, the next one stops",
			caps:  map[string]int{"a": 2},
			steps: []guard.Step{step("a"), step("a"), step("a")},
			want:  []guard.Verdict{goOn, {Warnings: []guard.Warning{wa}}, stop("a", 3, 2, guard.PhaseCheck)},
		},
		{
			name:  "a step that reaches and passes the cap only stops",
			caps:  map[string]int{"a": 2},
			steps: []guard.Step{step("a", "a", "a")},
			want:  []guard.Verdict{stop("a", 3, 2, guard.PhaseCheck)},
		},
		{
			name:  "every tool brought to its cap warns, in the caps' order",
			caps:  map[string]int{"a": 2, "b": 1, "c": 5},
			steps: []guard.Step{step("a"), step("c", "b", "a")},
			want:  []guard.Verdict{goOn, {Warnings: []guard.Warning{wb, wa}}},
		},
		{
			name:  "a step that does not call the tool does not warn again",
			caps:  map[string]int{"a": 1},
			steps: []guard.Step{step("a"), step("x"), {Text: "hm"}},
			want: []guard.Verdict{{Warnings: []guard.Warning{capWarning("a", 1, `"a" is at its cap of 1; one more call stops the run`)}},
				goOn, goOn},
		},
		{
			name:  "a forbidden tool never warns",
			caps:  map[string]int{"rm": 0},
			steps: []guard.Step{step("x"), step("rm")},
			want:  []guard.Verdict{goOn, stop("rm", 1, 0, guard.PhaseCheck)},
		},
		{
			name:  "ignored calls do not count",
			caps:  map[string]int{"think": 1},
			steps: []guard.Step{step("think"), step("think")},
			want:  []guard.Verdict{goOn, goOn},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newWarnGuard(t, tt.caps)
			var got []guard.Verdict
			for _, s := range tt.steps {
				got = append(got, ruletest.Check(t, g, s))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarnSnapshotRestore checks that warnings come the same after a restore
// as without one.
func TestWarnSnapshotRestore(t *testing.T) {
	caps := map[string]int{"a": 2, "b": 3}
	steps := []guard.Step{step("a", "b"), step("b"), step("a"), step("b"), step("a"), step("b")}
	for cut := 0; cut <= len(steps); cut++ {
		g := newWarnGuard(t, caps)
		for _, s := range steps[:cut] {
			ruletest.Check(t, g, s)
		}
		data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
		d, _ := toollimit.New(toollimit.Options{MaxCalls: caps, Warn: true})
		g2, err := guard.Restore(data, with(d))
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		for i, s := range steps[cut:] {
			if diff := cmp.Diff(ruletest.Check(t, g, s), ruletest.Check(t, g2, s)); diff != "" {
				t.Errorf("cut %d, step %d (-saved +restored):\n%s", cut, cut+i, diff)
			}
		}
	}
}

func TestWarnOptions(t *testing.T) {
	d1, _ := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"a": 1}})
	d2, _ := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"a": 1}, Warn: true})
	if rule.Fingerprint(d1) == rule.Fingerprint(d2) {
		t.Error("Warn does not change the fingerprint")
	}
	if diff := cmp.Diff(toollimit.Options{MaxCalls: map[string]int{"a": 1}, Warn: true}, d2.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
}

func TestWarnSteadyStateAllocs(t *testing.T) {
	r, _ := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 1 << 40, "read": 3}, Warn: true})
	d := r.NewState()
	f := facts("search", "write", "search")
	if n := testing.AllocsPerRun(100, func() { d.Observe(f); _ = d.Verdict() }); n != 0 {
		t.Errorf("Observe+Verdict with Warn: %v allocations, want 0", n)
	}
}
