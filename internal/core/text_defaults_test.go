package core_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// firstStop checks the steps with the default guard and returns the code
// and index of the first stop ("" and len(steps) when none).
func firstStop(t *testing.T, steps func(i int) guard.Step, n int) (string, int) {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if v := testutil.Check(t, g, steps(i)); v.Stop {
			return v.Code, i
		}
	}
	return "", n
}

func transfer(summary string) guard.ToolCall {
	return guard.ToolCall{Name: "transfer_to_human_agents", Args: json.RawMessage(fmt.Sprintf(`{"summary":%q}`, summary)),
		Result: "Transfer successful"}
}

// TestBracketedSentenceIsText: a model that after each transfer (a new
// summary each time, so a new outcome, and the same result) tells the user,
// whatever they say, the same sentence is stopped at its third that counts,
// with or without brackets around it: only a name between brackets
// ("[flights_refunder]") is a speaker label. When any text of up to 64
// bytes between brackets was a label, the bracketed sentences never
// stopped. The first sentence, right after the first "Transfer successful"
// (a result new to the window), comments on it and does not count.
func TestBracketedSentenceIsText(t *testing.T) {
	type stop struct {
		Code string
		Step int
	}
	for _, say := range []string{
		"You are being transferred to a human agent. Please hold on.",
		"[You are being transferred to a human agent. Please hold on.]",
		"<Sorry, I cannot help with that request.>",
	} {
		t.Run(say, func(t *testing.T) {
			code, step := firstStop(t, func(i int) guard.Step {
				if i%2 == 0 {
					return guard.Step{ToolCalls: []guard.ToolCall{transfer(fmt.Sprintf("user asked %d times", i))}}
				}
				return guard.Step{Text: say, Input: fmt.Sprintf("user message %d", i)}
			}, 30)
			if diff := cmp.Diff(stop{"REPEATED_TEXT", 7}, stop{code, step}); diff != "" {
				t.Errorf("stop (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSameReplyInEachTransferStepGoesOn is a documented non-goal: the same
// reply to the user in the step of each transfer, whose summary argument the
// model rewrites each time while the result stays "Transfer successful",
// is not stopped. A call's outcome hashes its arguments, so each transfer
// brings a new outcome and the step is progress for the repeated-text rule.
// Judging "new" by the result alone would stop it, and would stop a healthy
// sweep as well (TestEmptySweepWithPreambleGoesOn): different queries, the
// same "no results", the same preamble. On testdata/traces (190 labelled
// runs) the audit is the same either way, so precision decides. The same
// reply on a step of its own after each transfer stops
// (TestBracketedSentenceIsText).
func TestSameReplyInEachTransferStepGoesOn(t *testing.T) {
	code, step := firstStop(t, func(i int) guard.Step {
		return guard.Step{Text: "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.", Input: fmt.Sprintf("user message %d", i),
			ToolCalls: []guard.ToolCall{transfer(fmt.Sprintf("the user asked again (%d)", i))}}
	}, 30)
	if code != "" {
		t.Errorf("stopped at step %d with %s; a new outcome in each step is progress", step, code)
	}
}

// TestEmptySweepWithPreambleGoesOn: a healthy sweep, ten searches with
// different keywords that each find nothing, each after the same preamble,
// goes on: each search is a new outcome.
func TestEmptySweepWithPreambleGoesOn(t *testing.T) {
	code, step := firstStop(t, func(i int) guard.Step {
		return guard.Step{Text: "Let me search for more information.",
			ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"query":"keyword %d"}`, i)), Result: "no results"}}}
	}, 10)
	if code != "" {
		t.Errorf("the sweep stopped at step %d with %s", step, code)
	}
}
