package guard

import (
	"context"
	"slices"
)

// A Running call is one that [Guard.StartCall] allowed and that has not
// finished yet. It holds its place so that calls started at the same moment
// see each other. Call Finish or Abandon exactly once.
type Running struct {
	g    *Guard
	call ToolCall
	done bool
}

// StartCall is for servers and middleware in which every tool call is a step
// of its own (an MCP server, say) and calls may run at the same time. It asks
// whether call may run now, judged together with the calls that StartCall
// allowed and that have not finished, as the parallel calls of one step: two
// identical calls made at once cannot both slip under a threshold. When the
// call is allowed, it holds its place until [Running.Finish] or
// [Running.Abandon]. When it is refused, the *Running is nil, the decision's
// Feedback is the text to answer with, and the refusal is recorded at once as
// a step that holds only the refused call ([Step.Refused]), in the same move
// as the decision, so that a model that keeps asking for a refused call is
// seen however many calls run at the same time. The observer, if any, is
// told of the decision and, for a refusal, of that step's verdict, after the
// guard's locks are released.
func (g *Guard) StartCall(ctx context.Context, call ToolCall) (*Running, Decision) {
	call.Result, call.Err = nil, nil
	g.runMu.Lock()
	d, step := g.preflight(append(g.runningCalls(), call), false)
	var r *Running
	var v Verdict
	var checked int
	if d.Allow {
		r = &Running{g: g, call: call}
		g.running = append(g.running, r)
	} else {
		d.CallIndex, d.CallID = 0, call.ID
		v, checked = g.check(Step{Refused: []ToolCall{call}})
	}
	g.runMu.Unlock()
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhasePreflight, Step: step, Verdict: d.Verdict()})
		if !d.Allow {
			g.notify(ctx, Event{Phase: PhaseCheck, Step: checked, Verdict: v})
		}
	}
	return r, d
}

// runningCalls returns the calls of the running calls, in start order.
func (g *Guard) runningCalls() []ToolCall {
	calls := make([]ToolCall, 0, len(g.running)+1)
	for _, r := range g.running {
		calls = append(calls, r.call)
	}
	return calls
}

// leave removes r from the running calls; it reports false if r had already
// left.
func (g *Guard) leave(r *Running) bool {
	i := slices.Index(g.running, r)
	if i < 0 || r.done {
		return false
	}
	r.done = true
	g.running = slices.Delete(g.running, i, i+1)
	return true
}

// Finish records the call, with its result or error, as a step of its own
// and returns the guard's verdict. It leaves the running calls and is
// recorded in one move, so that no other call sees it neither running nor
// recorded. A second Finish (or one after Abandon) returns the zero Verdict
// and records nothing.
func (r *Running) Finish(ctx context.Context, result any, err error) Verdict {
	g := r.g
	g.runMu.Lock()
	if !g.leave(r) {
		g.runMu.Unlock()
		return Verdict{}
	}
	call := r.call
	call.Result, call.Err = result, err
	v, step := g.check(Step{ToolCalls: []ToolCall{call}})
	g.runMu.Unlock()
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhaseCheck, Step: step, Verdict: v})
	}
	return v
}

// Abandon lets the call go without recording it: it did not finish (its
// caller went away), or it will be made again and this was not its outcome.
func (r *Running) Abandon() {
	r.g.runMu.Lock()
	r.g.leave(r)
	r.g.runMu.Unlock()
}
