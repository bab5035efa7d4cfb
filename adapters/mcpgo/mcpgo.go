// Package mcpgo puts a loopguard guard in front of the tools of an MCP
// server built with github.com/mark3labs/mcp-go. It is a thin shim over
// package [hook], which holds the middleware for every SDK: this package
// only turns mcp-go's requests into [guard.ToolCall] values and its results
// into outcomes, and keys calls by what mcp-go tells of them.
//
// Add [Middleware] (one guard for every session), [Sessions.Middleware] (one
// guard per client session) or [Keyed.Middleware] (one run per key that you
// choose: the session ID, a header such as a run ID, or your own; kept in a
// [github.com/loopguard/loopguard/snapshot.Store] that replicas can share) as
// a tool handler middleware, with server.WithToolHandlerMiddleware or
// (*server.MCPServer).Use.
//
// Each tool call goes through [guard.Guard.StartCall] ([hook.Call]). A
// refused call is not run: the middleware answers it with
// mcp.NewToolResultError carrying the decision's model-facing feedback, so
// the model learns why and can change course. A call that runs is recorded
// as a step of its own: its name, its arguments and its outcome. A result
// with IsError set, or an error from the handler, counts as a failed call.
// A refused call never ran, so it is no call of a step: StartCall records it
// as a step that holds only the refusal ([guard.Step.Refused]), so that a
// model that keeps asking for it is seen. A result that asks the client for
// more input (a multi-round-trip call, a URL elicitation) is not an outcome
// yet, and is not recorded either. A tool that panics is recorded as a
// failed call before the panic goes on to a recovery further out
// (server.WithRecovery given before the guard).
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
package mcpgo

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// Middleware returns a tool handler middleware that guards every tool call
// with g, whichever session it comes from. A nil g lets every call through.
func Middleware(g *guard.Guard) server.ToolHandlerMiddleware {
	return middleware(func(context.Context, mcp.CallToolRequest) (*guard.Guard, error) { return g, nil })
}

// middleware guards tool calls with the guard that pick returns
// ([hook.Serve]).
func middleware(pick func(context.Context, mcp.CallToolRequest) (*guard.Guard, error)) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g, err := pick(ctx, req)
			call := guard.ToolCall{Name: req.Params.Name, Args: arguments(req.Params)}
			return hook.Serve(ctx, g, err, call, func() (*mcp.CallToolResult, error) { return next(ctx, req) }, outcome, mcp.NewToolResultError)
		}
	}
}

// Refusal returns the tool result that answers a call refused by d:
// mcp.NewToolResultError with d's feedback ([hook.RefusalText]).
func Refusal(d guard.Decision) *mcp.CallToolResult {
	return mcp.NewToolResultError(hook.RefusalText(d))
}

// outcome reads what a handler answered ([hook.ToolOutcome]). An answer
// that asks the client for input before the call can finish (a
// multi-round-trip result, a URL elicitation) is none yet: the call will be
// made again.
func outcome(res *mcp.CallToolResult, err error) hook.Outcome {
	var v mcp.URLElicitationRequiredError
	var p *mcp.URLElicitationRequiredError
	if err != nil && (errors.As(err, &v) || errors.As(err, &p)) {
		return hook.Outcome{Again: true}
	}
	if res == nil {
		return hook.ToolOutcome[mcp.Content](nil, err)
	}
	tr := &hook.ToolResult[mcp.Content]{Content: res.Content, StructuredContent: res.StructuredContent,
		IsError: res.IsError, AwaitsInput: len(res.InputRequests) > 0}
	if len(res.RawStructuredContent) > 0 {
		tr.StructuredContent = json.RawMessage(res.RawStructuredContent)
	}
	if res.IsError {
		tr.Texts = texts(res.Content)
	}
	return hook.ToolOutcome(tr, err)
}

// texts returns the texts of a result's content.
func texts(content []mcp.Content) []string {
	var out []string
	for _, c := range content {
		switch t := c.(type) {
		case mcp.TextContent:
			out = append(out, t.Text)
		case *mcp.TextContent:
			if t != nil {
				out = append(out, t.Text)
			}
		}
	}
	return out
}

// arguments returns a call's arguments: the JSON text that came over the
// wire when there is one, else the decoded value (nil when absent).
func arguments(p mcp.CallToolParams) any {
	if len(p.RawArguments) > 0 {
		return json.RawMessage(p.RawArguments)
	}
	return p.Arguments
}
