package budget

import (
	"fmt"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/rule"
)

// metricWords name the budgets in the texts, by metric.
var metricWords = map[string]string{
	"totalTokens":  "token budget",
	"inputTokens":  "input-token budget",
	"outputTokens": "output-token budget",
	"costUsd":      "cost budget (in US dollars)",
	"durationMs":   "time budget (in milliseconds)",
}

// words names the budget of metric: "budget" for one it does not know.
func words(metric string) string {
	if w, ok := metricWords[metric]; ok {
		return w
	}
	return "budget"
}

// feedback is the model-facing text of a budget stop with this evidence: in
// preflight, of the refusal of the call.
func (e Evidence) feedback(p rule.Phase) string {
	text := fmt.Sprintf("This run has used its %s: %s of %s. Do not call more tools: give your final answer now with what you have found.", words(e.Metric), feedback.Num(e.Value), feedback.Num(e.Limit))
	return refused(text, p)
}

// feedback is the model-facing text of a step-limit stop with this
// evidence: in preflight, of the refusal of the call.
func (e StepsEvidence) feedback(p rule.Phase) string {
	text := fmt.Sprintf("This run has reached its limit of %s steps. Do not call more tools: give your final answer now with what you have found.", feedback.Num(float64(e.Limit)))
	return refused(text, p)
}

// refused is text, as the refusal of a call in preflight.
func refused(text string, p rule.Phase) string {
	if p == rule.PhasePreflight {
		return "That call was not run. " + text
	}
	return text
}

// warningFeedback is the model-facing text of the rule's warning w: Metric
// names the budget, Value its use, Limit its limit.
func warningFeedback(w rule.Warning) string {
	return fmt.Sprintf("This run has used %s of its %s: %s of %s. Plan to finish soon: call only the tools you still need, then give your final answer.", percent(w.Value, w.Limit), words(w.Metric), feedback.Num(w.Value), feedback.Num(w.Limit))
}

// percent writes value/limit as a whole percentage, rounded down so that it
// never reads 100% before the limit is reached.
func percent(value, limit float64) string {
	if !(limit > 0) || !(value >= 0) {
		return "part"
	}
	p := value / limit * 100
	if p > 100 {
		p = 100
	}
	return feedback.Num(float64(int64(p))) + "%"
}
