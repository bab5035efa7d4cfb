package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/toollimit"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// A door is one way of driving the default guard through a loop: it asks the
// model for step i, runs what may run and records the step. It returns the
// verdict on the step and whether a call of it was refused.
type door func(t *testing.T, g *guard.Guard, text string, calls []guard.ToolCall, run func(guard.ToolCall) any) (guard.Verdict, bool)

// doors are the README's quick start (Preflight, then Check with the refused
// calls in Step.Refused), guard.Turn call by call (Run) and guard.Turn for a
// whole reply (Preflight, SetResult, End).
var doors = map[string]door{
	"quick start": func(t *testing.T, g *guard.Guard, text string, calls []guard.ToolCall, run func(guard.ToolCall) any) (guard.Verdict, bool) {
		step := guard.Step{Text: text, FinishReason: "tool-calls"}
		d := testutil.Preflight(t, g, calls...)
		if !d.Allow {
			step.Refused = calls
		} else {
			for i := range calls {
				calls[i].Result = run(calls[i])
			}
			step.ToolCalls = calls
		}
		return testutil.Check(t, g, step), !d.Allow
	},
	"Turn.Run": func(t *testing.T, g *guard.Guard, text string, calls []guard.ToolCall, run func(guard.ToolCall) any) (guard.Verdict, bool) {
		ctx := context.Background()
		turn := g.Begin()
		refused := false
		for _, c := range calls {
			_, err := turn.Run(ctx, c, func(context.Context) (any, error) { return run(c), nil })
			var re *guard.RefusedError
			refused = refused || errors.As(err, &re)
		}
		v, _ := turn.End(ctx, guard.Step{Text: text, FinishReason: "tool-calls"})
		return v, refused
	},
	"Turn.Preflight": func(t *testing.T, g *guard.Guard, text string, calls []guard.ToolCall, run func(guard.ToolCall) any) (guard.Verdict, bool) {
		ctx := context.Background()
		turn := g.Begin()
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%d", i)
		}
		ds, err := turn.Preflight(ctx, calls...)
		if err != nil {
			t.Fatal(err)
		}
		refused := false
		for i, d := range ds {
			if d.Allow {
				turn.SetResult(calls[i].ID, run(calls[i]), nil)
			} else {
				refused = true
			}
		}
		v, _ := turn.End(ctx, guard.Step{Text: text, FinishReason: "tool-calls"})
		return v, refused
	},
}

// drive runs the model through the door with default options until the
// guard stops it (or 30 steps), and returns the stop code, the step it came
// on (0-based) and the number of steps with a refusal.
func drive(t *testing.T, dr door, model func(i int) (string, []guard.ToolCall), run func(guard.ToolCall) any) (string, int, int) {
	t.Helper()
	return driveWith(t, detector.Defaults(), dr, model, run)
}

// driveWith is drive with these rules.
func driveWith(t *testing.T, rules []guard.Rule, dr door, model func(i int) (string, []guard.ToolCall), run func(guard.ToolCall) any) (string, int, int) {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	refusals := 0
	for i := range 30 {
		text, calls := model(i)
		v, refused := dr(t, g, text, calls, run)
		if refused {
			refusals++
		}
		if v.Stop {
			return v.Code, i, refusals
		}
	}
	return "", 30, refusals
}

