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

// ToolResult is the part of an MCP tool result that is its outcome, as the
// guard records it: its content and structured content, without the
// metadata and protocol bookkeeping that change from call to call, so that
// equal answers compare equal. C is the SDK's content type.
type ToolResult[C any] struct {
	Content           []C `json:"content"`
	StructuredContent any `json:"structuredContent,omitempty"`
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
