package openai

import (
	"context"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/loopguard/loopguard/guard"
)

// StepFromResponse returns the step of a Responses API response: its output
// text, its function and custom tool calls with their call IDs, their
// arguments and no outcome, a finish reason read from its status, and its token counts.
//
// The Responses API reports a status rather than a finish reason. A
// completed response finishes with "tool_calls" when it made a call and
// "stop" when it did not; an incomplete one with "length" for
// max_output_tokens, "content_filter" for content_filter and its own reason
// otherwise; a failed one with "error"; a cancelled one with "cancelled". A
// response still queued or in progress has no finish reason. A nil response
// gives the zero step.
func StepFromResponse(r *responses.Response) guard.Step {
	if r == nil {
		return guard.Step{}
	}
	step := guard.Step{
		Text: r.OutputText(),
		Usage: guard.Usage{
			InputTokens:  r.Usage.InputTokens,
			OutputTokens: r.Usage.OutputTokens,
			TotalTokens:  r.Usage.TotalTokens,
		},
	}
	for _, item := range r.Output {
		switch item.Type {
		case "function_call":
			fc := item.AsFunctionCall()
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: fc.CallID, Name: fc.Name, Args: jsonArgs(fc.Arguments)})
		case "custom_tool_call":
			cc := item.AsCustomToolCall()
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: cc.CallID, Name: cc.Name, Args: cc.Input})
		}
	}
	switch r.Status {
	case responses.ResponseStatusCompleted:
		step.FinishReason = "stop"
		if len(step.ToolCalls) > 0 {
			step.FinishReason = "tool_calls"
		}
	case responses.ResponseStatusIncomplete:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			step.FinishReason = "length"
		case "":
			step.FinishReason = "incomplete"
		default:
			step.FinishReason = reason
		}
	case responses.ResponseStatusFailed:
		step.FinishReason = "error"
	case responses.ResponseStatusCancelled:
		step.FinishReason = "cancelled"
	}
	return step
}

// A ResponseTurn is the tool calls of one Responses API response on their
// way through the guard: the guard's decision on each, and the outcome of
// each call that ran. Create it with [PreflightResponse]. It is a
// [guard.Turn] keyed by the response's call IDs. Its methods are safe for
// concurrent use.
type ResponseTurn struct {
	calls []responses.ResponseOutputItemUnion // function and custom calls, in order
	turn  *guardTurn
}

// PreflightResponse asks g about the function and custom tool calls of r
// before any of them runs, in order, as parts of one step (as [Preflight]
// does for a chat completion). ctx goes to the guard's observer. Nothing is
// recorded yet: give the outcomes to the returned ResponseTurn, then call
// [ResponseTurn.End]. g must not be nil.
func PreflightResponse(ctx context.Context, g *guard.Guard, r *responses.Response) *ResponseTurn {
	t := &ResponseTurn{turn: beginTurn(ctx, g, StepFromResponse(r))}
	if r != nil {
		for _, item := range r.Output {
			if item.Type == "function_call" || item.Type == "custom_tool_call" {
				t.calls = append(t.calls, item)
			}
		}
	}
	return t
}

// Allowed returns the call items that may run, in order. Read them with
// AsFunctionCall or AsCustomToolCall, by their Type.
func (t *ResponseTurn) Allowed() []responses.ResponseOutputItemUnion {
	var out []responses.ResponseOutputItemUnion
	for i, c := range t.calls {
		if t.turn.decisions[i].Allow {
			out = append(out, c)
		}
	}
	return out
}

// Decision returns the guard's decision on the call with this call ID, and
// whether the turn has such a call.
func (t *ResponseTurn) Decision(callID string) (guard.Decision, bool) {
	return t.turn.Decision(callID)
}

// SetResult records what an allowed call returned, as [Turn.SetResult]
// does.
func (t *ResponseTurn) SetResult(callID, output string, err error) bool {
	return t.turn.setResult(callID, output, err)
}

// Step returns the step that [ResponseTurn.End] records: the response's
// text, finish reason and usage, with the calls that ran and their outcomes,
// and in Refused the calls the guard refused. Allowed calls whose outcome
// was not given are left out.
func (t *ResponseTurn) Step() guard.Step {
	return t.turn.Step(t.turn.step)
}

// End records the turn's step with the guard and returns the verdict, as
// [Turn.End] does: a [*guard.StopError] when the guard stops the run for a
// fault, and no error for a normal finish.
func (t *ResponseTurn) End(ctx context.Context) (guard.Verdict, error) {
	return t.turn.End(ctx, t.turn.step)
}

// Outputs returns one input item per call, in order, to send with the next
// request (with PreviousResponseID set to the response's ID): a
// function_call_output or custom_tool_call_output holding the call's output,
// the guard's feedback for a refused call, or a sentence saying an allowed
// call whose outcome was not given did not run.
func (t *ResponseTurn) Outputs() []responses.ResponseInputItemUnionParam {
	out := make([]responses.ResponseInputItemUnionParam, 0, len(t.calls))
	for i, c := range t.calls {
		text := t.turn.answer(i)
		if c.Type == "custom_tool_call" {
			out = append(out, responses.ResponseInputItemParamOfCustomToolCallOutput(c.CallID, text))
			continue
		}
		item := responses.ResponseInputItemParamOfFunctionCallOutput(text)
		item.OfFunctionCallOutput.CallID = sdk.String(c.CallID)
		out = append(out, item)
	}
	return out
}