func searchFor(q string) []guard.ToolCall {
	return []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"query": %q}`, q))}}
}

// TestSameModelSameStopAtEveryDoor: a model that asks for the same search
// every time is refused from its third request on and stopped at its third
// refusal (REPEATED_REFUSAL), whatever its text (none, as a model whose
// content is null; the same preamble; a new sentence each time) and whichever
// door it comes through. The steps with refusals count neither for the
// no-progress rule nor for the repeated-text rule: they stopped the run
// earlier, with NO_PROGRESS after two refusals or REPEATED_TEXT at the
// first.
func TestSameModelSameStopAtEveryDoor(t *testing.T) {
	texts := map[string]func(int) string{
		"no text":        func(int) string { return "" },
		"same preamble":  func(int) string { return "Let me search for more information." },
		"a new sentence": func(i int) string { return fmt.Sprintf("Searching, try %d.", i+1) },
	}
	type stop struct {
		Code           string
		Step, Refusals int
	}
	want := stop{"REPEATED_REFUSAL", 4, 3}
	for dn, dr := range doors {
		for tn, text := range texts {
			t.Run(dn+"/"+tn, func(t *testing.T) {
				model := func(i int) (string, []guard.ToolCall) { return text(i), searchFor("loopguard") }
				code, step, refusals := drive(t, dr, model, func(guard.ToolCall) any { return "no results" })
				if diff := cmp.Diff(want, stop{code, step, refusals}); diff != "" {
					t.Errorf("stop (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestPreambleGoesOn: a model that writes the same preamble before each new
// search, and gets new results, goes on through every door. When it then
// repeats a search, the step of the first refusal goes on, and a model that
// acts on the refusal's feedback (a new search) goes on again.
func TestPreambleGoesOn(t *testing.T) {
	const preamble = "Let me search for more information."
	for dn, dr := range doors {
		t.Run(dn, func(t *testing.T) {
			// Steps 0-5: new searches; 6-8: the same one (refused at 8);
			// 9-15: new searches again.
			model := func(i int) (string, []guard.ToolCall) {
				if i >= 6 && i <= 8 {
					return preamble, searchFor("topic 6")
				}
				return preamble, searchFor(fmt.Sprintf("topic %d", i))
			}
			results := func(c guard.ToolCall) any { return "results for " + string(c.Args.(json.RawMessage)) }
			g, err := guard.New(guard.Config{Rules: detector.Defaults()})
			if err != nil {
				t.Fatal(err)
			}
			var refusedAt []int
			for i := range 16 {
				text, calls := model(i)
				v, refused := dr(t, g, text, calls, results)
				if refused {
					refusedAt = append(refusedAt, i)
				}
				if v.Stop {
					t.Fatalf("step %d stopped: %s", i, guard.Explain(v))
				}
			}
			if diff := cmp.Diff([]int{8}, refusedAt); diff != "" {
				t.Errorf("refused steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFiveCallsLoopStops: a model that loops over two steps, each with the
// same sentence and the same five calls with the same results, brings
// nothing new from its third step on, and is stopped at every door. The
// repeated-text rule remembers four outcomes per step; when it kept the
// first four, the fifth call of each step was new every time and no step
// counted (the no-progress rule restarts its count on each change of text,
// and no call repeats in a row), so the run met the step limit. The
// oscillation rule now stops it sooner, at the end of its fourth step: the
// 10 calls of two steps, whose results repeat, have gone round twice. With
// that off (oscillation.longPeriod 3), the repeated-text rule stops it at
// its ninth.
func TestFiveCallsLoopStops(t *testing.T) {
	noLong, err := detector.FromJSON([]byte(`{"oscillation": {"longPeriod": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	five := func(tool string) []guard.ToolCall {
		var cs []guard.ToolCall
		for j := range 5 {
			cs = append(cs, guard.ToolCall{Name: tool, Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, j))})
		}
		return cs
	}
	type stop struct {
		Code string
		Step int
	}
	for dn, dr := range doors {
		t.Run(dn, func(t *testing.T) {
			model := func(i int) (string, []guard.ToolCall) {
				if i%2 == 0 {
					return "Let me check the files again.", five("read")
				}
				return "Nothing changed, let me look at the logs.", five("logs")
			}
			code, step, _ := drive(t, dr, model, func(guard.ToolCall) any { return "same as before" })
			if diff := cmp.Diff(stop{"OSCILLATION", 3}, stop{code, step}); diff != "" {
				t.Errorf("a two-step loop of five calls each (-want +got):\n%s", diff)
			}
			code, step, _ = driveWith(t, noLong.Rules, dr, model, func(guard.ToolCall) any { return "same as before" })
			if diff := cmp.Diff(stop{"REPEATED_TEXT", 8}, stop{code, step}); diff != "" {
				t.Errorf("a two-step loop of five calls each, no long cycles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCappedToolWithNewArgsStops: with a tool cap (toollimit), every call of
// the capped tool is refused, whatever its arguments. A model that goes on
// asking for it with new arguments and the same sentence has each call
// refused once, and the text, no-progress and stall rules skip steps with a
// refused call; the refusal rule counts the steps in which the tool was
// refused since it last ran, and stops the run at the third, at every door
// (it met the step limit before).
func TestCappedToolWithNewArgsStops(t *testing.T) {
	type stop struct {
		Code           string
		Step, Refusals int
		Evidence       any
	}
	want := stop{"REPEATED_REFUSAL", 4, 3, refusal.Evidence{Tool: "search", Count: 3, Threshold: 3, Scope: refusal.ScopeTool}}
	for dn, dr := range doors {
		t.Run(dn, func(t *testing.T) {
			capped, err := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 2}})
			if err != nil {
				t.Fatal(err)
			}
			g, err := guard.New(guard.Config{Rules: append(detector.Defaults(), capped)})
			if err != nil {
				t.Fatal(err)
			}
			got := stop{Step: 30}
			for i := range 30 {
				v, refused := dr(t, g, "Let me search for more information.", searchFor(fmt.Sprintf("topic %d", i)),
					func(guard.ToolCall) any { return "no results" })
				if refused {
					got.Refusals++
				}
				if v.Stop {
					got.Code, got.Step, got.Evidence = v.Code, i, v.Evidence
					break
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stop (-want +got):\n%s", diff)
			}
		})
	}
}
