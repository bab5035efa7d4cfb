package refusal

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.Golden(t, "repeated_refusal.check", Evidence{Tool: "search", Count: 3, Threshold: 3}.feedback())
	ruletest.Golden(t, "repeated_refusal_warning", warningFeedback(rule.Warning{Code: WarningCode, Tool: "search", Value: 2, Limit: 3}))
}
