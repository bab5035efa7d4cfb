package core

import (
	"context"
	"slices"
)

// A Running call is one that [Guard.StartCall] allowed and that has not
// finished yet. It holds its place so that calls started at the same moment
// see each other. Call Finish or Abandon exactly once.
type Running struct {
	g    *Guard
	ext  Started // the backend's running call, for a guard over a backend
	call ToolCall
	sum  callSum // of call, computed by StartCall and reused by Finish
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
// guard's locks are released. The call's arguments are hashed once, here:
// Finish records the call with that hash.
//
// When recording the refusal stops the run for a fault (the model keeps
// asking for a call that was refused: REPEATED_REFUSAL), the decision is
// that stop, with its reason, code and evidence, and feedback that says the
// call was not run and why the run should end: a model that keeps asking is
// not answered with the first refusal's words for ever.
//
// Once the run has stopped (see [Summary].FirstStop), StartCall refuses every
// call with that stop, and records nothing, until [Guard.Reset] or a step
// with new user input. The error is as for Check.
func (g *Guard) StartCall(ctx context.Context, call ToolCall) (*Running, Decision, error) {
	call.Result, call.Err = nil, nil
	if g.b != nil {
		st, d, _, err := g.b.StartCall(ctx, call)
		if err != nil {
			return nil, Decision{}, err
		}
		if st == nil {
			return nil, d, nil
		}
		return &Running{g: g, ext: st, call: call}, d, nil
	}
	r, d, step, v, checked := g.startCall(call)
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhasePreflight, Step: step, Verdict: d.Verdict(), CallID: call.ID, Tool: call.Name})
		if checked >= 0 {
			g.notify(ctx, Event{Phase: PhaseCheck, Step: checked, Verdict: v, CallID: call.ID, Tool: call.Name})
		}
	}
	if !d.Allow && IsFault(v) {
		// Recording the refusal stopped the run (a model that keeps
		// asking for a refused call): the answer is that stop, so that
		// it escalates instead of repeating the first refusal's words.
		d = v.Refusal(call.ID)
	}
	return r, d, nil
}

// StartCallIn is StartCall on a guard in memory, for backends: it returns
// the running call, the decision, the verdict of the refused step, and
// whether the refusal was recorded as a step (false when the call is
// allowed, or refused because the run had stopped). It tells no observer.
func StartCallIn(g *Guard, call ToolCall) (*Running, Decision, Verdict, bool) {
	call.Result, call.Err = nil, nil
	r, d, _, v, checked := g.startCall(call)
	if !d.Allow && IsFault(v) {
		d = v.Refusal(call.ID)
	}
	return r, d, v, checked >= 0
}

// startCall is StartCall with g.runMu held (released by a defer, so that a
// detector that panics leaves the guard usable). checked is the index of the
// step that recorded a refusal, or -1 when none was recorded.
func (g *Guard) startCall(call ToolCall) (r *Running, d Decision, step int, v Verdict, checked int) {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	// The running calls, then call, with their sums: only call's is not
	// known yet.
	b := g.getFacts()
	for _, r := range g.running {
		b.pre = append(b.pre, r.call)
		b.sums = append(b.sums, r.sum)
	}
	b.pre = append(b.pre, call)
	b.sums = append(b.sums, callSum{})
	b.sticky = true
	checked = -1
	d, step = g.preflightFacts(b, false)
	stopped := b.stopped
	sum := b.sums[len(b.sums)-1]
	g.putFacts(b)
	switch {
	case d.Allow:
		r = &Running{g: g, call: call, sum: sum}
		g.running = append(g.running, r)
	case stopped:
		d.CallIndex, d.CallID = 0, call.ID
	default:
		d.CallIndex, d.CallID = 0, call.ID
		v, checked = g.checkCall(call, sum, false)
	}
	return r, d, step, v, checked
}

