// Package mcpgo puts a loopguard guard in front of the tools of an MCP
// server built with github.com/mark3labs/mcp-go.
//
// Add [Middleware] (one guard for every session), [Sessions.Middleware] (one
// guard per client session) or [Keyed.Middleware] (one run per key that you
// choose: the session ID, a header such as a run ID, or your own; kept in a
// [github.com/loopguard/loopguard/snapshot.Store] that replicas can share) as
// a tool handler middleware, with server.WithToolHandlerMiddleware or
// (*server.MCPServer).Use.
//
// Each tool call is first asked of [guard.Guard.Preflight]. A refused call is
// not run: the middleware answers it with mcp.NewToolResultError carrying the
// decision's model-facing feedback, so the model learns why and can change
// course. A call that runs is recorded with [guard.Guard.Check] as a step of
// its own: its name, its arguments and its outcome. A result with IsError
// set, or an error from the handler, counts as a failed call. A refused call
// never ran, so it is no call of a step: [guard.Guard.StartCall] records it
// as a step that holds only the refusal ([guard.Step.Refused]), so that a
// model that keeps asking for it is seen.
// A result that asks the client for more input (a multi-round-trip call) is
// not an outcome yet, and is not recorded either. A tool that panics is
// recorded as a failed call before the panic goes on to a recovery further
// out (server.WithRecovery given before the guard).
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
package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/guard"
)

// Middleware returns a tool handler middleware that guards every tool call
// with g, whichever session it comes from. A nil g lets every call through.
func Middleware(g *guard.Guard) server.ToolHandlerMiddleware {
	return middleware(func(context.Context) (*guard.Guard, error) { return g, nil })
}

// middleware guards tool calls with the guard that pick returns; a nil one
// lets the call through, an error answers the call with an error result the
// model can read (the call does not run).
func middleware(pick func(context.Context) (*guard.Guard, error)) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g, err := pick(ctx)
			if errors.Is(err, ErrNoKey) {
				return noKey(), nil
			}
			if err != nil {
				return nil, err
			}
			if g == nil {
				return next(ctx, req)
			}
			call := guard.ToolCall{Name: req.Params.Name, Args: arguments(req.Params)}
			r, d := g.StartCall(ctx, call)
			if !d.Allow {
				return Refusal(d), nil
			}
			return settle(ctx, call, func() (*mcp.CallToolResult, error) { return next(ctx, req) },
				func(result any, err error) { r.Finish(ctx, result, err) }, r.Abandon)
		}
	}
}

// errToolPanicked is the outcome recorded for a call whose tool panicked.
var errToolPanicked = errors.New("the tool panicked")

// settle runs an allowed call and settles its place with finish (its outcome)
// or abandon (no outcome yet). A tool that panics is finished as a failed
// call before the panic goes on to the recovery further out
// (server.WithRecovery before the guard, or the server's own), so that its
// place never stays open.
func settle(ctx context.Context, call guard.ToolCall, run func() (*mcp.CallToolResult, error), finish func(any, error), abandon func()) (res *mcp.CallToolResult, err error) {
	settled := false
	defer func() {
		if !settled {
			finish(nil, errToolPanicked)
		}
	}()
	res, err = run()
	settled = true
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller went away: the call did not finish.
		abandon()
	case awaitsInput(res, err):
		// The call waits for the client's input and will be made again:
		// this is not its outcome yet.
		abandon()
	default:
		recordOutcome(&call, res, err)
		finish(call.Result, call.Err)
	}
	return res, err
}

// noKeyText answers a call whose run could not be told.
const noKeyText = "That call was not run: the server could not tell which run it belongs to, so its loop guard could not check it. Calling it again will not help; go on without it or answer with what you have."

// noKey is the tool result that answers a call whose run could not be told:
// an error result the model can read, which never quotes the error.
func noKey() *mcp.CallToolResult { return mcp.NewToolResultError(noKeyText) }

// awaitsInput reports whether a handler's answer asks the client for input
// before the call can finish: a multi-round-trip result, or a URL
// elicitation.
func awaitsInput(res *mcp.CallToolResult, err error) bool {
	if err != nil {
		var v mcp.URLElicitationRequiredError
		var p *mcp.URLElicitationRequiredError
		return errors.As(err, &v) || errors.As(err, &p)
	}
	return res != nil && len(res.InputRequests) > 0
}

// Refusal returns the tool result that answers a call refused by d:
// mcp.NewToolResultError with d's feedback (or, when a custom Feedback option
// left it empty, a plain sentence saying the call was not run).
func Refusal(d guard.Decision) *mcp.CallToolResult {
	return mcp.NewToolResultError((&guard.RefusedError{Decision: d}).Error()) // the feedback, or guard's plain sentence
}

// arguments returns a call's arguments: the JSON text that came over the
// wire when there is one, else the decoded value (nil when absent).
func arguments(p mcp.CallToolParams) any {
	if len(p.RawArguments) > 0 {
		return json.RawMessage(p.RawArguments)
	}
	return p.Arguments
}

// toolResult is the part of a tool result that is its outcome, so that equal
// answers compare equal whatever their metadata.
type toolResult struct {
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
}

// recordOutcome sets the result or error of call from what the handler
// answered.
func recordOutcome(call *guard.ToolCall, res *mcp.CallToolResult, err error) {
	switch {
	case err != nil:
		call.Err = err
	case res == nil:
		// Nothing came back.
	case res.IsError:
		call.Err = resultError(res.Content)
	default:
		structured := res.StructuredContent
		if len(res.RawStructuredContent) > 0 {
			structured = json.RawMessage(res.RawStructuredContent)
		}
		call.Result = toolResult{Content: res.Content, StructuredContent: structured}
	}
}

// resultError turns the content of an error result into an error whose text
// is the result's text.
func resultError(content []mcp.Content) error {
	var parts []string
	for _, c := range content {
		switch t := c.(type) {
		case mcp.TextContent:
			parts = append(parts, t.Text)
		case *mcp.TextContent:
			if t != nil {
				parts = append(parts, t.Text)
			}
		}
	}
	if len(parts) == 0 {
		return errors.New("the tool reported an error")
	}
	return errors.New(strings.Join(parts, "\n"))
}
