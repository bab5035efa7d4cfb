package refusal

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("You have asked %s for a call to %s that is not allowed to run, and it was refused each time. It will not be run, so the run is being ended here. Give your final answer with what you have.", feedback.Times(float64(e.Count)), feedback.ToolName(e.Tool))
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value the refusals.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have asked %s for a call to %s that is not allowed to run. It will not be run; asking for it again will stop this run. Use another approach or answer with what you have.", feedback.Times(w.Value), feedback.ToolName(w.Tool))
}
