package oscillation

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
)

func TestFeedbackGolden(t *testing.T) {
	ev := Evidence{Period: 2, Repeats: 3, Threshold: 3, Tools: []string{"search", "read"}}
	ruletest.GoldenFeedback(t, "oscillation", ev.feedback)
	ruletest.Golden(t, "oscillation_warning", warningFeedback)
}
