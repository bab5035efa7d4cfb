// Package openai connects a loopguard guard to an agent loop written with
// github.com/openai/openai-go/v3, for Chat Completions and the Responses API.
//
// The SDK has no tool runner: you write the loop, and this package gives it
// the pieces. [StepFromChatCompletion] and [StepFromResponse] turn what the
// API returned into a [guard.Step]. [Preflight] asks the guard about the tool
// calls of a completion before any of them runs and returns a [Turn]: the
// calls that may run, a tool message with the model-facing feedback for each
// refused one, and, once you have given it the outcomes, the step to record
// with [guard.Guard.Check] and the messages of the next request.
// [PreflightResponse] and [ResponseTurn] do the same for the Responses API.
//
// A loop over Chat Completions:
//
//	for {
//		completion, err := client.Chat.Completions.New(ctx, params)
//		if err != nil {
//			return err
//		}
//		turn := lgopenai.Preflight(g, completion)
//		for _, call := range turn.Allowed() {
//			out, err := runTool(ctx, call.Function.Name, call.Function.Arguments)
//			turn.SetResult(call.ID, out, err)
//		}
//		if v := g.Check(turn.Step()); v.Stop {
//			return fmt.Errorf("stopped: %s", guard.Explain(v))
//		}
//		params.Messages = append(params.Messages, turn.Messages()...)
//	}
//
// A refused call never runs and is left out of the step given to Check, as
// package guard asks: it would otherwise count as a call that ran. If the
// model keeps asking for it, the step limit or the no-progress rule ends the
// run.
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
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"

	"github.com/loopguard/loopguard/guard"
)

// StepFromChatCompletion returns the step of a completion's first choice:
// its text (the content, and the refusal text if the model refused), its
// tool calls with their arguments and no outcome, its finish reason and the
// completion's token counts. Function calls take their arguments as JSON
// text; custom tool calls take their free-form input as a string. A nil
// completion, or one without choices, gives a step with its usage alone.
func StepFromChatCompletion(c *sdk.ChatCompletion) guard.Step {
	step, _ := chatStep(c)
	return step
}

// chatStep returns the step of c and the IDs of its calls.
func chatStep(c *sdk.ChatCompletion) (guard.Step, []string) {
	if c == nil {
		return guard.Step{}, nil
	}
	step := guard.Step{Usage: guard.Usage{
		InputTokens:  c.Usage.PromptTokens,
		OutputTokens: c.Usage.CompletionTokens,
		TotalTokens:  c.Usage.TotalTokens,
	}}
	if len(c.Choices) == 0 {
		return step, nil
	}
	choice := c.Choices[0]
	step.Text = joinText(choice.Message.Content, choice.Message.Refusal)
	step.FinishReason = choice.FinishReason
	if step.FinishReason == "function_call" {
		step.FinishReason = "tool_calls"
	}
	ids := make([]string, 0, len(choice.Message.ToolCalls))
	for _, tc := range choice.Message.ToolCalls {
		switch tc.Type {
		case "function":
			f := tc.AsFunction().Function
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{Name: f.Name, Args: jsonArgs(f.Arguments)})
		case "custom":
			cu := tc.AsCustom().Custom
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{Name: cu.Name, Args: cu.Input})
		default:
			continue
		}
		ids = append(ids, tc.ID)
	}
	return step, ids
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
// Create it with [Preflight]. Its methods are safe for concurrent use, so
// allowed calls may run in parallel and report their outcomes as they end.
type Turn struct {
	completion *sdk.ChatCompletion
	calls      []sdk.ChatCompletionMessageToolCallUnion // function and custom calls, in order
	t          *turn
}

// Preflight asks g about the tool calls of the completion's first choice
// before any of them runs. The calls are judged in order as parts of one
// step: each with the allowed calls before it, so that parallel calls see
// each other. Nothing is recorded: give the outcomes to the returned Turn,
// then pass [Turn.Step] to g.Check. g must not be nil.
func Preflight(g *guard.Guard, c *sdk.ChatCompletion) *Turn {
	step, ids := chatStep(c)
	t := &Turn{completion: c, t: preflightTurn(g, step, ids)}
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
		if t.t.calls[i].decision.Allow {
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
		if d := t.t.calls[i].decision; !d.Allow {
			out = append(out, sdk.ToolMessage(refusalText(d), c.ID))
		}
	}
	return out
}

// Decision returns the guard's decision on the call with this ID, and
// whether the turn has such a call.
func (t *Turn) Decision(callID string) (guard.Decision, bool) {
	return t.t.decision(callID)
}

// SetResult records what an allowed call returned: output is the text the
// model will see, and a non-nil err marks the call as failed (when output is
// empty, the model sees "Error: " and err's text). It reports whether callID
// names an allowed call of the turn; the outcome of any other call is
// ignored. A later SetResult for the same call replaces the earlier one.
func (t *Turn) SetResult(callID, output string, err error) bool {
	return t.t.setResult(callID, output, err)
}

// Step returns the step to record with g.Check: the completion's text,
// finish reason and usage, with the calls that ran and their outcomes.
// Refused calls, and allowed calls whose outcome was not given, are left out:
// they did not run.
func (t *Turn) Step() guard.Step {
	return t.t.recorded()
}

// Messages returns what to append to the conversation for the next request:
// the assistant's message, then one tool message per call, in order. A call
// that ran is answered with its output; a refused call with the guard's
// feedback; an allowed call whose outcome was not given with a sentence
// saying it was not run. It returns nil for a completion without choices.
func (t *Turn) Messages() []sdk.ChatCompletionMessageParamUnion {
	if t.completion == nil || len(t.completion.Choices) == 0 {
		return nil
	}
	out := []sdk.ChatCompletionMessageParamUnion{t.completion.Choices[0].Message.ToParam()}
	for i, c := range t.calls {
		out = append(out, sdk.ToolMessage(t.t.answer(i), c.ID))
	}
	return out
}
