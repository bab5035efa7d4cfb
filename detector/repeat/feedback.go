package repeat

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence: in
// preflight, of the refusal of the call that would have extended the run.
func (e Evidence) feedback(p rule.Phase) string {
	if p == rule.PhasePreflight {
		return fmt.Sprintf("That call was not run: it would have been the %s call in a row to %s with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", feedback.Ordinal(float64(e.Count)), feedback.ToolName(e.Tool))
	}
	if e.IdenticalResults {
		return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments and got the same result every time; it is not changing. Stop waiting on it: use a different tool or arguments, or answer with what you already know.", feedback.ToolName(e.Tool), feedback.Times(float64(e.Count)))
	}
	return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments, and another identical call will not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", feedback.ToolName(e.Tool), feedback.Times(float64(e.Count)))
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value the run's length.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments. Another identical call will stop this run: change the arguments, use a different tool, or answer with what you already know.", feedback.ToolName(w.Tool), feedback.Times(w.Value))
}