// checkCall records a step of one call, which ran (with its result or error)
// or was refused, with the call's sum.
func (g *Guard) checkCall(call ToolCall, sum callSum, ran bool) (Verdict, int) {
	b := g.getFacts()
	defer g.putFacts(b)
	calls := append(g.stepCalls(b), call)
	if ran {
		b.cur.ToolCalls = calls
	} else {
		b.cur.Refused = calls
	}
	if g.opts.History == 0 {
		b.calls = calls
	}
	b.sums = append(b.sums, sum)
	return g.checkFacts(b)
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
func (r *Running) Finish(ctx context.Context, result any, err error) (Verdict, error) {
	g := r.g
	if r.ext != nil {
		return r.ext.Finish(ctx, result, err)
	}
	v, step, ok := r.finish(result, err)
	if !ok {
		return Verdict{}, nil
	}
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhaseCheck, Step: step, Verdict: v, CallID: r.call.ID, Tool: r.call.Name})
	}
	return v, nil
}

// FinishIn is Finish of a call that [StartCallIn] started, for backends: it
// reports whether the call was still running.
func FinishIn(r *Running, result any, err error) (Verdict, bool) {
	v, _, ok := r.finish(result, err)
	return v, ok
}

// Call returns the call as it was started.
func (r *Running) Call() ToolCall { return r.call }

// finish records the call with g.runMu held (released by a defer, so that a
// detector that panics leaves the guard usable); false if it had left.
func (r *Running) finish(result any, err error) (Verdict, int, bool) {
	g := r.g
	g.runMu.Lock()
	defer g.runMu.Unlock()
	if !g.leave(r) {
		return Verdict{}, 0, false
	}
	call := r.call
	call.Result, call.Err = result, err
	v, step := g.checkCall(call, r.sum, true)
	return v, step, true
}

// Abandon lets the call go without recording it: it did not finish (its
// caller went away), or it will be made again and this was not its outcome.
func (r *Running) Abandon() {
	if r.ext != nil {
		r.ext.Abandon()
		return
	}
	r.g.runMu.Lock()
	defer r.g.runMu.Unlock()
	r.g.leave(r)
}

// PreflightIn is Preflight on a guard in memory, for backends: it judges
// calls after the calls that StartCallIn started on g and that have not
// finished, and returns the decision (its CallIndex an index in calls) and
// the index of the step. It tells no observer.
func PreflightIn(g *Guard, calls []ToolCall) (Decision, int) {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	b := g.getFacts()
	defer g.putFacts(b)
	for _, r := range g.running {
		b.pre = append(b.pre, r.call)
		b.sums = append(b.sums, r.sum)
	}
	n := len(b.pre)
	b.pre = append(b.pre, calls...)
	d, step := g.preflightFacts(b, true)
	if !d.Allow {
		// The refused call is one of calls, or, when the running calls
		// alone trip a rule, the first of them.
		d.CallIndex, d.CallID = max(d.CallIndex-n, 0), ""
		if d.CallIndex < len(calls) {
			d.CallID = calls[d.CallIndex].ID
		}
	}
	return d, step
}

// CheckIn is Check on a guard in memory, for backends: it returns the
// verdict and the index of the step. It tells no observer.
func CheckIn(g *Guard, s Step) (Verdict, int) { return g.check(s) }

// MoveRunning moves the calls that StartCallIn started on from and that have
// not finished to to, after to's own: a backend that replaces its guard of a
// run by a newer one keeps the run's running calls. Their Finish and Abandon
// then act on to. The backend calls it while no Finish or Abandon of those
// calls runs (with the run locked).
func MoveRunning(from, to *Guard) {
	if from == to {
		return
	}
	from.runMu.Lock()
	moved := from.running
	from.running = nil
	from.runMu.Unlock()
	to.runMu.Lock()
	defer to.runMu.Unlock()
	for _, r := range moved {
		r.g = to
	}
	to.running = append(to.running, moved...)
}

// RunningIn returns how many calls that StartCallIn started on g have not
// finished.
func RunningIn(g *Guard) int {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	return len(g.running)
}
