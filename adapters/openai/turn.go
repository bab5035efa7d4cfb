package openai

import (
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// notRunText answers an allowed call whose outcome was never given, so that
// every call of a turn has an answer (the API refuses a request that leaves a
// tool call unanswered).
const notRunText = "That call was not run."

// fallbackFeedback is the refusal text when a decision carries none.
const fallbackFeedback = "That call was not run: loopguard refused it."

// turn is the provider-neutral part of [Turn] and [ResponseTurn]: the calls
// of one model turn, the guard's decision on each, and the outcomes of those
// that ran. Its methods are safe for concurrent use.
type turn struct {
	step guard.Step // the model's step, calls without outcomes

	mu    sync.Mutex
	calls []turnCall // parallel to step.ToolCalls
}

// turnCall is the state of one call of a turn.
type turnCall struct {
	id       string
	decision guard.Decision
	done     bool // an outcome was given
	output   string
	err      error
}

// preflightTurn decides each call of step in order, as parts of one step: a
// call is judged together with the allowed calls before it, so that parallel
// calls see each other and a refused call does not count against the ones
// after it.
func preflightTurn(g *guard.Guard, step guard.Step, ids []string) *turn {
	t := &turn{step: step, calls: make([]turnCall, len(step.ToolCalls))}
	allowed := make([]guard.ToolCall, 0, len(step.ToolCalls))
	for i, c := range step.ToolCalls {
		d := g.Preflight(append(allowed, c)...)
		t.calls[i] = turnCall{id: ids[i], decision: d}
		if d.Allow {
			allowed = append(allowed, c)
		}
	}
	return t
}

// index returns the index of the call with this ID, or -1.
func (t *turn) index(id string) int {
	for i := range t.calls {
		if t.calls[i].id == id {
			return i
		}
	}
	return -1
}

// setResult records the outcome of an allowed call. It reports whether id
// names an allowed call of the turn.
func (t *turn) setResult(id, output string, err error) bool {
	i := t.index(id)
	if i < 0 || !t.calls[i].decision.Allow {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls[i].done, t.calls[i].output, t.calls[i].err = true, output, err
	return true
}

// decision returns the decision on the call with this ID, and whether the
// turn has such a call.
func (t *turn) decision(id string) (guard.Decision, bool) {
	i := t.index(id)
	if i < 0 {
		return guard.Decision{}, false
	}
	return t.calls[i].decision, true
}

// recorded returns the step to pass to Check: the model's step whose calls
// are the calls that ran, with their outcomes. Refused calls, and allowed
// calls whose outcome was not given, are left out: they did not run.
func (t *turn) recorded() guard.Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.step
	s.ToolCalls = nil
	for i, c := range t.step.ToolCalls {
		tc := t.calls[i]
		if !tc.decision.Allow || !tc.done {
			continue
		}
		if tc.err != nil {
			c.Err = tc.err
		} else {
			c.Result = tc.output
		}
		s.ToolCalls = append(s.ToolCalls, c)
	}
	return s
}

// answer returns the text that answers call i: its output (or its error's
// text), the refusal's feedback, or a sentence saying it was not run.
func (t *turn) answer(i int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.calls[i]
	switch {
	case !tc.decision.Allow:
		return refusalText(tc.decision)
	case !tc.done:
		return notRunText
	case tc.err != nil && tc.output == "":
		return "Error: " + tc.err.Error()
	default:
		return tc.output
	}
}

// refusalText returns the feedback of a refusal.
func refusalText(d guard.Decision) string {
	if d.Feedback == "" {
		return fallbackFeedback
	}
	return d.Feedback
}
