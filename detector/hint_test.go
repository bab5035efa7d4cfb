package detector_test

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// TestEveryFaultHasAHint: Explain gives a hint for the stop of every
// built-in rule that is a fault, so a developer reading the log of any of
// them learns what to change.
func TestEveryFaultHasAHint(t *testing.T) {
	reasons := []guard.Reason{
		rule.ReasonMaxSteps, rule.ReasonToolLimit, rule.ReasonRepeatedToolCall,
		rule.ReasonOscillation, rule.ReasonNoProgress, rule.ReasonBudget,
		refusal.ReasonRepeatedRefusal, failure.ReasonRepeatedFailure, text.ReasonRepeatedText,
		stall.ReasonStall, window.ReasonWindowedRepeat,
	}
	for _, r := range reasons {
		got := guard.Explain(guard.Verdict{Stop: true, Reason: r, Code: "X", Detail: "d"})
		if !strings.Contains(got, "; hint: ") {
			t.Errorf("Explain of a %s stop has no hint: %q", r, got)
		}
	}
}
