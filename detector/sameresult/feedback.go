package sameresult

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal. It names the
// tool (when its name is safe to repeat) and the count, never the
// arguments or the result.
func (e Evidence) feedback() string {
	return fmt.Sprintf("Your last %s calls to %s returned exactly the same result, although you changed the arguments each time. Rewording the call will not bring anything new. Use what that result says, try a different tool or source, or give your final answer.", feedback.Num(float64(e.Count)), feedback.ToolName(e.Tool))
}

// warningFeedback is the model-facing text of the rule's warning w: Tool is
// the tool, Value the calls in the streak.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("Your last %s calls to %s returned exactly the same result, although you changed the arguments each time. Another call that returns it again will stop this run: use what the result says, try a different tool or source, or give your final answer.", feedback.Num(w.Value), feedback.ToolName(w.Tool))
}
