package feedback

import (
	"fmt"

	"github.com/loopguard/loopguard/guard"
)

// The codes of the early warnings of the built-in rules. A rule with warnings
// switched on gives one when the run is one step (or one call) away from a
// stop of its kind.
const (
	// CodeRepeatWarning: a run of identical calls is one call short of
	// the repeat threshold. Tool is the tool, Value the run's length,
	// Limit the threshold.
	CodeRepeatWarning = "REPEAT_WARNING"
	// CodeWindowedRepeatWarning: one more identical call would make too
	// many in the sliding window. Tool is the tool, Value the calls in
	// the window, Limit the count that stops.
	CodeWindowedRepeatWarning = "WINDOWED_REPEAT_WARNING"
	// CodeOscillationWarning: one more call that follows the cycle would
	// complete the cycles that stop. Value and Limit count calls.
	CodeOscillationWarning = "OSCILLATION_WARNING"
	// CodeNoProgressWarning: one more stalled step with the same text
	// stops the run. Value and Limit count steps.
	CodeNoProgressWarning = "NO_PROGRESS_WARNING"
	// CodeStallWarning: one more step without a new outcome stops the
	// run. Value and Limit count steps.
	CodeStallWarning = "STALL_WARNING"
	// CodeToolCallCapWarning: a tool has used its cap; one more call of
	// it stops the run. Tool is the tool, Value its calls, Limit the
	// count that stops (the cap plus one).
	CodeToolCallCapWarning = "TOOL_CALL_CAP_WARNING"
	// CodeBudgetWarning: a budget is close to spent (package budget's
	// warnAt). Metric names the budget.
	CodeBudgetWarning = "BUDGET_WARNING"
	// CodeRepeatedFailureWarning: one more call of a tool that fails the
	// same way stops the run. Tool is the tool, Value the same failures,
	// Limit the threshold.
	CodeRepeatedFailureWarning = "REPEATED_FAILURE_WARNING"
	// CodeRepeatedRefusalWarning: one more request for a call that was
	// refused stops the run. Tool is the tool, Value the refusals, Limit
	// the threshold.
	CodeRepeatedRefusalWarning = "REPEATED_REFUSAL_WARNING"
	// CodeRepeatedTextWarning: saying the same thing once more stops the
	// run. Value and Limit count steps.
	CodeRepeatedTextWarning = "REPEATED_TEXT_WARNING"
)

// The codes of the stops of the rules beyond the reference.
const (
	// CodeStall is the stall rule's stop (evidence: steps, threshold).
	CodeStall = "STALL"
	// CodeWindowedRepeat is the sliding-window repeat rule's stop
	// (evidence: tool, count, threshold, window).
	CodeWindowedRepeat = "WINDOWED_REPEAT"
	// CodeRepeatedFailure is the failure rule's stop: a tool failed the
	// same way again and again (evidence: tool, count, threshold, window).
	CodeRepeatedFailure = "REPEATED_FAILURE"
	// CodeRepeatedRefusal is the refusal rule's stop: the model kept
	// asking for a call that was refused (evidence: tool, count,
	// threshold).
	CodeRepeatedRefusal = "REPEATED_REFUSAL"
	// CodeRepeatedText is the repeated-text rule's stop: the model wrote
	// the same text again and again (evidence: count, threshold, window).
	CodeRepeatedText = "REPEATED_TEXT"
)

// ForWarning returns the model-facing text of an early warning, or "" for a
// code this package does not know. Like the texts of stops, it is made of
// fixed sentences, w's counts and, for the warnings of one tool, the tool's
// name through [ToolName]; it never repeats arguments, results or model
// text, and it never reads w.Detail.
//
// The warnings of the tool rules (REPEAT_WARNING, WINDOWED_REPEAT_WARNING,
// TOOL_CALL_CAP_WARNING, REPEATED_FAILURE_WARNING, REPEATED_REFUSAL_WARNING)
// carry the tool's name in w.Tool.
func ForWarning(w guard.Warning) string {
	switch w.Code {
	case CodeRepeatWarning:
		return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments. Another identical call will stop this run: change the arguments, use a different tool, or answer with what you already know.", ToolName(w.Tool), times(w.Value))
	case CodeWindowedRepeatWarning:
		return fmt.Sprintf("You have made exactly the same call to %s %s among your recent calls. Another identical call will stop this run: change the arguments, use a different tool, or answer with what you already know.", ToolName(w.Tool), times(w.Value))
	case CodeOscillationWarning:
		return "Your recent calls go round in a circle, repeating the same sequence. Following it once more will stop this run: break the cycle with a different approach, or answer with what you already know."
	case CodeNoProgressWarning:
		return fmt.Sprintf("Your last %s steps said the same thing and brought no new information. One more such step will stop this run: do something different that can bring new information, or give your final answer.", num(w.Value))
	case CodeStallWarning:
		return fmt.Sprintf("Your last %s steps brought no new information: no tool call returned anything new. One more such step will stop this run: make a tool call that can bring new information, or give your final answer.", num(w.Value))
	case CodeRepeatedFailureWarning:
		return fmt.Sprintf("Your calls to %s have failed %s the same way. Another call that fails like this will stop this run: read the error, then try a different approach or answer with what you know.", ToolName(w.Tool), times(w.Value))
	case CodeRepeatedRefusalWarning:
		return fmt.Sprintf("You have asked %s for a call to %s that is not allowed to run. It will not be run; asking for it again will stop this run. Use another approach or answer with what you have.", times(w.Value), ToolName(w.Tool))
	case CodeRepeatedTextWarning:
		return fmt.Sprintf("You have written the same message %s among your recent turns. Writing it once more will stop this run: say something new, try a different approach, or give your final answer.", times(w.Value))
	case CodeToolCallCapWarning:
		return fmt.Sprintf("You have now called %s %s, as often as this run allows. Another call to it will stop this run: use another tool or answer with what you have.", ToolName(w.Tool), times(w.Value))
	case CodeBudgetWarning:
		words, ok := metricWords[w.Metric]
		if !ok {
			words = "budget"
		}
		return fmt.Sprintf("This run has used %s of its %s: %s of %s. Plan to finish soon: call only the tools you still need, then give your final answer.", percent(w.Value, w.Limit), words, num(w.Value), num(w.Limit))
	}
	return ""
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
	return num(float64(int64(p))) + "%"
}
