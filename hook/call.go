// Package hook is the glue that adapters share, written once and free of any
// SDK: one tool call of a tool server (an MCP server, a client's sending
// middleware) run through a guard, and the current turn of a framework whose
// hooks see the model's replies and the tools' calls one at a time.
//
// The adapters (adapters/mcp, adapters/mcpgo, adapters/eino, ...) are thin
// shims over it: they turn their SDK's requests into [guard.ToolCall] values
// and their results into an [Outcome]. Because every one of them works on a
// *guard.Guard, a guard whose run lives in a store (package snapshot) serves
// them all unchanged.
package hook

import (
	"context"
	"errors"

	"github.com/loopguard/loopguard/guard"
)

// An Outcome is what a tool call came to, as an SDK reports it.
type Outcome struct {
	// Result is the call's result, as the guard records it: the part of
	// the SDK's answer that is its outcome (leave out metadata that
	// changes from call to call).
	Result any
	// Err is the call's failure: a protocol error, or a result the SDK
	// marks as an error.
	Err error
	// Again says that this is no outcome yet: the call will be made again
	// (a server that asks the client for input first). It is not recorded.
	Again bool
}

// ErrToolPanicked is the failure recorded for a call whose tool panicked.
var ErrToolPanicked = errors.New("the tool panicked")

// Call runs one tool call through g, as a step of its own
// ([guard.Guard.StartCall]). A refused call is not run: Call returns the
// zero R, the decision (Allow false; its Feedback is the text to answer
// with, see [RefusalText]) and a nil error. An allowed call is run; outcome
// reads what run returned, and the call is recorded with that outcome, or
// forgotten when the caller went away (ctx ended and run failed) or when the
// outcome says Again. A run that panics is recorded as a failed call
// ([ErrToolPanicked]) before the panic goes on to the recovery further out,
// so that the call's place among the running ones never stays open.
//
// A nil g lets the call through unguarded. The error is the guard's (ctx
// ended before it could answer, see [guard.Guard.Check]) or run's own.
func Call[R any](ctx context.Context, g *guard.Guard, call guard.ToolCall, run func() (R, error), outcome func(R, error) Outcome) (R, guard.Decision, error) {
	if g == nil {
		res, err := run()
		return res, guard.Decision{Allow: true}, err
	}
	r, d, err := g.StartCall(ctx, call)
	if err != nil || !d.Allow {
		var zero R
		return zero, d, err
	}
	settled := false
	defer func() {
		if !settled {
			// The record must not wait on a caller that has gone.
			_, _ = r.Finish(context.WithoutCancel(ctx), nil, ErrToolPanicked)
		}
	}()
	res, err := run()
	settled = true
	o := outcome(res, err)
	switch {
	case ctx.Err() != nil && err != nil:
		// The caller went away: the call did not finish, so it is no
		// outcome.
		r.Abandon()
	case o.Again:
		r.Abandon()
	default:
		_, _ = r.Finish(context.WithoutCancel(ctx), o.Result, o.Err)
	}
	return res, d, err
}

// RefusalText is the model-facing text that answers a call refused by d: its
// feedback, or, when a custom Feedback option left it empty, a plain
// sentence saying that the call was not run.
func RefusalText(d guard.Decision) string {
	return (&guard.RefusedError{Decision: d}).Error()
}

// NoKeyText answers a call that a keyed server could not tell the run of
// (no session, no header, no user): the model can read it and go on.
const NoKeyText = "That call was not run: the server could not tell which run it belongs to, so its loop guard could not check it. Calling it again will not help; go on without it or answer with what you have."
