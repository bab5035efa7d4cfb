// Package mcp puts a loopguard guard in front of the tools of an MCP server
// or client built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp). It is a thin shim over
// package [hook], which holds the middleware for every SDK: this package
// only turns the SDK's requests into [guard.ToolCall] values and its results
// into outcomes, and keys calls by what the SDK tells of them.
//
// On a server, add [Middleware] (one guard for every session),
// [Sessions.Middleware] (one guard per client session) or [Keyed.Middleware]
// (one run per key that you choose: the session ID, a header such as a run
// ID, the authenticated user; kept in a
// [github.com/loopguard/loopguard/snapshot.Store] that replicas can share)
// with mcp.Server.AddReceivingMiddleware. On a client, add
// [ClientMiddleware] with mcp.Client.AddSendingMiddleware. Only tools/call
// requests are guarded; every other method passes through untouched.
//
// Each tools/call goes through [guard.Guard.StartCall] ([hook.Call]). A
// refused call is not run: the middleware answers it with an error result
// (CallToolResult.IsError) whose only content is the decision's model-facing
// feedback, so the model learns why and can change course. A call that runs
// is recorded as a step of its own: its name, its arguments and its
// outcome. A result with IsError set, or a protocol error, counts as a
// failed call; a tool that panics is recorded as a failed call before the
// panic goes on to a recovery further out. A refused call never ran, so it
// is no call of a step: StartCall records it as a step that holds only the
// refusal ([guard.Step.Refused]), so that a model that keeps asking for it
// is seen.
//
// A server cannot end its client's loop, so it refuses and records. Once a
// run has stopped for a fault (a loop, a budget), every later call of that
// run is refused with that stop until the run is reset
// ([guard.Guard.Reset]) or a new segment begins (a step with user input);
// [guard.Guard.Summary]'s FirstStop says why it stopped.
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
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// methodCallTool is the MCP method that calls a tool.
const methodCallTool = "tools/call"

// Middleware returns a receiving middleware for an mcp.Server that guards
// every tools/call with g, whichever session it comes from. A nil g lets
// every call through.
func Middleware(g *guard.Guard) sdk.Middleware {
	return serverMiddleware(func(context.Context, *sdk.CallToolRequest) (*guard.Guard, error) {
		return g, nil
	})
}

// serverMiddleware guards tools/call with the guard that pick returns
// ([hook.Serve]).
func serverMiddleware(pick func(context.Context, *sdk.CallToolRequest) (*guard.Guard, error)) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ctreq, ok := req.(*sdk.CallToolRequest)
			if method != methodCallTool || !ok || ctreq.Params == nil {
				return next(ctx, method, req)
			}
			g, err := pick(ctx, ctreq)
			call := guard.ToolCall{Name: ctreq.Params.Name, Args: rawArgs(ctreq.Params.Arguments)}
			return hook.Serve(ctx, g, err, call, func() (sdk.Result, error) { return next(ctx, method, req) }, outcome, errorResult)
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
			return hook.Serve(ctx, g, nil, call, func() (sdk.Result, error) { return next(ctx, method, req) }, outcome, errorResult)
		}
	}
}

// Refusal returns the tool result that answers a call refused by d: an error
// result whose only content is d's feedback ([hook.RefusalText]).
func Refusal(d guard.Decision) *sdk.CallToolResult {
	return errorResult(hook.RefusalText(d)).(*sdk.CallToolResult)
}

// errorResult is an error result whose only content is text.
func errorResult(text string) sdk.Result {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// outcome reads what a tool call came to ([hook.ToolOutcome]). A result
// that asks the client for input is none yet: the call will be made again.
func outcome(res sdk.Result, err error) hook.Outcome {
	r, _ := res.(*sdk.CallToolResult)
	if r == nil {
		return hook.ToolOutcome[sdk.Content](nil, err)
	}
	tr := &hook.ToolResult[sdk.Content]{Content: r.Content, StructuredContent: r.StructuredContent,
		IsError: r.IsError, AwaitsInput: len(r.InputRequests) > 0}
	if r.IsError {
		for _, c := range r.Content {
			if t, ok := c.(*sdk.TextContent); ok && t != nil {
				tr.Texts = append(tr.Texts, t.Text)
			}
		}
	}
	return hook.ToolOutcome(tr, err)
}

// rawArgs returns the arguments of a tools/call as JSON text, or nil when
// there are none.
func rawArgs(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// clientArgs returns the arguments a client sends. They are compared by
// their JSON encoding, as the server will see them.
func clientArgs(v any) any {
	if raw, ok := v.(json.RawMessage); ok {
		return rawArgs(raw)
	}
	return v
}
