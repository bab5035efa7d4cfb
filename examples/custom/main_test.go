package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

const want = `detectors, in the order they are asked: finish, budget, refusal, repeat, failure, sameresult, oscillation, noprogress, text, input, failstreak
step 0: get_invoice {"id": "inv_7"}: go on
step 1: charge_card {"invoice": "inv_7", "key": "a1"}: go on
step 2: charge_card {"invoice": "inv_7", "key": "a2"}: go on
step 3: charge_card {"invoice": "inv_7", "key": "a3"}: stop: custom (FAIL_STREAK): the last 3 tool calls failed (threshold 3); the newest was "charge_card"
feedback: Your last 3 tool calls all failed. Stop retrying: tell the user what is failing, or try a different approach.
misspelt: option maxFailedCall: unknown option (did you mean "maxFailedCalls"?)
`

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func failing(tool string) guard.Step {
	return guard.Step{ToolCalls: []guard.ToolCall{{Name: tool, Args: json.RawMessage(`{}`), Err: errors.New("down")}}}
}

// config returns a configuration of FailStreak alone that ignores "think".
func config(t *testing.T, threshold int) guard.Config {
	t.Helper()
	r, err := NewFailStreak(threshold)
	if err != nil {
		t.Fatal(err)
	}
	return guard.Config{Ignore: []string{"think"}, Rules: []guard.Rule{r}}
}

func newGuard(t *testing.T, threshold int) *guard.Guard {
	t.Helper()
	g, err := guard.New(config(t, threshold))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// saverState is FailStreak's state: a State and a Saver.
type saverState interface {
	rule.State
	rule.Saver
}

// newSaver returns a fresh state of FailStreak.
func newSaver(t *testing.T, threshold int) saverState {
	t.Helper()
	r, err := NewFailStreak(threshold)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := r.NewState().(saverState)
	if !ok {
		t.Fatal("the state of FailStreak is not a rule.Saver")
	}
	return st
}

func TestFailStreak(t *testing.T) {
	ok := guard.Step{ToolCalls: []guard.ToolCall{{Name: "a", Result: "fine"}}}
	think := guard.Step{ToolCalls: []guard.ToolCall{{Name: "think", Err: errors.New("x")}}}
	text := guard.Step{Text: "hm"}
	stop := guard.Verdict{Stop: true, Reason: rule.ReasonCustom, Code: Code, Detector: Name,
		Detail:   `the last 2 tool calls failed (threshold 2); the newest was "b"`,
		Evidence: Evidence{Tool: "b", Failures: 2, Threshold: 2},
		Feedback: "Your last 2 tool calls all failed. Stop retrying: tell the user what is failing, or try a different approach."}
	tests := []struct {
		name  string
		steps []guard.Step
		want  guard.Verdict // of the last step
	}{
		{"one failure goes on", []guard.Step{failing("a")}, guard.Verdict{}},
		{"two failures stop", []guard.Step{failing("a"), failing("b")}, stop},
		{"a success ends the streak", []guard.Step{failing("a"), ok, failing("b")}, guard.Verdict{}},
		{"text and ignored tools do not count", []guard.Step{failing("a"), text, think, failing("b")}, stop},
		{"a step without calls does not stop again", []guard.Step{failing("a"), failing("b"), text}, guard.Verdict{}},
		{"later failures stop again", []guard.Step{failing("a"), failing("c"), failing("b")}, stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, 2)
			var v guard.Verdict
			for _, s := range tt.steps {
				v = testutil.Check(t, g, s)
			}
			if diff := cmp.Diff(tt.want, v); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailStreakSnapshot(t *testing.T) {
	g := newGuard(t, 3)
	testutil.Check(t, g, failing("a"))
	testutil.Check(t, g, failing("b"))
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	restored, err := guard.Restore(data, config(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	want, got := testutil.Check(t, g, failing("c")), testutil.Check(t, restored, failing("c"))
	if !want.Stop {
		t.Fatal("the third failure did not stop the run")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored guard (-original +restored):\n%s", diff)
	}

	for _, bad := range []string{`{}`, `{"streak": 4, "tool": "a"}`, `{"streak": -1}`, `[1]`, `{"streak": "2"}`, `{"streak": 1, "tool": "` + strings.Repeat("x", 257) + `"}`} {
		d := newSaver(t, 3)
		if err := d.Restore([]byte(bad)); !errors.Is(err, guard.ErrInvalidState) {
			t.Errorf("Restore(%s) = %v, want ErrInvalidState", bad, err)
		}
	}
	d := newSaver(t, 3)
	d.Observe(&rule.Facts{Calls: []rule.Call{{Tool: "a", Failed: true}}})
	if err := d.Restore([]byte("null")); err != nil {
		t.Fatal(err)
	}
	if snap, _ := d.Snapshot(rule.SnapshotOptions{}); string(snap) != "null" {
		t.Errorf("Restore(null) left %s", snap)
	}
	if _, err := NewFailStreak(0); !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("NewFailStreak(0) = %v, want ErrInvalidOption", err)
	}
}
