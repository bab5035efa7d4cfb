// Package gemini connects a loopguard guard to an agent loop written with
// google.golang.org/genai, the Go SDK of the Gemini API and of Vertex AI.
//
// The SDK has no tool runner for generateContent: you write the loop, and
// this package gives it the pieces, as adapters/openai does for OpenAI.
// [StepFromResponse] turns a response into a [guard.Step]. [Preflight] asks
// the guard about the function calls of a response before any of them runs
// and returns a [Turn]: the calls that may run, a function response with the
// model-facing feedback for each refused one, and, once you have given it
// the outcomes, the step to record ([Turn.End]) and the contents of the next
// request. It is built on [guard.Turn].
//
//	for {
//		resp, err := client.Models.GenerateContent(ctx, model, contents, config)
//		if err != nil {
//			return err
//		}
//		turn := lggemini.Preflight(ctx, g, resp)
//		for _, call := range turn.Allowed() {
//			out, err := runTool(ctx, call.Name, call.Args)
//			turn.SetResult(call.ID, out, err)
//		}
//		v, err := turn.End(ctx)
//		if err != nil {
//			return err // the guard stopped the run: a *guard.StopError
//		}
//		if v.Stop {
//			return nil // the model answered: a normal finish is not an error
//		}
//		contents = append(contents, turn.Contents()...)
//	}
//
// A refused call never runs. The model is answered with a function response
// whose "error" is the guard's feedback, which names the tool and never
// quotes the arguments, and the call is recorded in the step's
// [guard.Step.Refused], not among its calls, so that a model that keeps
// asking for it is seen.
//
// The Gemini API gives function calls no IDs (Vertex AI may). The turn names
// a call by its ID when it has one, and otherwise by its place in the reply:
// "call_1" for the first call, "call_2" for the second, and so on. The calls
// that [Turn.Allowed] returns are copies that carry that name in their ID;
// the contents sent back are the model's own, unchanged, and each function
// response carries the ID the model gave (none when it gave none), the
// call's name, and comes in the calls' order, as the API matches them.
//
// Finish reasons are given to the guard as the SDK's [genai.FinishReason]
// spells them ("STOP", "MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL",
// ...), which the guard normalises. Gemini reports STOP on a turn that calls
// functions, as on one that answers: the reason is passed on as it is, and
// the guard's finish rule by default lets a step with calls go on (see
// package detector/finish, Options.StopWithToolCalls: set to Stop, it would
// end every such run at its first call).
//
// The package name is not the SDK's (genai), so no renaming is needed;
// the examples import it as lggemini for symmetry with the other adapters.
package gemini

import (
	"context"
	"sync"

	"google.golang.org/genai"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// StepFromResponse returns the step of a response's first candidate: its
// text (the text parts that are not thoughts, joined), its function calls
// with their IDs as the model gave them, their arguments and no outcome,
// its finish reason as the SDK spells it, and the response's token counts:
// input tokens are the prompt's and the tool-use prompt's, output tokens the
// candidates' and the thoughts', and the total is the response's. A nil
// response, or one without candidates, gives a step with its usage alone.
func StepFromResponse(r *genai.GenerateContentResponse) guard.Step {
	if r == nil {
		return guard.Step{}
	}
	var step guard.Step
	if u := r.UsageMetadata; u != nil {
		step.Usage = guard.Usage{
			InputTokens:  int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
			OutputTokens: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			TotalTokens:  int64(u.TotalTokenCount),
		}
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return step
	}
	c := r.Candidates[0]
	step.FinishReason = string(c.FinishReason)
	if c.Content == nil {
		return step
	}
	for _, p := range c.Content.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			var args any
			if fc.Args != nil {
				args = fc.Args
			}
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: fc.ID, Name: fc.Name, Args: args})
		case p.Text != "" && !p.Thought:
			step.Text += p.Text
		}
	}
	return step
}

