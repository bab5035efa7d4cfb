package mcpgo

import (
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// tracker runs the calls of one guard: it preflights each call together with
// the calls of that guard still running, so that calls made at the same
// moment see each other, and records each call when it ends.
type tracker struct {
	g *guard.Guard

	mu      sync.Mutex
	next    uint64
	running []runningCall
}

// runningCall is a call that was allowed and has not ended.
type runningCall struct {
	id   uint64
	call guard.ToolCall
}

// begin preflights call with the running calls before it. When the call is
// allowed it is added to the running calls; end must then be called with the
// returned id.
func (t *tracker) begin(call guard.ToolCall) (guard.Decision, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls := make([]guard.ToolCall, 0, len(t.running)+1)
	for _, r := range t.running {
		calls = append(calls, r.call)
	}
	d := t.g.Preflight(append(calls, call)...)
	if !d.Allow {
		return d, 0
	}
	t.next++
	t.running = append(t.running, runningCall{t.next, call})
	return d, t.next
}

// end removes the call from the running calls and, when record is set,
// records it as a step of its own, in one move so that no preflight sees it
// neither running nor recorded.
func (t *tracker) end(id uint64, call guard.ToolCall, record bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range t.running {
		if r.id == id {
			t.running = append(t.running[:i], t.running[i+1:]...)
			break
		}
	}
	if record {
		t.g.Check(guard.Step{ToolCalls: []guard.ToolCall{call}})
	}
}
