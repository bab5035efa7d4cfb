package noprogress

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	v := rule.Verdict{Stop: true, Code: Code, Feedback: Evidence{Steps: 3, Threshold: 3}.feedback()}
	ruletest.Golden(t, "no_progress.check", v.Feedback)
	// A turn refuses the calls of a run that stopped with the stop's
	// feedback (Verdict.Refusal).
	ruletest.Golden(t, "no_progress.preflight", v.Refusal("").Feedback)
	ruletest.Golden(t, "no_progress_warning", warningFeedback(rule.Warning{Code: WarningCode, Metric: "stalledSteps", Value: 2, Limit: 3}))
}
