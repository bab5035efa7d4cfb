// Package anthropic connects a loopguard guard to an agent written with
// github.com/anthropics/anthropic-sdk-go/v2.
//
// [StepFromMessage] and [StepFromBetaMessage] turn a message into a
// [guard.Step], for a loop you write yourself. For the SDK's beta tool
// runner (client.Beta.Messages.NewToolRunner), a [Runner] decorates the
// tools so that each call is preflighted before it runs and recorded after,
// [Runner.Check] records each message the runner returns, and the middleware
// of [Runner.Option] ends the run before a request once the guard has
// stopped it:
//
//	lg := lganthropic.NewRunner(g)
//	runner := client.Beta.Messages.NewToolRunner(lg.Tools(tools...), params, lg.Option())
//	for msg, err := range runner.All(ctx) {
//		if err != nil {
//			return err
//		}
//		if _, err := lg.Check(ctx, msg); err != nil {
//			return err // the guard stopped the run: a *guard.StopError
//		}
//	}
//	return nil // the model answered: a normal finish is not an error
//
// A refused call does not run: the decorated tool returns a
// [*guard.RefusedError] whose text is the guard's model-facing feedback
// (it names the tool and never quotes the arguments), which the runner hands
// to the model as an is_error tool result, and the loop goes on. The refusal
// is recorded in the step's [guard.Step.Refused], so that a model that keeps
// asking for the call is seen.
//
// Stop reasons are given to the guard in loopguard's terms: end_turn and
// stop_sequence are "stop" (a normal finish), tool_use is "tool-calls",
// max_tokens and model_context_window_exceeded are "length", refusal is
// "content-filter". pause_turn and compaction leave the turn unfinished and
// give no finish reason. Any other reason is given as it is.
//
// The package name matches the SDK's; import one of them under another name:
//
//	import lganthropic "github.com/loopguard/loopguard/adapters/anthropic"
package anthropic

import (
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/loopguard/loopguard/guard"
)

// FinishReason returns the loopguard finish reason of an Anthropic stop
// reason (see the package documentation).
func FinishReason(stopReason string) string {
	switch stopReason {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool-calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content-filter"
	case "pause_turn", "compaction":
		return ""
	}
	return stopReason
}

// StepFromMessage returns the step of a message: its text blocks joined by
// new lines, its tool_use blocks as calls with their IDs, their input as
// arguments and no outcome, its finish reason (see [FinishReason]) and its token counts.
// Input tokens include the tokens written to and read from the prompt cache.
// Server tools (server_tool_use blocks) run at Anthropic and are not calls of
// the step. A nil message gives the zero step.
func StepFromMessage(m *sdk.Message) guard.Step {
	if m == nil {
		return guard.Step{}
	}
	step := guard.Step{
		FinishReason: FinishReason(string(m.StopReason)),
		Usage: usage(m.Usage.InputTokens, m.Usage.CacheCreationInputTokens,
			m.Usage.CacheReadInputTokens, m.Usage.OutputTokens),
	}
	var text []string
	for _, block := range m.Content {
		switch b := block.AsAny().(type) {
		case sdk.TextBlock:
			text = append(text, b.Text)
		case sdk.ToolUseBlock:
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: b.ID, Name: b.Name, Args: rawArgs(b.Input)})
		}
	}
	step.Text = strings.Join(text, "\n")
	return step
}

// StepFromBetaMessage returns the step of a beta message, as
// [StepFromMessage] does for a message.
func StepFromBetaMessage(m *sdk.BetaMessage) guard.Step {
	if m == nil {
		return guard.Step{}
	}
	step := guard.Step{
		FinishReason: FinishReason(string(m.StopReason)),
		Usage: usage(m.Usage.InputTokens, m.Usage.CacheCreationInputTokens,
			m.Usage.CacheReadInputTokens, m.Usage.OutputTokens),
	}
	var text []string
	for _, block := range m.Content {
		switch block.Type {
		case "text":
			text = append(text, block.Text)
		case "tool_use":
			u := block.AsToolUse()
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: u.ID, Name: u.Name, Args: betaArgs(u)})
		}
	}
	step.Text = strings.Join(text, "\n")
	return step
}

// usage returns the usage of a turn; input tokens count the prompt cache
// too.
func usage(input, cacheWrite, cacheRead, output int64) guard.Usage {
	return guard.Usage{InputTokens: input + max(cacheWrite, 0) + max(cacheRead, 0), OutputTokens: output}
}

// rawArgs returns arguments given as JSON text, or nil when there are none.
func rawArgs(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// betaArgs returns the arguments of a beta tool_use block: its input as the
// API sent it when the block came from JSON, else the decoded value.
func betaArgs(u sdk.BetaToolUseBlock) any {
	if raw := u.JSON.Input.Raw(); raw != "" {
		return json.RawMessage(raw)
	}
	return u.Input
}
