// Package openai connects a loopguard guard to an agent loop written with
// github.com/openai/openai-go/v3, for Chat Completions and the Responses API.
//
// The SDK has no tool runner: you write the loop, and this package gives it
// the pieces. [StepFromChatCompletion] and [StepFromResponse] turn what the
// API returned into a [guard.Step]. [Preflight] asks the guard about the tool
// calls of a completion before any of them runs and returns a [Turn]: the
// calls that may run, a tool message with the model-facing feedback for each
// refused one, and, once you have given it the outcomes, the step to record
// ([Turn.End]) and the messages of the next request. [PreflightResponse] and
// [ResponseTurn] do the same for the Responses API. Both are built on
// [guard.Turn], keyed by the API's call IDs.
//
// A loop over Chat Completions:
//
//	for {
//		completion, err := client.Chat.Completions.New(ctx, params)
//		if err != nil {
//			return err
//		}
//		turn := lgopenai.Preflight(ctx, g, completion)
//		for _, call := range turn.Allowed() {
//			out, err := runTool(ctx, call.Function.Name, call.Function.Arguments)
//			turn.SetResult(call.ID, out, err)
//		}
//		v, err := turn.End(ctx)
//		if err != nil {
//			return err // the guard stopped the run: a *guard.StopError
//		}
//		if v.Stop {
//			return nil // the model answered: a normal finish is not an error
//		}
//		params.Messages = append(params.Messages, turn.Messages()...)
//	}
//
// A refused call never runs. The model is answered with the guard's
// feedback, which names the tool and never quotes the arguments, and the
// call is recorded in the step's [guard.Step.Refused], not among its calls,
// so that a model that keeps asking for it is seen.
//
// Finish reasons are given to the guard as the API spells them ("stop",
// "length", "tool_calls", "content_filter"), which the guard normalises;
// the deprecated "function_call" counts as "tool_calls". The Responses API
// has no finish reason: see [StepFromResponse] for how its status is read.
//
// The package name matches the SDK's; import one of them under another name:
//
//	import lgopenai "github.com/loopguard/loopguard/adapters/openai"
package openai

import (
	"context"
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"

	"github.com/loopguard/loopguard/guard"
)

// StepFromChatCompletion returns the step of a completion's first choice:
// its text (the content, and the refusal text if the model refused), its
// tool calls with their IDs, their arguments and no outcome, its finish
// reason and the completion's token counts. Function calls take their arguments as JSON
// text; custom tool calls take their free-form input as a string. A nil
// completion, or one without choices, gives a step with its usage alone.
func StepFromChatCompletion(c *sdk.ChatCompletion) guard.Step {
	if c == nil {
		return guard.Step{}
	}
	step := guard.Step{Usage: guard.Usage{
		InputTokens:  c.Usage.PromptTokens,
		OutputTokens: c.Usage.CompletionTokens,
		TotalTokens:  c.Usage.TotalTokens,
	}}
	if len(c.Choices) == 0 {
		return step
	}
	choice := c.Choices[0]
	step.Text = joinText(choice.Message.Content, choice.Message.Refusal)
	step.FinishReason = choice.FinishReason
	if step.FinishReason == "function_call" {
		step.FinishReason = "tool_calls"
	}
	for _, tc := range choice.Message.ToolCalls {
		switch tc.Type {
		case "function":
			f := tc.AsFunction().Function
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tc.ID, Name: f.Name, Args: jsonArgs(f.Arguments)})
		case "custom":
			cu := tc.AsCustom().Custom
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tc.ID, Name: cu.Name, Args: cu.Input})
		}
	}
	return step
}

// joinText joins the non-empty texts with a new line.
func joinText(texts ...string) string {
	out := ""
	for _, t := range texts {
		switch {
		case t == "":
		case out == "":
			out = t
		default:
			out += "\n" + t
		}
	}
	return out
}