// A Turn is the function calls of one response on their way through the
// guard: the guard's decision on each, and the outcome of each call that
// ran. Create it with [Preflight]. It is a [guard.Turn] keyed by the calls'
// IDs (see the package documentation for calls without one), with the SDK's
// types around it. Its methods are safe for concurrent use, so allowed calls
// may run in parallel and report their outcomes as they end.
type Turn struct {
	turn      *guard.Turn
	content   *genai.Content        // the candidate's content, as the model gave it
	calls     []*genai.FunctionCall // the model's calls, in order
	ids       []string              // the name of each call in the turn
	decisions []guard.Decision      // one per call
	step      guard.Step            // the response's step, without its calls

	mu     sync.Mutex
	failed map[string]bool // the calls whose outcome is an error
}

// Preflight asks g about the function calls of the response's first
// candidate before any of them runs. The calls are judged in order as parts
// of one step: each with the allowed calls before it, so that parallel calls
// see each other. ctx goes to the guard's observer. Nothing is recorded yet:
// give the outcomes to the returned Turn, then call [Turn.End]. g must not
// be nil.
func Preflight(ctx context.Context, g *guard.Guard, r *genai.GenerateContentResponse) *Turn {
	step := StepFromResponse(r)
	t := &Turn{turn: g.Begin(), failed: map[string]bool{}}
	if r != nil && len(r.Candidates) > 0 && r.Candidates[0] != nil && r.Candidates[0].Content != nil {
		t.content = r.Candidates[0].Content
		for _, p := range t.content.Parts {
			if p != nil && p.FunctionCall != nil {
				t.calls = append(t.calls, p.FunctionCall)
			}
		}
	}
	t.ids = hook.CallIDs(step.ToolCalls)
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
func (t *Turn) Allowed() []*genai.FunctionCall {
	var out []*genai.FunctionCall
	for i, c := range t.calls {
		if t.decisions[i].Allow {
			cp := *c
			cp.ID = t.ids[i]
			out = append(out, &cp)
		}
	}
	return out
}

// Refusals returns, for each refused call in order, a function response
// part that answers it: its "error" is the decision's model-facing feedback.
func (t *Turn) Refusals() []*genai.Part {
	var out []*genai.Part
	for i := range t.calls {
		if !t.decisions[i].Allow {
			out = append(out, t.part(i))
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
// model will see (the function response's "output"), and a non-nil err marks
// the call as failed (the model sees the response's "error": output when it
// is not empty, else err's text). callID is the call's ID in the turn, as
// [Turn.Allowed] gives it. It reports whether callID names an allowed call
// of a turn that has not ended; the outcome of any other call is ignored. A
// later SetResult for the same call replaces the earlier one.
func (t *Turn) SetResult(callID, output string, err error) bool {
	var result any = output
	if err != nil && output == "" {
		result = nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.turn.SetResult(callID, result, err) {
		return false
	}
	t.failed[callID] = err != nil
	return true
}

// Step returns the step that [Turn.End] records: the response's text, finish
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
// Contents still answers after End.
func (t *Turn) End(ctx context.Context) (guard.Verdict, error) {
	return t.turn.End(ctx, t.step)
}

// Contents returns what to append to the conversation for the next request:
// the model's content as it came, then, when it made calls, one user
// content with a function response part per call, in order. A call that ran
// is answered with its "output" (or its "error" if it failed); a refused
// call with the guard's feedback as its "error"; an allowed call whose
// outcome was not given with an "error" saying it was not run (see
// [guard.Turn.Answer]). It returns nil for a response without a candidate's
// content.
func (t *Turn) Contents() []*genai.Content {
	if t.content == nil {
		return nil
	}
	out := []*genai.Content{t.content}
	if len(t.calls) == 0 {
		return out
	}
	parts := make([]*genai.Part, len(t.calls))
	for i := range t.calls {
		parts[i] = t.part(i)
	}
	return append(out, genai.NewContentFromParts(parts, genai.RoleUser))
}

// part returns the function response part that answers call i.
func (t *Turn) part(i int) *genai.Part {
	c := t.calls[i]
	key := "error"
	var text string
	if d := t.decisions[i]; !d.Allow {
		text = hook.RefusalText(d)
	} else {
		t.mu.Lock()
		failed, ran := t.failed[t.ids[i]]
		t.mu.Unlock()
		text, _ = t.turn.Answer(t.ids[i])
		if ran && !failed {
			key = "output"
		}
	}
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{
		ID:       c.ID,
		Name:     c.Name,
		Response: map[string]any{key: text},
	}}
}
