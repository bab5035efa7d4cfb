package input

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. It never
// repeats the input. The rule judges nothing in preflight, so it has no text
// of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("You have been sent the same message %s among your recent turns, and answering it in words has not changed it. Act on what it says, try a different approach, or give your final answer.", feedback.Times(float64(e.Count)))
}

// warningFeedback is the model-facing text of the rule's warning w: Value
// counts the steps with the input.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("You have been sent the same message %s among your recent turns. If it comes once more and you answer it in words again, this run will stop: act on what it says, try a different approach, or give your final answer.", feedback.Times(w.Value))
}
