package oscillation

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// feedback is the model-facing text of a stop with this evidence: in
// preflight, of the refusal of the call that would have completed the
// cycles.
func (e Evidence) feedback(p rule.Phase) string {
	if p == rule.PhasePreflight {
		return fmt.Sprintf("That call was not run: it would have completed the same cycle of %s calls (%s) for the %s time without getting closer to an answer. Break the cycle: try a different approach, or answer with what you already know.", feedback.Num(float64(e.Period)), feedback.Tools(e.Tools), feedback.Ordinal(float64(e.Repeats)))
	}
	if e.SameResults || e.Long {
		// Only a finished step stops so: a call not yet run has no result.
		return fmt.Sprintf("You are going round in a circle: the same %s calls of %s have repeated %s and returned the same results each time, so running them again will not tell you anything new. Break the cycle: try a different approach, or answer with what you already know.", feedback.Num(float64(e.Period)), feedback.Tools(e.Tools), feedback.Times(float64(e.Repeats)))
	}
	return fmt.Sprintf("You are going round in a circle: the same %s calls (%s) have repeated %s without getting closer to an answer. Break the cycle: try a different approach, or answer with what you already know.", feedback.Num(float64(e.Period)), feedback.Tools(e.Tools), feedback.Times(float64(e.Repeats)))
}

// warningFeedback is the model-facing text of the rule's warnings.
const warningFeedback = "Your recent calls go round in a circle, repeating the same sequence. Following it once more will stop this run: break the cycle with a different approach, or answer with what you already know."
