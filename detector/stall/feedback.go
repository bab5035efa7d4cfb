package stall

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence. The rule
// judges nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback() string {
	return fmt.Sprintf("Your last %s steps brought no new information: no tool call returned anything new. Stop and think about what could bring new information, or give your final answer with what you have.", feedback.Num(float64(e.Steps)))
}

// warningFeedback is the model-facing text of the rule's warning w: Value
// counts the stalled steps.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("Your last %s steps brought no new information: no tool call returned anything new. One more such step will stop this run: make a tool call that can bring new information, or give your final answer.", feedback.Num(w.Value))
}
