package detector_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
)

// TestEveryFaultHasAHint: Explain gives a hint for the stop of every
// built-in rule that is a fault, from the rule's evidence, so a developer
// reading the log of any of them learns what to change.
func TestEveryFaultHasAHint(t *testing.T) {
	tests := []struct {
		reason   guard.Reason
		evidence any
		hint     string
	}{
		{budget.ReasonMaxSteps, budget.StepsEvidence{}, "the run used all its steps; raise the limit or give the agent a clearer goal"},
		{toollimit.ReasonToolLimit, toollimit.Evidence{}, "a tool was called more often than its cap allows"},
		{repeat.ReasonRepeatedToolCall, repeat.Evidence{}, "the agent repeats the same call; its result will not change"},
		{oscillation.ReasonOscillation, oscillation.Evidence{}, "the agent alternates between the same calls without getting anywhere"},
		{noprogress.ReasonNoProgress, noprogress.Evidence{}, "the agent repeats itself while nothing new comes back"},
		{finish.ReasonFinishReason, finish.Evidence{Normalized: "length", Terminal: true}, "the provider ended the turn; the loop should not ask again"},
		{budget.ReasonBudget, budget.Evidence{}, "a token, cost or time budget is spent"},
		{refusal.ReasonRepeatedRefusal, refusal.Evidence{}, "the agent keeps asking for a call it was refused; tell it what to do instead"},
		{failure.ReasonRepeatedFailure, failure.Evidence{}, "the same tool keeps failing the same way, whatever the arguments"},
		{text.ReasonRepeatedText, text.Evidence{}, "the agent writes the same text on steps that bring nothing new"},
		{stall.ReasonStall, stall.Evidence{}, "steps keep coming back with nothing new, whatever the text"},
		{window.ReasonWindowedRepeat, window.Evidence{}, "the agent keeps coming back to the same call between others"},
		{sameresult.ReasonSameResult, sameresult.Evidence{}, "the agent rewords its call, but the tool keeps returning the same"},
		{input.ReasonRepeatedInput, input.Evidence{}, "the agent is told the same thing again and again, and answers only in words"},
	}
	for _, tt := range tests {
		got := guard.Explain(guard.Verdict{Stop: true, Reason: tt.reason, Code: "X", Detail: "d", Evidence: tt.evidence})
		want := "stop: " + string(tt.reason) + " (X): d; hint: " + tt.hint
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Explain of a %s stop (-want +got):\n%s", tt.reason, diff)
		}
	}
}

// TestNormalFinishHasNoHint: a normal finish is no fault, and Explain gives
// it no hint.
func TestNormalFinishHasNoHint(t *testing.T) {
	v := guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Code: finish.CodeTerminal, Detail: "d",
		Evidence: finish.Evidence{Normalized: "stop", Terminal: true}}
	if got, want := guard.Explain(v), "stop: finish-reason (FINISH_TERMINAL): d"; got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
}
