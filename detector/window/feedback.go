package window

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence: in
// preflight, of the refusal of the call that would have been one too many.
func (e Evidence) feedback(p rule.Phase) string {
	if p == rule.PhasePreflight {
		return fmt.Sprintf("That call was not run: it would have been exactly the same call to %s for the %s time among your recent calls, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", feedback.ToolName(e.Tool), feedback.Ordinal(float64(e.Count)))
	}
	return fmt.Sprintf("You have made exactly the same call to %s %s among your recent calls, and another one will not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", feedback.ToolName(e.Tool), feedback.Times(float64(e.Count)))
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value the same calls in the window.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have made exactly the same call to %s %s among your recent calls. Another identical call will stop this run: change the arguments, use a different tool, or answer with what you already know.", feedback.ToolName(w.Tool), feedback.Times(w.Value))
}
