package oscillation

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ev := Evidence{Period: 2, Repeats: 3, Threshold: 3, Tools: []string{"search", "read"}}
	ruletest.GoldenFeedback(t, "oscillation", ev.feedback)
	ruletest.Golden(t, "oscillation_warning", warningFeedback)
	same := Evidence{Period: 2, Repeats: 2, Threshold: 2, SameResults: true, Tools: []string{"execute", "execute"}}
	ruletest.Golden(t, "oscillation_same_results.check", same.feedback(rule.PhaseCheck))
}