// jsonArgs returns arguments given as JSON text, or nil when there are none.
func jsonArgs(s string) any {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// A Turn is the tool calls of one chat completion on their way through the
// guard: the guard's decision on each, and the outcome of each call that ran.
// Create it with [Preflight]. It is a [guard.Turn] keyed by the completion's
// tool call IDs, with the SDK's types around it. Its methods are safe for
// concurrent use, so allowed calls may run in parallel and report their
// outcomes as they end.
type Turn struct {
	completion *sdk.ChatCompletion
	calls      []sdk.ChatCompletionMessageToolCallUnion // function and custom calls, in order
	turn       *guardTurn
}

// Preflight asks g about the tool calls of the completion's first choice
// before any of them runs. The calls are judged in order as parts of one
// step: each with the allowed calls before it, so that parallel calls see
// each other. ctx goes to the guard's observer. Nothing is recorded yet: give
// the outcomes to the returned Turn, then call [Turn.End]. g must not be nil.
func Preflight(ctx context.Context, g *guard.Guard, c *sdk.ChatCompletion) *Turn {
	t := &Turn{completion: c, turn: beginTurn(ctx, g, StepFromChatCompletion(c))}
	if c != nil && len(c.Choices) > 0 {
		for _, tc := range c.Choices[0].Message.ToolCalls {
			if tc.Type == "function" || tc.Type == "custom" {
				t.calls = append(t.calls, tc)
			}
		}
	}
	return t
}

// Allowed returns the calls that may run, in order.
func (t *Turn) Allowed() []sdk.ChatCompletionMessageToolCallUnion {
	var out []sdk.ChatCompletionMessageToolCallUnion
	for i, c := range t.calls {
		if t.turn.decisions[i].Allow {
			out = append(out, c)
		}
	}
	return out
}

// Refusals returns, for each refused call in order, a tool message that
// answers it with the decision's model-facing feedback.
func (t *Turn) Refusals() []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	for i, c := range t.calls {
		if d := t.turn.decisions[i]; !d.Allow {
			out = append(out, sdk.ToolMessage((&guard.RefusedError{Decision: d}).Error(), c.ID))
		}
	}
	return out
}

// Decision returns the guard's decision on the call with this ID, and
// whether the turn has such a call.
func (t *Turn) Decision(callID string) (guard.Decision, bool) {
	return t.turn.Decision(callID)
}

// SetResult records what an allowed call returned: output is the text the
// model will see, and a non-nil err marks the call as failed (when output is
// empty, the model sees "Error: " and err's text). It reports whether callID
// names an allowed call of a turn that has not ended; the outcome of any
// other call is ignored. A later SetResult for the same call replaces the
// earlier one.
func (t *Turn) SetResult(callID, output string, err error) bool {
	return t.turn.setResult(callID, output, err)
}

// Step returns the step that [Turn.End] records: the completion's text,
// finish reason and usage, with the calls that ran and their outcomes, and in
// Refused the calls the guard refused. Allowed calls whose outcome was not
// given are left out: they did not run.
func (t *Turn) Step() guard.Step {
	return t.turn.Step(t.turn.step)
}

// End records the turn's step with the guard and returns the verdict. The
// error is a [*guard.StopError] when the guard stops the run for a fault; a
// normal finish (the model answered: v.Stop, and guard.IsFault(v) false)
// comes with a nil error. ctx goes to the guard's observer. A turn ends once;
// Messages still answers after End.
func (t *Turn) End(ctx context.Context) (guard.Verdict, error) {
	return t.turn.End(ctx, t.turn.step)
}

// Messages returns what to append to the conversation for the next request:
// the assistant's message, then one tool message per call, in order. A call
// that ran is answered with its output; a refused call with the guard's
// feedback; an allowed call whose outcome was not given with a sentence
// saying it was not run (see [guard.Turn.Answer]). It returns nil for a
// completion without choices.
func (t *Turn) Messages() []sdk.ChatCompletionMessageParamUnion {
	if t.completion == nil || len(t.completion.Choices) == 0 {
		return nil
	}
	out := []sdk.ChatCompletionMessageParamUnion{t.completion.Choices[0].Message.ToParam()}
	for i, c := range t.calls {
		out = append(out, sdk.ToolMessage(t.turn.answer(i), c.ID))
	}
	return out
}

// guardTurn is what Turn and ResponseTurn share: the guard's turn, the
// model's step without its calls, and the decision on each call.
type guardTurn struct {
	*guard.Turn
	step      guard.Step
	ids       []string
	decisions []guard.Decision
}

// beginTurn begins a turn of g and preflights the calls of step.
func beginTurn(ctx context.Context, g *guard.Guard, step guard.Step) *guardTurn {
	t := &guardTurn{Turn: g.Begin()}
	for _, c := range step.ToolCalls {
		t.ids = append(t.ids, c.ID)
	}
	// A new turn has not ended, so Preflight cannot fail.
	t.decisions, _ = t.Preflight(ctx, step.ToolCalls...)
	step.ToolCalls = nil
	t.step = step
	return t
}

// setResult gives an outcome as text: an empty output beside an error is no
// result.
func (t *guardTurn) setResult(callID, output string, err error) bool {
	var result any = output
	if err != nil && output == "" {
		result = nil
	}
	return t.SetResult(callID, result, err)
}

// answer returns the text that answers call i.
func (t *guardTurn) answer(i int) string {
	if d := t.decisions[i]; !d.Allow {
		return (&guard.RefusedError{Decision: d}).Error()
	}
	if text, ok := t.Answer(t.ids[i]); ok {
		return text
	}
	return notRunText // a call without an ID can take no outcome
}

// notRunText answers a call that did not run.
const notRunText = "That call was not run."
