// Package mcp puts a loopguard guard in front of the tools of an MCP server
// or client built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp).
//
// On a server, add [Middleware] (one guard for every session),
// [Sessions.Middleware] (one guard per client session) or [Keyed.Middleware]
// (one run per key that you choose: the session ID, a header such as a run
// ID, the authenticated user; kept in a [github.com/loopguard/loopguard/snapshot.Store] that replicas can
// share) with mcp.Server.AddReceivingMiddleware. On a client, add [ClientMiddleware]
// with mcp.Client.AddSendingMiddleware. Only tools/call requests are
// guarded; every other method passes through untouched.
//
// Each tools/call is first asked of [guard.Guard.Preflight]. A refused call
// is not run: the middleware answers it with an error result
// (CallToolResult.IsError) whose only content is the decision's model-facing
// feedback, so the model learns why and can change course. A call that runs
// is recorded with [guard.Guard.Check] as a step of its own: its name, its
// arguments and its outcome. A result with IsError set, or a protocol error,
// counts as a failed call. A refused call never ran, so it is no call of a
// step: [guard.Guard.StartCall] records it as a step that holds only the
// refusal ([guard.Step.Refused]), so that a model that keeps asking for it is
// seen.
//
// The verdict of that Check is not acted on here: a server cannot end its
// client's loop. Call [guard.Guard.Summary] for the last verdict, or run the
// same guard in the agent's own loop.
//
// Calls that run at the same moment see each other: each is preflighted
// together with the calls of the same guard still running, so of three
// identical calls made at once, the third is refused as it would be one after
// the other. A guard should be used by one middleware only (and by your own
// code only to read it): calls it records elsewhere are not seen running.
//
// The package name matches the SDK's; import one of them under another name:
//
//	import lgmcp "github.com/loopguard/loopguard/adapters/mcp"
package mcp

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/guard"
)

// methodCallTool is the MCP method that calls a tool.
const methodCallTool = "tools/call"

// Middleware returns a receiving middleware for an mcp.Server that guards
// every tools/call with g, whichever session it comes from. A nil g lets
// every call through.
func Middleware(g *guard.Guard) sdk.Middleware {
	return serverMiddleware(func(context.Context, *sdk.ServerSession) (*guard.Guard, error) {
		return g, nil
	})
}

// serverMiddleware guards tools/call with the guard that pick returns; a nil
// one lets the call through, an error fails the request.
func serverMiddleware(pick func(context.Context, *sdk.ServerSession) (*guard.Guard, error)) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			params, ok := req.GetParams().(*sdk.CallToolParamsRaw)
			if method != methodCallTool || !ok || params == nil {
				return next(ctx, method, req)
			}
			ss, _ := req.GetSession().(*sdk.ServerSession)
			g, err := pick(ctx, ss)
			if err != nil {
				return nil, err
			}
			if g == nil {
				return next(ctx, method, req)
			}
			call := guard.ToolCall{Name: params.Name, Args: rawArgs(params.Arguments)}
			return guarded(ctx, g, call, func() (sdk.Result, error) { return next(ctx, method, req) })
		}
	}
}

// ClientMiddleware returns a sending middleware for an mcp.Client that
// guards the tools/call requests the client sends with g. A refused call is
// never sent: the caller of ClientSession.CallTool gets the error result at
// once. A nil g lets every call through.
func ClientMiddleware(g *guard.Guard) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			params, ok := req.GetParams().(*sdk.CallToolParams)
			if g == nil || method != methodCallTool || !ok || params == nil {
				return next(ctx, method, req)
			}
			call := guard.ToolCall{Name: params.Name, Args: clientArgs(params.Arguments)}
			return guarded(ctx, g, call, func() (sdk.Result, error) { return next(ctx, method, req) })
		}
	}
}

// guarded preflights call, runs it when allowed and records its outcome.
func guarded(ctx context.Context, g *guard.Guard, call guard.ToolCall, run func() (sdk.Result, error)) (sdk.Result, error) {
	r, d := g.StartCall(ctx, call)
	if !d.Allow {
		return Refusal(d), nil
	}
	return settle(ctx, call, run,
		func(result any, err error) { r.Finish(ctx, result, err) }, r.Abandon)
}

// errToolPanicked is the outcome recorded for a call whose tool panicked.
var errToolPanicked = errors.New("the tool panicked")

// settle runs an allowed call and settles its place with finish (its outcome)
// or abandon (no outcome yet). A tool that panics is finished as a failed
// call before the panic goes on to the recovery further out (the SDK's, or
// the server's own), so that its place never stays open.
func settle(ctx context.Context, call guard.ToolCall, run func() (sdk.Result, error), finish func(any, error), abandon func()) (res sdk.Result, err error) {
	settled := false
	defer func() {
		if !settled {
			finish(nil, errToolPanicked)
		}
	}()
	res, err = run()
	settled = true
	ctres, _ := res.(*sdk.CallToolResult)
	switch {
	case ctx.Err() != nil && err != nil:
		// The caller went away: the call did not finish, so it is no
		// outcome.
		abandon()
	case err == nil && ctres != nil && len(ctres.InputRequests) > 0:
		// The server asks the client for input and the call will be
		// made again: this is not its outcome yet.
		abandon()
	default:
		recordOutcome(&call, ctres, err)
		finish(call.Result, call.Err)
	}
	return res, err
}

// Refusal returns the tool result that answers a call refused by d: an error
// result whose only content is d's feedback (or, when a custom Feedback
// option left it empty, a plain sentence saying the call was not run).
func Refusal(d guard.Decision) *sdk.CallToolResult {
	text := (&guard.RefusedError{Decision: d}).Error() // the feedback, or guard's plain sentence
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// toolResult is the part of a tool result that is its outcome. Meta and the
// protocol's bookkeeping are left out, so that equal answers compare equal.
type toolResult struct {
	Content           []sdk.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
}

// recordOutcome sets the result or error of call from what the tool
// answered.
func recordOutcome(call *guard.ToolCall, res *sdk.CallToolResult, err error) {
	switch {
	case err != nil:
		call.Err = err
	case res == nil:
		// A nil result with a nil error: nothing came back.
	case res.IsError:
		call.Err = resultError(res.Content)
	default:
		call.Result = toolResult{Content: res.Content, StructuredContent: res.StructuredContent}
	}
}

// resultError turns the content of an error result into an error whose text
// is the result's text.
func resultError(content []sdk.Content) error {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*sdk.TextContent); ok && t != nil {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return errors.New("the tool reported an error")
	}
	return errors.New(strings.Join(parts, "\n"))
}
