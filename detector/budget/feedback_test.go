package budget

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/rule"
)

func TestFeedbackGolden(t *testing.T) {
	ruletest.GoldenFeedback(t, "max_steps", StepsEvidence{Steps: 50, Limit: 50}.feedback)
	for name, ev := range map[string]Evidence{
		"budget_total_tokens":  {Metric: "totalTokens", Value: 1200, Limit: 1000},
		"budget_input_tokens":  {Metric: "inputTokens", Value: 1000, Limit: 1000},
		"budget_output_tokens": {Metric: "outputTokens", Value: 10, Limit: 10},
		"budget_cost_usd":      {Metric: "costUsd", Value: 0.123456789, Limit: 0.1},
		"budget_duration_ms":   {Metric: "durationMs", Value: 60000, Limit: 60000},
	} {
		ruletest.GoldenFeedback(t, name, ev.feedback)
	}
	ruletest.Golden(t, "budget_warning", warningFeedback(rule.Warning{Code: CodeWarning, Metric: "totalTokens", Value: 850, Limit: 1000, Ratio: 0.85}))
	ruletest.Golden(t, "budget_warning_cost", warningFeedback(rule.Warning{Code: CodeWarning, Metric: "costUsd", Value: 0.4567, Limit: 0.5, Ratio: 0.9134}))
}

// TestWarningOddNumbers: a warning of a metric the texts do not know, with
// numbers no budget gives, still reads as a sentence.
func TestWarningOddNumbers(t *testing.T) {
	got := warningFeedback(rule.Warning{Code: CodeWarning, Metric: "odd", Value: -1, Limit: 0})
	if !strings.Contains(got, "used part of its budget: -1 of 0.") {
		t.Errorf("odd budget warning: %q", got)
	}
}

// TestPercent checks the boundaries of the warnings' percentages: rounded
// down, never over 100%, "part" when there is nothing to divide.
func TestPercent(t *testing.T) {
	for _, c := range []struct {
		value, limit float64
		want         string
	}{{0, 10, "0%"}, {9.99, 10, "99%"}, {10, 10, "100%"}, {11, 10, "100%"}, {1, 0, "part"}, {-1, 10, "part"}} {
		if got := percent(c.value, c.limit); got != c.want {
			t.Errorf("percent(%v, %v) = %q, want %q", c.value, c.limit, got, c.want)
		}
	}
}
