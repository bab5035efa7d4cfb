// Package ollama connects a loopguard guard to an agent loop written with
// github.com/ollama/ollama/api, the Go client of Ollama's /api/chat.
//
// The client has no tool runner: you write the loop, and this package gives
// it the pieces, as adapters/openai does for OpenAI. [StepFromResponse]
// turns a chat response into a [guard.Step]. [Preflight] asks the guard
// about the tool calls of a response before any of them runs and returns a
// [Turn]: the calls that may run, a tool message with the model-facing
// feedback for each refused one, and, once you have given it the outcomes,
// the step to record ([Turn.End]) and the messages of the next request. It
// is built on [guard.Turn]. [Collect] gathers a reply, streamed or not, into
// one response.
//
//	for {
//		var resp api.ChatResponse
//		if err := client.Chat(ctx, req, lgollama.Collect(&resp)); err != nil {
//			return err
//		}
//		turn := lgollama.Preflight(ctx, g, resp)
//		for _, call := range turn.Allowed() {
//			out, err := runTool(ctx, call.Function.Name, call.Function.Arguments.ToMap())
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
// A refused call never runs. The model is answered with a tool message whose
// content is the guard's feedback, which names the tool and never quotes the
// arguments, and the call is recorded in the step's [guard.Step.Refused],
// not among its calls, so that a model that keeps asking for it is seen.
//
// Recent Ollama servers give tool calls IDs; older ones give none. The
// turn names a call by its ID when it has one, and otherwise by its place in
// the reply: "call_1" for the first call, "call_2" for the second, and so
// on. The calls that [Turn.Allowed] returns are copies that carry that name
// in their ID; the messages sent back are the model's own, unchanged, and
// each tool message carries the ID the model gave (none when it gave none)
// and the tool's name.
//
// Finish reasons are given to the guard as Ollama spells its done_reason
// ("stop", "length", ...), which the guard normalises; a response that is not
// done has none. Ollama reports "stop" on a reply that calls tools, as on one
// that answers: the reason is passed on as it is, and the guard's finish rule
// by default lets a step with calls go on (see package detector/finish,
// Options.StopWithToolCalls). Usage is the prompt and output token counts
// (prompt_eval_count, eval_count), and total_duration is the step's
// duration.
//
// The package name matches the SDK's (api is the import's name, ollama the
// module's); the examples import it as lgollama.
package ollama

import (
	"context"
	"encoding/json"

	"github.com/ollama/ollama/api"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// StepFromResponse returns the step of a chat response: its message's
// content (not its thinking), its tool calls with their IDs as the model
// gave them, their arguments as JSON and no outcome, its done_reason when it
// is done, its token counts and its total duration.
func StepFromResponse(r api.ChatResponse) guard.Step {
	step := guard.Step{
		Text: r.Message.Content,
		Usage: guard.Usage{
			InputTokens:  int64(r.PromptEvalCount),
			OutputTokens: int64(r.EvalCount),
			Duration:     r.TotalDuration,
		},
	}
	if r.Done {
		step.FinishReason = r.DoneReason
	}
	for _, tc := range r.Message.ToolCalls {
		step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: jsonArgs(tc.Function.Arguments)})
	}
	return step
}

// jsonArgs returns a call's arguments as JSON text, or nil when it has none.
func jsonArgs(a api.ToolCallFunctionArguments) any {
	if a.Len() == 0 {
		return nil
	}
	data, err := a.MarshalJSON()
	if err != nil {
		return a.ToMap() // compared by its JSON encoding, as far as it goes
	}
	return json.RawMessage(data)
}

// Collect returns a function for [api.Client.Chat] that gathers the reply
// into *r, streamed or not: the content and the thinking of the chunks
// joined, their tool calls in order, and the rest (done, done_reason, the
// metrics) from the last chunk. r must not be nil; Collect resets it.
func Collect(r *api.ChatResponse) api.ChatResponseFunc {
	*r = api.ChatResponse{}
	first := true
	return func(chunk api.ChatResponse) error {
		if first {
			*r = chunk
			r.Message.ToolCalls = append([]api.ToolCall(nil), chunk.Message.ToolCalls...)
			first = false
			return nil
		}
		msg := r.Message
		msg.Content += chunk.Message.Content
		msg.Thinking += chunk.Message.Thinking
		msg.ToolCalls = append(msg.ToolCalls, chunk.Message.ToolCalls...)
		if msg.Role == "" {
			msg.Role = chunk.Message.Role
		}
		*r = chunk
		r.Message = msg
		return nil
	}
}

