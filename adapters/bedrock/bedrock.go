// Package bedrock connects a loopguard guard to an agent loop written with
// the Converse API of Amazon Bedrock, in
// github.com/aws/aws-sdk-go-v2/service/bedrockruntime.
//
// The SDK has no tool runner: you write the loop, and this package gives it
// the pieces, as adapters/openai does for OpenAI. [StepFromConverse] turns
// what Converse returned into a [guard.Step]. [Preflight] asks the guard
// about the tool uses of a Converse output before any of them runs and
// returns a [Turn]: the calls that may run, a tool result with the
// model-facing feedback for each refused one, and, once you have given it
// the outcomes, the step to record ([Turn.End]) and the messages of the
// next request. It is a [guard.Turn] keyed by the tool use IDs.
//
//	for {
//		out, err := client.Converse(ctx, input)
//		if err != nil {
//			return err
//		}
//		turn := lgbedrock.Preflight(ctx, g, out)
//		for _, call := range turn.Allowed() {
//			res, err := runTool(ctx, aws.ToString(call.Name), call.Input)
//			turn.SetResult(aws.ToString(call.ToolUseId), res, err)
//		}
//		v, err := turn.End(ctx)
//		if err != nil {
//			return err // the guard stopped the run: a *guard.StopError
//		}
//		if v.Stop {
//			return nil // the model answered: a normal finish is not an error
//		}
//		input.Messages = append(input.Messages, turn.Messages()...)
//	}
//
// A refused call never runs. The model is answered with a tool result whose
// text is the guard's feedback, which names the tool and never quotes the
// arguments, and the call is recorded in the step's [guard.Step.Refused],
// not among its calls, so that a model that keeps asking for it is seen.
// Tool results carry no status: Bedrock takes the field from Anthropic's
// Claude models only and refuses it for others, so a failure or a refusal is
// said in the result's text.
//
// Finish reasons are given to the guard as the SDK's [types.StopReason]
// spells them ("end_turn", "tool_use", "max_tokens", "stop_sequence",
// "guardrail_intervened", "content_filtered", ...), which the guard
// normalises. Usage is the output's token counts, and its latency is the
// step's duration.
//
// The package name is not the SDK's (bedrockruntime), so no renaming is
// needed; the examples import it as lgbedrock for symmetry with the other
// adapters.
package bedrock

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// StepFromConverse returns the step of a Converse output: its text (the
// message's text blocks, joined by new lines), its tool uses with their IDs,
// their input as JSON and no outcome, its stop reason as the SDK spells it,
// its token counts and its latency as the duration. A nil output gives the
// zero step; an output without a message, a step with its usage alone.
func StepFromConverse(out *bedrockruntime.ConverseOutput) guard.Step {
	if out == nil {
		return guard.Step{}
	}
	step := guard.Step{FinishReason: string(out.StopReason)}
	if u := out.Usage; u != nil {
		step.Usage = guard.Usage{
			InputTokens:  int64(aws.ToInt32(u.InputTokens)),
			OutputTokens: int64(aws.ToInt32(u.OutputTokens)),
			TotalTokens:  int64(aws.ToInt32(u.TotalTokens)),
		}
	}
	if m := out.Metrics; m != nil && m.LatencyMs != nil {
		step.Usage.Duration = time.Duration(*m.LatencyMs) * time.Millisecond
	}
	msg := message(out)
	if msg == nil {
		return step
	}
	for _, b := range msg.Content {
		switch b := b.(type) {
		case *types.ContentBlockMemberText:
			step.Text = joinText(step.Text, b.Value)
		case *types.ContentBlockMemberToolUse:
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{
				ID:   aws.ToString(b.Value.ToolUseId),
				Name: aws.ToString(b.Value.Name),
				Args: inputArgs(b.Value.Input),
			})
		}
	}
	return step
}

// message returns the output's message, or nil.
func message(out *bedrockruntime.ConverseOutput) *types.Message {
	if out == nil {
		return nil
	}
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		return &m.Value
	}
	return nil
}

// joinText joins two texts with a new line, leaving out an empty one.
func joinText(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n" + b
}

// inputArgs returns a tool use's input as JSON text, or nil when there is
// none or it cannot be encoded.
func inputArgs(d document.Interface) any {
	if d == nil {
		return nil
	}
	data, err := d.MarshalSmithyDocument()
	if err != nil || len(data) == 0 {
		return nil
	}
	return json.RawMessage(data)
}

