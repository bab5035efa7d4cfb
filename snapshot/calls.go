package snapshot

import (
	"context"
	"slices"

	"github.com/loopguard/loopguard/guard"
)

// A Call is a tool call that [Runs.StartCall] allowed and that has not
// finished. Call Finish or Abandon exactly once.
type Call struct {
	r    *Runs
	key  string
	call guard.ToolCall
	err  error // what went wrong when StartCall allowed it
	done bool
}

// Err returns what went wrong when [Runs.StartCall] allowed the call (a
// *StoreError, a *StateError, ErrBacklogFull, or the Factory's error, with
// which FailOpen allows), or nil. The call was allowed as the policy says.
func (c *Call) Err() error { return c.err }

// StartCall is [guard.Guard.StartCall] for a run in the store, for servers in
// which every tool call is a step of its own (an MCP server): it asks whether
// call may run now, judged on the run's latest state together with the calls
// of this Runs on the same run that are still running. When it may, the
// *Call holds its place until Finish or Abandon. When it may not, the *Call
// is nil, the decision's Feedback is the answer to give, and the refusal is
// saved as a step that holds only the refused call ([guard.Step.Refused]),
// so that a model that keeps asking for it is seen; when that step stops the
// run for a fault (REPEATED_REFUSAL), the decision is that stop, as with
// guard.StartCall. A refusal that the policy gives because the store failed,
// or because the stored run cannot be used, is not a step.
//
// StartCall's error is not nil only when it returns no *Call: as with
// [Runs.Begin], `if err != nil { return err }` never leaves a call running.
// A call that the policy allows while the store is down (FailOpen) comes
// with a nil error, and [Call.Err] reports the store's. A refusal comes with
// the store's error when the store failed (the policy's refusal under
// FailClosed, or a rule's refusal that could not be saved).
//
// Calls running at the same moment in other processes are not seen: each
// process sees the calls it runs, and every call once it has finished.
// Calls of a looping agent come one after another, so they are always seen.
func (r *Runs) StartCall(ctx context.Context, key string, call guard.ToolCall) (*Call, guard.Decision, error) {
	call.Result, call.Err = nil, nil
	e := r.acquire(key)
	defer r.release(e)
	d, err := r.preflight(ctx, e, []guard.ToolCall{call})
	if !d.Allow {
		if err == nil {
			d.CallIndex, d.CallID = 0, call.ID
			var v guard.Verdict
			v, err = r.record(ctx, e, guard.Step{Refused: []guard.ToolCall{call}})
			if guard.IsFault(v) && v.Detector != DetectorName {
				// Recording the refusal stopped the run: the answer
				// escalates to that stop, as guard.StartCall's does.
				d = v.Refusal(call.ID)
			}
		}
		return nil, d, err
	}
	c := &Call{r: r, key: key, call: call, err: err}
	e.running = append(e.running, c)
	return c, d, nil
}

// Finish records the call, with its result or error, as a step of its own
// (see [Runs.Check]) and returns the verdict. It leaves the running calls and
// is recorded under one lock, so that no call of this Runs sees it neither
// running nor recorded. A second Finish, or one after Abandon, records
// nothing and returns the zero Verdict.
func (c *Call) Finish(ctx context.Context, result any, err error) (guard.Verdict, error) {
	e := c.r.acquire(c.key)
	defer c.r.release(e)
	if !e.leave(c) {
		return guard.Verdict{}, nil
	}
	call := c.call
	call.Result, call.Err = result, err
	return c.r.record(ctx, e, guard.Step{ToolCalls: []guard.ToolCall{call}})
}

// Abandon lets the call go without recording it.
func (c *Call) Abandon() {
	e := c.r.acquire(c.key)
	defer c.r.release(e)
	e.leave(c)
}

// leave removes c from the running calls; false if it had left.
func (e *entry) leave(c *Call) bool {
	i := slices.Index(e.running, c)
	if i < 0 || c.done {
		return false
	}
	c.done = true
	e.running = slices.Delete(e.running, i, i+1)
	return true
}

// runningCalls returns the calls of the running calls, in start order.
func (e *entry) runningCalls() []guard.ToolCall {
	calls := make([]guard.ToolCall, 0, len(e.running)+1)
	for _, c := range e.running {
		calls = append(calls, c.call)
	}
	return calls
}
