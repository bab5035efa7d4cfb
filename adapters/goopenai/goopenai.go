// Package goopenai connects a loopguard guard to an agent loop written with
// github.com/sashabaranov/go-openai.
//
// go-openai has no agent loop: you write it, and this package gives it the
// pieces. [StepFromResponse] turns a chat completion into a [guard.Step].
// [Preflight] asks the guard about the tool calls of a completion before any
// of them runs and returns a [Turn]: the calls that may run, and, once you
// have given it their outcomes, the step to record ([Turn.End]) and the
// messages of the next request, in which each refused call is answered with
// the guard's feedback. It is a [guard.Turn] keyed by the API's call IDs.
//
//	for {
//		resp, err := client.CreateChatCompletion(ctx, req)
//		if err != nil {
//			return err
//		}
//		turn := goopenai.Preflight(ctx, g, resp)
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
//		req.Messages = append(req.Messages, turn.Messages()...)
//	}
//
// A refused call never runs. The model is answered with the guard's
// feedback, which names the tool and never quotes the arguments, and the
// call is recorded in the step's [guard.Step.Refused], not among its calls,
// so that a model that keeps asking for it is seen.
//
// Finish reasons are given to the guard as the API spells them ("stop",
// "length", "tool_calls", "content_filter"), which the guard normalises; the
// deprecated "function_call" counts as "tool_calls". Legacy function calls
// (the message's FunctionCall, without an ID) are not tool calls and are not
// guarded.
package goopenai

import (
	"context"
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/loopguard/loopguard/guard"
)

// StepFromResponse returns the step of a completion's first choice: its
// text (the content, its text parts and the refusal text if the model
// refused), its tool calls with their IDs, their arguments as JSON text and
// no outcome, its finish reason and the completion's token counts. A
// completion without choices gives a step with its usage alone.
func StepFromResponse(r openai.ChatCompletionResponse) guard.Step {
	step := guard.Step{Usage: guard.Usage{
		InputTokens:  int64(r.Usage.PromptTokens),
		OutputTokens: int64(r.Usage.CompletionTokens),
		TotalTokens:  int64(r.Usage.TotalTokens),
	}}
	if len(r.Choices) == 0 {
		return step
	}
	choice := r.Choices[0]
	msg := choice.Message
	texts := []string{msg.Content}
	for _, p := range msg.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			texts = append(texts, p.Text)
		}
	}
	texts = append(texts, msg.Refusal)
	step.Text = joinText(texts)
	step.FinishReason = string(choice.FinishReason)
	if choice.FinishReason == openai.FinishReasonFunctionCall {
		step.FinishReason = string(openai.FinishReasonToolCalls)
	}
	for _, tc := range msg.ToolCalls {
		step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: jsonArgs(tc.Function.Arguments)})
	}
	return step
}

// joinText joins the non-empty texts with a new line.
func joinText(texts []string) string {
	var out []string
	for _, t := range texts {
		if t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
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
	turn      *guard.Turn
	resp      openai.ChatCompletionResponse
	calls     []openai.ToolCall
	decisions []guard.Decision // one per call
	step      guard.Step       // the completion's step, without its calls
}

// Preflight asks g about the tool calls of the completion's first choice
// before any of them runs. The calls are judged in order as parts of one
// step: each with the allowed calls before it, so that parallel calls see
// each other. ctx goes to the guard's observer. Nothing is recorded yet: give
// the outcomes to the returned Turn, then call [Turn.End]. g must not be nil.
func Preflight(ctx context.Context, g *guard.Guard, r openai.ChatCompletionResponse) *Turn {
	step := StepFromResponse(r)
	t := &Turn{turn: g.Begin(), resp: r}
	if len(r.Choices) > 0 {
		t.calls = r.Choices[0].Message.ToolCalls
	}
	// A new turn has not ended, so Preflight cannot fail.
	t.decisions, _ = t.turn.Preflight(ctx, step.ToolCalls...)
	step.ToolCalls = nil
	t.step = step
	return t
}

// Allowed returns the calls that may run, in order.
func (t *Turn) Allowed() []openai.ToolCall {
	var out []openai.ToolCall
	for i, c := range t.calls {
		if t.decisions[i].Allow {
			out = append(out, c)
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
// other call is ignored.
func (t *Turn) SetResult(callID, output string, err error) bool {
	var result any = output
	if err != nil && output == "" {
		result = nil
	}
	return t.turn.SetResult(callID, result, err)
}

// Step returns the step that [Turn.End] records: the completion's text,
// finish reason and usage, with the calls that ran and their outcomes, and in
// Refused the calls the guard refused.
func (t *Turn) Step() guard.Step { return t.turn.Step(t.step) }

// End records the turn's step with the guard and returns the verdict. The
// error is a [*guard.StopError] when the guard stops the run for a fault; a
// normal finish (the model answered) comes with a nil error. ctx goes to the
// guard's observer. A turn ends once; Messages still answers after End.
func (t *Turn) End(ctx context.Context) (guard.Verdict, error) {
	return t.turn.End(ctx, t.step)
}

// Messages returns what to append to the conversation for the next request:
// the assistant's message, then one tool message per call, in order. A call
// that ran is answered with its output, a refused call with the guard's
// feedback, and an allowed call whose outcome was not given with a sentence
// saying it was not run (see [guard.Turn.Answer]). It returns nil for a
// completion without choices.
func (t *Turn) Messages() []openai.ChatCompletionMessage {
	if len(t.resp.Choices) == 0 {
		return nil
	}
	out := []openai.ChatCompletionMessage{t.resp.Choices[0].Message}
	for i, c := range t.calls {
		text, ok := t.turn.Answer(c.ID)
		if !ok { // a call without an ID takes no outcome
			text = answerWithoutID(t.decisions[i])
		}
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: text, ToolCallID: c.ID})
	}
	return out
}

// answerWithoutID answers a call that has no ID: its refusal, or the
// sentence for a call that did not run.
func answerWithoutID(d guard.Decision) string {
	if !d.Allow {
		return (&guard.RefusedError{Decision: d}).Error()
	}
	return "That call was not run."
}
