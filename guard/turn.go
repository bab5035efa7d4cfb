package guard

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// A Turn records one step of a hand-written agent loop as it happens: each
// tool call is asked about before it runs ([Turn.Run]) and recorded after,
// with its result or error; [Turn.End] then checks the finished step. It
// replaces the bookkeeping every agent loop otherwise writes by hand.
//
// A Turn is safe for use by several goroutines, so the calls of one turn may
// run in parallel. Calls are recorded in the order they were started.
// Refused calls never run and are left out of the step, as they should be.
type Turn struct {
	g     *Guard
	mu    sync.Mutex
	calls []ToolCall // started calls that were allowed, in start order
	ended bool
}

// Begin starts a turn of the agent loop: the next step.
func (g *Guard) Begin() *Turn { return &Turn{g: g} }

// A RefusedError is returned by [Turn.Run] for a call that preflight
// refused. The call did not run.
type RefusedError struct {
	Decision Decision
}

// Error says which rule refused the call, and why.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("loopguard: call refused: %s (%s): %s", e.Decision.Reason, e.Decision.Code, e.Decision.Detail)
}

// ErrTurnEnded is returned by Run and End on a turn that has ended.
var ErrTurnEnded = errorString("loopguard: the turn has ended")

// Run asks the guard whether call may run now, as part of this turn (the
// turn's earlier calls included, as parallel calls of one step). If it may,
// Run calls fn, records the call with fn's result or error, and returns
// them. If it may not, fn is not called and Run returns a *RefusedError whose
// Decision.Feedback is the text to hand back to the model in place of the
// tool's result. If ctx is done before fn would start, fn is not called and
// Run returns ctx.Err() (nothing is recorded); fn itself receives ctx.
//
// call.Result and call.Err are ignored: they are what fn returns.
func (t *Turn) Run(ctx context.Context, call ToolCall, fn func(ctx context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	call.Result, call.Err = nil, nil
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return nil, ErrTurnEnded
	}
	d := t.g.PreflightContext(ctx, append(slices.Clone(t.calls), call)...)
	if !d.Allow {
		t.mu.Unlock()
		return nil, &RefusedError{Decision: d}
	}
	i := len(t.calls)
	t.calls = append(t.calls, call)
	t.mu.Unlock()

	result, err := runTool(ctx, fn)

	t.mu.Lock()
	t.calls[i].Result, t.calls[i].Err = result, err
	t.mu.Unlock()
	return result, err
}

// runTool calls fn, turning a panic into an error so that the turn stays
// consistent; the panic is then re-raised by nobody: the caller gets it as
// the call's error.
func runTool(ctx context.Context, fn func(context.Context) (any, error)) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("loopguard: tool panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// End finishes the turn: it records the step with the turn's calls (in the
// order they started) and s's text, finish reason, usage and input, and
// returns the guard's verdict. s.ToolCalls is ignored. Call End after every
// Run of the turn has returned; a turn ends once.
func (t *Turn) End(ctx context.Context, s Step) (Verdict, error) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return Verdict{}, ErrTurnEnded
	}
	t.ended = true
	s.ToolCalls = t.calls
	t.calls = nil
	t.mu.Unlock()
	return t.g.CheckContext(ctx, s), nil
}