// A Turn is the tool calls of one chat response on their way through the
// guard: the guard's decision on each, and the outcome of each call that
// ran. Create it with [Preflight]. It is a [guard.Turn] keyed by the calls'
// IDs (see the package documentation for calls without one), with the
// client's types around it. Its methods are safe for concurrent use, so
// allowed calls may run in parallel and report their outcomes as they end.
type Turn struct {
	turn      *guard.Turn
	msg       api.Message
	ids       []string         // the name of each call in the turn
	decisions []guard.Decision // one per call
	step      guard.Step       // the response's step, without its calls
}

// Preflight asks g about the tool calls of the response before any of them
// runs. The calls are judged in order as parts of one step: each with the
// allowed calls before it, so that parallel calls see each other. ctx goes
// to the guard's observer. Nothing is recorded yet: give the outcomes to the
// returned Turn, then call [Turn.End]. g must not be nil.
func Preflight(ctx context.Context, g *guard.Guard, r api.ChatResponse) *Turn {
	step := StepFromResponse(r)
	t := &Turn{turn: g.Begin(), msg: r.Message, ids: hook.CallIDs(step.ToolCalls)}
	for i := range step.ToolCalls {
		step.ToolCalls[i].ID = t.ids[i]
	}
	// A new turn has not ended, so Preflight cannot fail.
	t.decisions, _ = t.turn.Preflight(ctx, step.ToolCalls...)
	step.ToolCalls = nil
	t.step = step
	return t
}

// Allowed returns the calls that may run, in order: copies of the model's
// calls, each with its ID in the turn (the model's ID, or the name the turn
// gave a call without one), to give to [Turn.SetResult].
func (t *Turn) Allowed() []api.ToolCall {
	var out []api.ToolCall
	for i, c := range t.msg.ToolCalls {
		if t.decisions[i].Allow {
			c.ID = t.ids[i]
			out = append(out, c)
		}
	}
	return out
}

// Refusals returns, for each refused call in order, a tool message that
// answers it with the decision's model-facing feedback.
func (t *Turn) Refusals() []api.Message {
	var out []api.Message
	for i := range t.msg.ToolCalls {
		if !t.decisions[i].Allow {
			out = append(out, t.toolMessage(i))
		}
	}
	return out
}

// Decision returns the guard's decision on the call with this ID in the
// turn (see [Turn.Allowed]), and whether the turn has such a call.
func (t *Turn) Decision(callID string) (guard.Decision, bool) {
	return t.turn.Decision(callID)
}

// SetResult records what an allowed call returned: output is the text the
// model will see, and a non-nil err marks the call as failed (when output is
// empty, the model sees "Error: " and err's text). callID is the call's ID
// in the turn, as [Turn.Allowed] gives it. It reports whether callID names
// an allowed call of a turn that has not ended; the outcome of any other
// call is ignored. A later SetResult for the same call replaces the earlier
// one.
func (t *Turn) SetResult(callID, output string, err error) bool {
	var result any = output
	if err != nil && output == "" {
		result = nil
	}
	return t.turn.SetResult(callID, result, err)
}

// Step returns the step that [Turn.End] records: the response's text,
// finish reason and usage, with the calls that ran and their outcomes, and
// in Refused the calls the guard refused. Allowed calls whose outcome was
// not given are left out: they did not run.
func (t *Turn) Step() guard.Step {
	return t.turn.Step(t.step)
}

// End records the turn's step with the guard and returns the verdict. The
// error is a [*guard.StopError] when the guard stops the run for a fault; a
// normal finish (the model answered: v.Stop, and guard.IsFault(v) false)
// comes with a nil error. ctx goes to the guard's observer. A turn ends once;
// Messages still answers after End.
func (t *Turn) End(ctx context.Context) (guard.Verdict, error) {
	return t.turn.End(ctx, t.step)
}

// Messages returns what to append to the conversation for the next request:
// the assistant's message as it came, then one tool message per call, in
// order. A call that ran is answered with its output; a refused call with
// the guard's feedback; an allowed call whose outcome was not given with a
// sentence saying it was not run (see [guard.Turn.Answer]).
func (t *Turn) Messages() []api.Message {
	out := []api.Message{t.msg}
	for i := range t.msg.ToolCalls {
		out = append(out, t.toolMessage(i))
	}
	return out
}

// toolMessage returns the tool message that answers call i.
func (t *Turn) toolMessage(i int) api.Message {
	c := t.msg.ToolCalls[i]
	var text string
	if d := t.decisions[i]; !d.Allow {
		text = hook.RefusalText(d)
	} else {
		text, _ = t.turn.Answer(t.ids[i])
	}
	return api.Message{Role: "tool", Content: text, ToolName: c.Function.Name, ToolCallID: c.ID}
}