// A Turn is the tool uses of one Converse output on their way through the
// guard: the guard's decision on each, and the outcome of each call that
// ran. Create it with [Preflight]. It is a [guard.Turn] keyed by the tool
// use IDs, with the SDK's types around it. Its methods are safe for
// concurrent use, so allowed calls may run in parallel and report their
// outcomes as they end.
type Turn struct {
	turn      *guard.Turn
	msg       *types.Message       // the output's message, or nil
	calls     []types.ToolUseBlock // the tool uses, in order
	decisions []guard.Decision     // one per call
	step      guard.Step           // the output's step, without its calls
}

// Preflight asks g about the tool uses of the output's message before any
// of them runs. The calls are judged in order as parts of one step: each
// with the allowed calls before it, so that parallel calls see each other.
// ctx goes to the guard's observer. Nothing is recorded yet: give the
// outcomes to the returned Turn, then call [Turn.End]. g must not be nil.
func Preflight(ctx context.Context, g *guard.Guard, out *bedrockruntime.ConverseOutput) *Turn {
	step := StepFromConverse(out)
	t := &Turn{turn: g.Begin(), msg: message(out)}
	if t.msg != nil {
		for _, b := range t.msg.Content {
			if tu, ok := b.(*types.ContentBlockMemberToolUse); ok {
				t.calls = append(t.calls, tu.Value)
			}
		}
	}
	// A new turn has not ended, so Preflight cannot fail.
	t.decisions, _ = t.turn.Preflight(ctx, step.ToolCalls...)
	step.ToolCalls = nil
	t.step = step
	return t
}

// Allowed returns the tool uses that may run, in order.
func (t *Turn) Allowed() []types.ToolUseBlock {
	var out []types.ToolUseBlock
	for i, c := range t.calls {
		if t.decisions[i].Allow {
			out = append(out, c)
		}
	}
	return out
}

// Refusals returns, for each refused call in order, a tool result block
// that answers it with the decision's model-facing feedback.
func (t *Turn) Refusals() []types.ContentBlock {
	var out []types.ContentBlock
	for i := range t.calls {
		if !t.decisions[i].Allow {
			out = append(out, t.result(i))
		}
	}
	return out
}

// Decision returns the guard's decision on the call with this tool use ID,
// and whether the turn has such a call.
func (t *Turn) Decision(toolUseID string) (guard.Decision, bool) {
	return t.turn.Decision(toolUseID)
}

// SetResult records what an allowed call returned: output is the text the
// model will see, and a non-nil err marks the call as failed (when output is
// empty, the model sees "Error: " and err's text). It reports whether
// toolUseID names an allowed call of a turn that has not ended; the outcome
// of any other call is ignored. A later SetResult for the same call replaces
// the earlier one.
func (t *Turn) SetResult(toolUseID, output string, err error) bool {
	var result any = output
	if err != nil && output == "" {
		result = nil
	}
	return t.turn.SetResult(toolUseID, result, err)
}

// Step returns the step that [Turn.End] records: the output's text, stop
// reason and usage, with the calls that ran and their outcomes, and in
// Refused the calls the guard refused. Allowed calls whose outcome was not
// given are left out: they did not run.
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
// the assistant's message as it came, then, when it used tools, one user
// message with a tool result block per call, in order. A call that ran is
// answered with its output; a refused call with the guard's feedback; an
// allowed call whose outcome was not given with a sentence saying it was not
// run (see [guard.Turn.Answer]). It returns nil for an output without a
// message.
func (t *Turn) Messages() []types.Message {
	if t.msg == nil {
		return nil
	}
	out := []types.Message{*t.msg}
	if len(t.calls) == 0 {
		return out
	}
	blocks := make([]types.ContentBlock, len(t.calls))
	for i := range t.calls {
		blocks[i] = t.result(i)
	}
	return append(out, types.Message{Role: types.ConversationRoleUser, Content: blocks})
}

// result returns the tool result block that answers call i.
func (t *Turn) result(i int) types.ContentBlock {
	c := t.calls[i]
	var text string
	if d := t.decisions[i]; !d.Allow {
		text = hook.RefusalText(d)
	} else if a, ok := t.turn.Answer(aws.ToString(c.ToolUseId)); ok {
		text = a
	} else {
		text = notRunText // a call without an ID can take no outcome
	}
	return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
		ToolUseId: c.ToolUseId,
		Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
	}}
}

// notRunText answers a call that did not run.
const notRunText = "That call was not run."
