package failure

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.Golden(t, "repeated_failure.check", Evidence{Tool: "str_replace", Count: 5, Threshold: 5, Window: 10}.feedback())
	ruletest.Golden(t, "repeated_failure_warning", warningFeedback(rule.Warning{Code: WarningCode, Tool: "str_replace", Value: 4, Limit: 5}))
}
