package anthropic

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"
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
// When the runner executes a tool before the message that asked for it has
// been given to Check, the call is judged alone, together with the calls
// still running, and recorded as a step of its own when it ends.
type Runner struct {
	g *guard.Guard

	mu      sync.Mutex
	names   map[string]bool  // the names of the decorated tools
	held    *heldTurn        // the message whose tools run next, if any
	running []guard.ToolCall // calls judged alone and still running
}

// heldTurn is a message whose tool calls have been preflighted and are
// waiting to run.
type heldTurn struct {
	step     guard.Step // calls without outcomes
	sums     []canonical.Sum
	guarded  []bool // the call goes to a decorated tool
	decision []guard.Decision
	taken    []bool // an Execute claimed the call
	done     []bool // the call ran and its outcome is in step
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
// [*RefusedError] without running t when the call is refused, and records
// the outcome of t when it runs. Name, Description and InputSchema are t's.
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

// Execute preflights the call, runs the tool when the call is allowed, and
// records its outcome.
func (t *guardedTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	call := guard.ToolCall{Name: t.Name(), Args: rawArgs(input)}
	r := t.r
	r.mu.Lock()
	turn, i := r.claim(call)
	var d guard.Decision
	if turn != nil {
		d = turn.decision[i]
	} else {
		d = r.g.Preflight(append(r.running[:len(r.running):len(r.running)], call)...)
		if d.Allow {
			r.running = append(r.running, call)
		}
	}
	r.mu.Unlock()
	if !d.Allow {
		return nil, &RefusedError{Decision: d}
	}

	content, err := t.BetaTool.Execute(ctx, input)
	if err != nil {
		call.Err = err
	} else {
		call.Result = content
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if turn != nil {
		turn.step.ToolCalls[i] = call
		turn.done[i] = true
		return content, err
	}
	r.dropRunning(call)
	r.g.Check(guard.Step{ToolCalls: []guard.ToolCall{call}})
	return content, err
}

// claim finds the first unclaimed call of the held turn that matches call
// and claims it. It returns a nil turn when there is none. r.mu is held.
func (r *Runner) claim(call guard.ToolCall) (*heldTurn, int) {
	h := r.held
	if h == nil {
		return nil, -1
	}
	sum := canonical.Hash(call.Args)
	for i, c := range h.step.ToolCalls {
		if h.guarded[i] && !h.taken[i] && c.Name == call.Name && h.sums[i] == sum {
			h.taken[i] = true
			return h, i
		}
	}
	return nil, -1
}

// dropRunning removes one call equal to call from the running calls. r.mu is
// held.
func (r *Runner) dropRunning(call guard.ToolCall) {
	sum := canonical.Hash(call.Args)
	for i, c := range r.running {
		if c.Name == call.Name && canonical.Hash(c.Args) == sum {
			r.running = append(r.running[:i], r.running[i+1:]...)
			return
		}
	}
}

// Check records a message the tool runner returned, and returns the verdict.
//
// It first records the message given to the previous Check, if that one
// asked for tools: its text, finish reason and usage, with the calls that
// ran and their outcomes (refused calls, and calls to tools that were not
// decorated, are left out). Then, if m asks for tools, Check preflights its
// calls in order, as parts of one step, and keeps m until the next Check;
// otherwise it records m at once. The verdict is the first stop of these
// records, or else the last verdict.
//
// Call Check with nil after the runner has finished to record a message
// whose tools never ran (as when MaxIterations ends the run).
func (r *Runner) Check(m *sdk.BetaMessage) guard.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v guard.Verdict
	if h := r.held; h != nil {
		r.held = nil
		step := h.step
		step.ToolCalls = nil
		for i, c := range h.step.ToolCalls {
			if h.done[i] {
				step.ToolCalls = append(step.ToolCalls, c)
			}
		}
		v = r.g.Check(step)
	}
	if m == nil {
		return v
	}
	step, uses := betaStep(m)
	if m.StopReason != sdk.BetaStopReasonToolUse || len(uses) == 0 {
		if mv := r.g.Check(step); !v.Stop {
			v = mv
		}
		return v
	}
	r.held = r.preflight(step)
	return v
}

// preflight decides each call of step in order: a call to a decorated tool
// is judged together with the allowed calls before it. Calls to other tools
// are not judged. r.mu is held.
func (r *Runner) preflight(step guard.Step) *heldTurn {
	n := len(step.ToolCalls)
	h := &heldTurn{step: step, sums: make([]canonical.Sum, n), guarded: make([]bool, n),
		decision: make([]guard.Decision, n), taken: make([]bool, n), done: make([]bool, n)}
	allowed := make([]guard.ToolCall, 0, n)
	for i, c := range step.ToolCalls {
		if !r.names[c.Name] {
			h.decision[i] = guard.Decision{Allow: true}
			continue
		}
		h.sums[i] = canonical.Hash(c.Args)
		h.guarded[i] = true
		d := r.g.Preflight(append(allowed, c)...)
		h.decision[i] = d
		if d.Allow {
			allowed = append(allowed, c)
		}
	}
	return h
}

// A RefusedError is what a decorated tool returns for a call the guard
// refused: the tool did not run. Its text is the decision's model-facing
// feedback, which the tool runner hands to the model.
type RefusedError struct {
	// Decision is the guard's refusal.
	Decision guard.Decision
}

// Error returns the decision's feedback, or a plain sentence when the
// decision has none.
func (e *RefusedError) Error() string {
	if e.Decision.Feedback == "" {
		return "That call was not run: loopguard refused it."
	}
	return e.Decision.Feedback
}
