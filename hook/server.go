package hook

import (
	"context"
	"errors"
	"strings"

	"github.com/loopguard/loopguard/guard"
)

// ErrNoKey is the error (wrapped) of a call whose run a server could not
// tell: no session, no header, no user. Such a call does not run; it is
// answered with [NoKeyText].
var ErrNoKey = errors.New("the call carries nothing to key its run by")

// Serve is the whole of a tool server's middleware for one call, whatever
// its SDK: g and err are what finding the call's guard gave (a guard for
// all, a session's, a key's run: [Keyed.Guard]); call is the call, run the
// next handler, outcome the SDK's reading of what run returned, and refuse
// makes the SDK's error result from a model-facing text.
//
// An err that wraps [ErrNoKey] is answered with refuse([NoKeyText]) and
// another err is returned as the request's error: in both cases run is not
// called. Then the call goes through [Call]: a refused call is answered with
// refuse([RefusalText]), an allowed one is run and recorded. A nil g (and
// nil err) lets the call through unguarded.
func Serve[R any](ctx context.Context, g *guard.Guard, err error, call guard.ToolCall, run func() (R, error), outcome func(R, error) Outcome, refuse func(text string) R) (R, error) {
	switch {
	case errors.Is(err, ErrNoKey):
		return refuse(NoKeyText), nil
	case err != nil:
		var zero R
		return zero, err
	}
	res, d, err := Call(ctx, g, call, run, outcome)
	if err == nil && !d.Allow {
		return refuse(RefusalText(d)), nil
	}
	return res, err
}

// A ToolResult is an MCP tool result as an SDK gives it, C being the SDK's
// content type: what [ToolOutcome] reads.
type ToolResult[C any] struct {
	// Content and StructuredContent are the result's outcome, as the
	// guard records it (metadata and the protocol's bookkeeping, which
	// change from call to call, are left out, so that equal answers
	// compare equal).
	Content           []C `json:"content"`
	StructuredContent any `json:"structuredContent,omitempty"`

	// IsError marks an error result, and Texts are then its texts.
	IsError bool     `json:"-"`
	Texts   []string `json:"-"`
	// AwaitsInput says that the result asks the client for input: the
	// call will be made again.
	AwaitsInput bool `json:"-"`
}

// ToolOutcome reads what an MCP tool call came to, for [Call]: err (a
// protocol error, a handler's error) is a failed call; a nil r, nothing; a
// result that awaits input, none yet ([Outcome.Again]); an error result, a
// failed call whose error is its texts ([ResultError]); else the result's
// content and structured content.
func ToolOutcome[C any](r *ToolResult[C], err error) Outcome {
	switch {
	case err != nil:
		return Outcome{Err: err}
	case r == nil:
		return Outcome{}
	case r.AwaitsInput:
		return Outcome{Again: true}
	case r.IsError:
		return Outcome{Err: ResultError(r.Texts)}
	}
	return Outcome{Result: ToolResult[C]{Content: r.Content, StructuredContent: r.StructuredContent}}
}

// ResultError is the failure of a tool result marked as an error: an error
// whose text is the result's texts, one a line, or a plain sentence when it
// has none.
func ResultError(texts []string) error {
	if len(texts) == 0 {
		return errors.New("the tool reported an error")
	}
	return errors.New(strings.Join(texts, "\n"))
}
