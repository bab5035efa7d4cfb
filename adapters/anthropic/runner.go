package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A Runner connects a guard to the beta tool runner: its decorated tools
// preflight each call before it runs and collect the outcomes, and
// [Runner.Check] records each message with the outcomes of its calls. Create
// it with [NewRunner]. Its methods, and its tools, are safe for concurrent
// use: the tool runner runs the tools of a turn in parallel.
//
// The tool runner runs the tools of a message when it is asked for the next
// one, so a message's step is complete only then. Check therefore records a
// message that asks for tools at the next Check (or at Check(nil)), and
// records at once a message that asks for none. A stop that comes from a
// turn's tool outcomes is reported one message late; the preflight of each
// call is never late.
//
// Each checked message is a [guard.Turn]: Check preflights its calls, and
// the decorated tools run them through the turn, which finds each call by
// its tool and arguments (the tool runner does not tell a tool its call's
// ID). A call that the message does not hold is judged then, as one more
// call of that message. When the runner executes a tool before the message
// that asked for it has been given to Check, the call is judged alone with
// [guard.Guard.StartCall], together with the calls still running, and
// recorded as a step of its own when it ends.
type Runner struct {
	g *guard.Guard

	mu    sync.Mutex
	names map[string]bool // the names of the decorated tools
	held  *heldTurn       // the message whose tools run next, if any
}

// heldTurn is a message whose tool calls have been preflighted and are
// waiting to run.
type heldTurn struct {
	turn *guard.Turn
	step guard.Step // the message's step, without its calls
}

// NewRunner returns a Runner that uses g, which must not be nil.
func NewRunner(g *guard.Guard) *Runner {
	return &Runner{g: g, names: make(map[string]bool)}
}

// Guard returns the runner's guard.
func (r *Runner) Guard() *guard.Guard { return r.g }

// Tools returns the tools decorated by [Runner.Tool], in order.
func (r *Runner) Tools(tools ...sdk.BetaTool) []sdk.BetaTool {
	out := make([]sdk.BetaTool, len(tools))
	for i, t := range tools {
		out[i] = r.Tool(t)
	}
	return out
}

// Tool returns t decorated: its Execute asks the guard first and returns a
// [*guard.RefusedError] without running t when the call is refused (its
// text, which the tool runner hands to the model, is the guard's feedback and
// never quotes the arguments), and records the outcome of t when it runs.
// Name, Description and InputSchema are t's.
func (r *Runner) Tool(t sdk.BetaTool) sdk.BetaTool {
	r.mu.Lock()
	r.names[t.Name()] = true
	r.mu.Unlock()
	return &guardedTool{BetaTool: t, r: r}
}

// guardedTool is a tool decorated by a Runner.
type guardedTool struct {
	sdk.BetaTool
	r *Runner
}

// Execute runs the call through the held message's turn, which took the
// guard's decision on it when the message was checked; without one, it
// judges the call alone with [guard.Guard.StartCall].
func (t *guardedTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	call := guard.ToolCall{Name: t.Name(), Args: rawArgs(input)}
	t.r.mu.Lock()
	h := t.r.held
	t.r.mu.Unlock()
	if h != nil {
		// The tool runner does not tell a tool which tool_use block it
		// answers, so the turn finds the call by tool and arguments.
		res, err := h.turn.Run(ctx, call, func(ctx context.Context) (any, error) {
			content, err := t.BetaTool.Execute(ctx, input)
			if content == nil {
				return nil, err // no result, rather than a nil slice
			}
			return content, err
		})
		if !errors.Is(err, guard.ErrTurnEnded) {
			content, _ := res.([]sdk.BetaToolResultBlockParamContentUnion)
			return content, err
		}
	}
	content, d, err := hook.Call(ctx, t.r.g, call, func() ([]sdk.BetaToolResultBlockParamContentUnion, error) {
		return t.BetaTool.Execute(ctx, input)
	}, func(content []sdk.BetaToolResultBlockParamContentUnion, err error) hook.Outcome {
		if content == nil {
			return hook.Outcome{Err: err} // no result, rather than a nil slice
		}
		return hook.Outcome{Result: content, Err: err}
	})
	if err == nil && !d.Allow {
		return nil, &guard.RefusedError{Decision: d}
	}
	return content, err
}

// Check records a message the tool runner returned, and returns the verdict.
//
// It first records the message given to the previous Check, if that one
// asked for tools: its text, finish reason and usage, with the calls that
// ran and their outcomes, and in [guard.Step.Refused] the calls the guard
// refused (calls to tools that were not decorated are left out). Then, if m
// asks for tools, Check preflights its calls to decorated tools in order, as
// parts of one step, and keeps m until the next Check; otherwise it records
// m at once. The verdict is the first stop of these records, or else the
// last verdict. The error is a [*guard.StopError] carrying it when it stops
// the run for a fault; a normal finish (the model answered) is not an error.
// ctx goes to the guard's observer.
//
// Call Check with a nil message after the runner has finished to record a
// message whose tools never ran (as when MaxIterations ends the run).
func (r *Runner) Check(ctx context.Context, m *sdk.BetaMessage) (guard.Verdict, error) {
	r.mu.Lock()
	h := r.held
	r.held = nil
	r.mu.Unlock()
	var v guard.Verdict
	if h != nil {
		v, _ = h.turn.End(ctx, h.step)
	}
	if m == nil {
		return v, v.Err()
	}
	step := StepFromBetaMessage(m)
	if m.StopReason != sdk.BetaStopReasonToolUse || len(step.ToolCalls) == 0 {
		mv, err := r.g.Check(ctx, step)
		if err != nil {
			return guard.Verdict{}, err
		}
		if !v.Stop {
			v = mv
		}
		return v, v.Err()
	}
	next := &heldTurn{turn: r.g.Begin()}
	r.mu.Lock()
	var guarded []guard.ToolCall
	for _, c := range step.ToolCalls {
		if r.names[c.Name] {
			guarded = append(guarded, c)
		}
	}
	r.mu.Unlock()
	if _, err := next.turn.Preflight(ctx, guarded...); err != nil {
		return v, err // ctx ended before the calls were decided
	}
	step.ToolCalls = nil
	next.step = step
	r.mu.Lock()
	r.held = next
	r.mu.Unlock()
	return v, v.Err()
}
