package failure

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("Your calls to %s have failed %s the same way, whatever the arguments. Another call like them will fail like the others. Read the error, step back and try a different approach, or answer with what you know.", feedback.ToolName(e.Tool), feedback.Times(float64(e.Count)))
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value the same failures.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("Your calls to %s have failed %s the same way. Another call that fails like this will stop this run: read the error, then try a different approach or answer with what you know.", feedback.ToolName(w.Tool), feedback.Times(w.Value))
}
