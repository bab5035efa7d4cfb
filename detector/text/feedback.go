package text

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("You have written the same message %s among your recent turns; repeating it does not move the task forward. Say something new that helps, try a different approach, or give your final answer.", feedback.Times(float64(e.Count)))
}

// warningFeedback is the model-facing text of the rule's warning w: Value
// counts the steps with the text.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have written the same message %s among your recent turns. Writing it once more will stop this run: say something new, try a different approach, or give your final answer.", feedback.Times(w.Value))
}
