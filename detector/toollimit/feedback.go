package toollimit

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence: in
// preflight, of the refusal of the call that would have gone over the cap.
func (e Evidence) feedback(p rule.Phase) string {
	var text string
	if e.Limit == 0 {
		text = fmt.Sprintf("The tool %s may not be used in this run. Do not call it again; use another tool or answer with what you have.", feedback.ToolName(e.Tool))
	} else {
		text = fmt.Sprintf("The tool %s may be called at most %s in this run, and that many calls have been made. Do not call it again; use another tool or answer with what you have.", feedback.ToolName(e.Tool), feedback.Times(float64(e.Limit)))
	}
	if p == rule.PhasePreflight {
		return "That call was not run. " + text
	}
	return text
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value its calls.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have now called %s %s, as often as this run allows. Another call to it will stop this run: use another tool or answer with what you have.", feedback.ToolName(w.Tool), feedback.Times(w.Value))
}
