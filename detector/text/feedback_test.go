package text

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.Golden(t, "repeated_text.check", Evidence{Count: 3, Threshold: 3, Window: 10}.feedback())
	ruletest.Golden(t, "repeated_text_warning", warningFeedback(rule.Warning{Code: WarningCode, Metric: "sameTextSteps", Value: 2, Limit: 3}))
}
