package detector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
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

func verdictsOf(g *guard.Guard, run []guard.Step) []string {
	var out []string
	for _, s := range run {
		out = append(out, guard.Explain(g.Check(s)))
	}
	return out
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
	lone, err := cfg.New()
	if err != nil {
		t.Fatal(err)
	}
	want := verdictsOf(lone, sessionRun(0))
	if want[5] == "go on" {
		t.Fatalf("the run does not stop: %q", want)
	}

	const sessions = 8
	got := make([][]string, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			g, err := cfg.New()
			if err != nil {
				errs[i] = err
				return
			}
			// A restored guard is just as much a guard of its own.
			if i%2 == 1 {
				data, err := g.Snapshot(guard.SnapshotOptions{})
				if err == nil {
					g, err = cfg.Restore(data)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
			got[i] = verdictsOf(g, sessionRun(0))
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
// first one's calls (the first stopped at "called 3 times in a row").
func TestConfigNewIsFresh(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	g1, err := cfg.New()
	if err != nil {
		t.Fatal(err)
	}
	same := guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":1}`)}}, FinishReason: "tool-calls"}
	for range 3 {
		g1.Check(same)
	}
	g2, err := cfg.New()
	if err != nil {
		t.Fatal(err)
	}
	if v := g2.Check(same); v.Stop {
		t.Errorf("the second guard of a config stops on its first step: %s", guard.Explain(v))
	}
	a, _ := cfg.Detectors()
	b, _ := cfg.Detectors()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("Detectors() = %d, %d detectors", len(a), len(b))
	}
	for i := range a {
		if a[i] == b[i] {
			t.Errorf("two calls of Detectors() share the %s detector", a[i].Name())
		}
	}
	runtime.KeepAlive(g1)
}

// TestSharedDefaultsFail: the slice of detector.Defaults() given to two
// guards is an error, not two runs that count each other's calls.
func TestSharedDefaultsFail(t *testing.T) {
	dets := detector.Defaults()
	g1, err := guard.New(dets...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.New(dets...); !errors.Is(err, guard.ErrDetectorInUse) {
		t.Errorf("a second guard of the same detectors: %v, want ErrDetectorInUse", err)
	}
	runtime.KeepAlive(g1)
}

// TestConfigGuardOptions: the options set on a Config before New reach every
// guard it makes.
func TestConfigGuardOptions(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"tools": {"think": {"ignore": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Guard.History = 2
	g, err := cfg.New()
	if err != nil {
		t.Fatal(err)
	}
	think := guard.Step{ToolCalls: []guard.ToolCall{{Name: "think", Args: json.RawMessage(`{}`)}}, FinishReason: "tool-calls"}
	for i := range 3 {
		think.Text = fmt.Sprint("thinking ", i)
		if v := g.Check(think); v.Stop {
			t.Fatalf("an ignored tool stopped the run: %s", guard.Explain(v))
		}
	}
	if n := len(g.History()); n != 2 {
		t.Errorf("History holds %d steps, want 2", n)
	}
}

// TestZeroConfigIsTheStandardSet: a Config left unset is not a guard that
// watches nothing. It builds what {} builds, which is Defaults(), while a
// document that switches every detector off still builds none.
func TestZeroConfigIsTheStandardSet(t *testing.T) {
	names := func(cfg detector.Config) []string {
		t.Helper()
		dets, err := cfg.Detectors()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range dets {
			out = append(out, d.Name())
		}
		return out
	}
	var want []string
	for _, d := range detector.Defaults() {
		want = append(want, d.Name())
	}
	if diff := cmp.Diff(want, names(detector.Config{})); diff != "" {
		t.Errorf("the zero Config's detectors (-Defaults +zero):\n%s", diff)
	}
	std, err := detector.FromJSON([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	// Same detectors with the same options: a run of one restores into the other.
	g, err := detector.Config{}.New()
	if err != nil {
		t.Fatal(err)
	}
	same := guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":1}`)}}, FinishReason: "tool-calls"}
	var got []bool
	for range 4 {
		got = append(got, g.Check(same).Stop)
	}
	if diff := cmp.Diff([]bool{false, false, true, true}, got); diff != "" {
		t.Errorf("the zero Config's guard on a repeated call (-want +got):\n%s", diff)
	}
	data, err := g.Snapshot(guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := std.Restore(data); err != nil {
		t.Errorf("FromJSON({}) does not restore the zero Config's run: %v", err)
	}
	off, err := detector.FromJSON([]byte(`{"finishReason": false, "maxSteps": false, "repeatedRefusal": false, "repeatedToolCall": false, "repeatedFailure": false, "oscillation": false, "noProgress": false, "repeatedText": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(off); len(got) != 0 {
		t.Errorf("a document that switches everything off builds %v", got)
	}
}
