package input

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.Golden(t, "repeated_input.check", Evidence{Count: 3, Threshold: 3, Window: 10, InputBytes: 71}.feedback())
	ruletest.Golden(t, "repeated_input_warning", warningFeedback(rule.Warning{Code: WarningCode, Value: 2, Limit: 3}))
}

// TestFeedbackHoldsNoData: neither the size of the input nor the details
// reach the model.
func TestFeedbackHoldsNoData(t *testing.T) {
	ev := Evidence{Count: 3, Threshold: 3, Window: 10, InputBytes: 777, StepIndexes: []int{4, 5, 6}}
	for _, got := range []string{ev.feedback(), warningFeedback(rule.Warning{Code: WarningCode, Value: 2, Limit: 3, Detail: "secret detail"})} {
		if strings.Contains(got, "secret") || strings.Contains(got, "777") || strings.Contains(got, "4") {
			t.Errorf("%q", got)
		}
	}
}
