package stall

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.Golden(t, "stall.check", Evidence{Steps: 5, Threshold: 5}.feedback())
	ruletest.Golden(t, "stall_warning", warningFeedback(rule.Warning{Code: WarningCode, Metric: "stalledSteps", Value: 4, Limit: 5}))
}
