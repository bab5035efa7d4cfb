package noprogress

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("Your last %s steps said the same thing and brought no new information. Do something different that can bring new information, or give your final answer.", feedback.Num(float64(e.Steps)))
}

// warningFeedback is the model-facing text of the rule's warning w: Value
// counts the stalled steps.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("Your last %s steps said the same thing and brought no new information. One more such step will stop this run: do something different that can bring new information, or give your final answer.", feedback.Num(w.Value))
}
