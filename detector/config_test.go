package detector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// sessionRun is a run of one session: a few different calls, then the same
// call three times.
func sessionRun(session int) []guard.Step {
	var run []guard.Step
	for i := range 6 {
		q := fmt.Sprintf(`{"q":"s%d-%d"}`, session, i)
		if i >= 3 {
			q = fmt.Sprintf(`{"q":"s%d"}`, session)
		}
		run = append(run, guard.Step{
			Text:         fmt.Sprintf("step %d", i),
			ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(q), Result: "r"}},
			FinishReason: "tool-calls",
		})
	}
	return run
}

// verdictsOf checks the steps of run and explains the verdicts; it may be
// called from any goroutine.
func verdictsOf(g *guard.Guard, run []guard.Step) ([]string, error) {
	var out []string
	for _, s := range run {
		v, err := g.Check(context.Background(), s)
		if err != nil {
			return nil, err
		}
		out = append(out, guard.Explain(v))
	}
	return out, nil
}

// TestConfigServesManyRuns is the pattern of every server: one options
// document read once, a guard per session, sessions at the same time. Each
// guard answers as a lone guard does (run it with -race: the guards share
// nothing).
func TestConfigServesManyRuns(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 20, "tools": {"search": {"maxCalls": 10}}, "window": true, "stall": true}`))
	if err != nil {
		t.Fatal(err)
	}
	lone, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := verdictsOf(lone, sessionRun(0))
	if err != nil {
		t.Fatal(err)
	}
	if want[5] == "go on" {
		t.Fatalf("the run does not stop: %q", want)
	}

	const sessions = 8
	got := make([][]string, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			g, err := guard.New(cfg)
			if err != nil {
				errs[i] = err
				return
			}
			// A restored guard is just as much a guard of its own.
			if i%2 == 1 {
				data, err := g.Snapshot(context.Background(), guard.SnapshotOptions{})
				if err == nil {
					g, err = guard.Restore(data, cfg)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
			got[i], errs[i] = verdictsOf(g, sessionRun(0))
		})
	}
	wg.Wait()
	for i := range sessions {
		if errs[i] != nil {
			t.Errorf("session %d: %v", i, errs[i])
			continue
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("session %d answers otherwise than a lone guard (-want +got):\n%s", i, diff)
		}
	}
}

// TestConfigNewIsFresh: a second guard from one config does not see the
// first one's calls: the first stops at its third same call, the second goes
// on at its first and second, and stops at its own third.
func TestConfigNewIsFresh(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	g1, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":1}`)}}, FinishReason: "tool-calls"}
	var got1, got2 []bool
	for range 3 {
		got1 = append(got1, ruletest.Check(t, g1, same).Stop)
	}
	g2, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got2 = append(got2, ruletest.Check(t, g2, same).Stop)
	}
	if diff := cmp.Diff([]bool{false, false, true}, got1); diff != "" {
		t.Errorf("the first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, true}, got2); diff != "" {
		t.Errorf("the second guard's stops (-want +got):\n%s", diff)
	}
}

// TestGuardsOfOneDefaultsAreIndependent builds two guards from one
// Defaults() (what used to fail with ErrDetectorInUse): each keeps its own
// run, so interleaved steps stop each guard at its own third same call, with
// its own count, and not before; a Reset of one leaves the other alone.
func TestGuardsOfOneDefaultsAreIndependent(t *testing.T) {
	cfg := guard.Config{Rules: detector.Defaults()}
	g1, g2 := ruletest.Pair(t, cfg)
	same := guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"a"}`), Result: "r"}}, FinishReason: "tool-calls"}
	var got1, got2 []string
	code := func(v guard.Verdict) string { return v.Code }
	for range 2 {
		got1 = append(got1, code(ruletest.Check(t, g1, same)))
		got2 = append(got2, code(ruletest.Check(t, g2, same)))
	}
	if err := g2.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	got2 = append(got2, code(ruletest.Check(t, g2, same)))
	v := ruletest.Check(t, g1, same)
	got1 = append(got1, code(v))
	if diff := cmp.Diff([]string{"", "", repeat.Code}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if ev, ok := v.Evidence.(repeat.Evidence); !ok || ev.Count != 3 || !slices.Equal(ev.StepIndexes, []int{0, 1, 2}) {
		t.Errorf("first guard's evidence = %+v, want a run of 3 calls at steps 0 to 2", v.Evidence)
	}
	if diff := cmp.Diff([]string{"", "", ""}, got2); diff != "" {
		t.Errorf("second guard's stops, reset after two steps (-want +got):\n%s", diff)
	}
	if s1, s2 := testutil.Summary(t, g1), testutil.Summary(t, g2); s1.Steps != 3 || s2.Steps != 1 {
		t.Errorf("steps = %d and %d, want 3 and 1", s1.Steps, s2.Steps)
	}
}

// TestConfigGuardOptions: the options set on a Config before New reach every
// guard it makes.
func TestConfigGuardOptions(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"tools": {"think": {"ignore": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.History = 2
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	think := guard.Step{ToolCalls: []guard.ToolCall{{Name: "think", Args: json.RawMessage(`{}`)}}, FinishReason: "tool-calls"}
	for i := range 3 {
		think.Text = fmt.Sprint("thinking ", i)
		if v := ruletest.Check(t, g, think); v.Stop {
			t.Fatalf("an ignored tool stopped the run: %s", guard.Explain(v))
		}
	}
	if n := len(g.History()); n != 2 {
		t.Errorf("History holds %d steps, want 2", n)
	}
}

// TestDefaultsAreTheStandardSet: the guard of Defaults() and that of
// FromJSON({}) have the same rules with the same options, so a run of one
// restores into the other, while a document that switches every rule off
// builds none.
func TestDefaultsAreTheStandardSet(t *testing.T) {
	std, err := detector.FromJSON([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	same := guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":1}`)}}, FinishReason: "tool-calls"}
	var got []bool
	for range 4 {
		got = append(got, ruletest.Check(t, g, same).Stop)
	}
	if diff := cmp.Diff([]bool{false, false, true, true}, got); diff != "" {
		t.Errorf("the guard of Defaults() on a repeated call (-want +got):\n%s", diff)
	}
	if _, err := guard.Restore(testutil.Snapshot(t, g, guard.SnapshotOptions{}), std); err != nil {
		t.Errorf("FromJSON({}) does not restore the run of Defaults(): %v", err)
	}
	off, err := detector.FromJSON([]byte(`{"finishReason": false, "maxSteps": false, "repeatedRefusal": false, "repeatedToolCall": false, "repeatedFailure": false, "oscillation": false, "noProgress": false, "repeatedText": false, "sameResult": false, "repeatedInput": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Rules) != 0 {
		t.Errorf("a document that switches everything off builds %d rules", len(off.Rules))
	}
}
