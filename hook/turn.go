package hook

import (
	"context"
	"strconv"
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// A Current is the bookkeeping of a framework whose hooks see an agent's run
// one piece at a time: the model's reply (a "plan", a message with tool
// calls), then each tool call as the framework runs it, then the next reply.
// The reply that asks for tools begins a [guard.Turn] with its calls
// decided; the tools run in that turn; the next reply, or [Current.End],
// ends it and records its step. A Current is safe for concurrent use (tools
// that run in parallel run in one turn); give each run its own.
type Current struct {
	g *guard.Guard

	mu   sync.Mutex
	turn *guard.Turn // the reply whose tools run now, if any
	step guard.Step  // its step, without its calls
}

// NewCurrent returns the bookkeeping of one run guarded by g.
func NewCurrent(g *guard.Guard) *Current { return &Current{g: g} }

// Guard returns the run's guard.
func (c *Current) Guard() *guard.Guard { return c.g }

// Reply records the model's reply. First it ends the turn in progress, if
// any, and records its step ([Current.End]); if that stops the run for a
// fault, Reply returns the [*guard.StopError] and begins nothing. Then a
// reply without calls is recorded at once as a step of its own (s: its
// text, finish reason and usage), and a reply with calls begins a turn in
// which the calls are decided now (the decisions, in order, are returned);
// s is recorded with them when that turn ends. The verdict is that of the
// last step recorded (zero when none was). The error is a *guard.StopError
// for a fault stop, or the guard's (ctx ended).
func (c *Current) Reply(ctx context.Context, s guard.Step, calls []guard.ToolCall) ([]guard.Decision, guard.Verdict, error) {
	v, err := c.End(ctx)
	if err != nil {
		return nil, v, err
	}
	s.ToolCalls, s.Refused = nil, nil
	t := c.g.Begin()
	if len(calls) == 0 {
		v, err := t.End(ctx, s)
		return nil, v, err
	}
	ds, err := t.Preflight(ctx, calls...)
	if err != nil {
		return nil, guard.Verdict{}, err
	}
	c.mu.Lock()
	c.turn, c.step = t, s
	c.mu.Unlock()
	return ds, v, nil
}

// Turn returns the turn the run's tools run in: the last reply's, or, for a
// tool called without a reply seen, a new one that the next Reply or End
// records.
func (c *Current) Turn() *guard.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.turn == nil {
		c.turn, c.step = c.g.Begin(), guard.Step{}
	}
	return c.turn
}

// Run runs a tool call in the current turn ([guard.Turn.Run]).
func (c *Current) Run(ctx context.Context, call guard.ToolCall, fn func(ctx context.Context) (any, error)) (any, error) {
	return c.Turn().Run(ctx, call, fn)
}

// End ends the turn in progress, if any, and records its step: the calls
// that ran with their outcomes, the refused ones, and the reply's text,
// finish reason and usage. Without a turn in progress it records nothing and
// returns the zero Verdict. The error is as for [guard.Turn.End]. Call it
// when the framework's run is over (or has given up), to record the last
// reply's calls.
func (c *Current) End(ctx context.Context) (guard.Verdict, error) {
	c.mu.Lock()
	t, s := c.turn, c.step
	c.turn, c.step = nil, guard.Step{}
	c.mu.Unlock()
	if t == nil {
		return guard.Verdict{}, nil
	}
	return t.End(ctx, s)
}

// CallIDs names each call of a turn, for SDKs whose calls may come without
// an ID (Gemini, older Ollama servers) or with one twice: by its ID when it has one that no
// earlier call of the turn has, and otherwise "call_N", N its place in the
// reply (counted from 1), or the first "call_N_M" (M from 2) still free.
func CallIDs(calls []guard.ToolCall) []string {
	ids := make([]string, len(calls))
	taken := make(map[string]bool, len(calls))
	for i, c := range calls {
		if c.ID != "" && !taken[c.ID] {
			ids[i] = c.ID
			taken[c.ID] = true
		}
	}
	for i := range calls {
		if ids[i] != "" {
			continue
		}
		id := "call_" + strconv.Itoa(i+1)
		for m := 2; taken[id]; m++ {
			id = "call_" + strconv.Itoa(i+1) + "_" + strconv.Itoa(m)
		}
		ids[i] = id
		taken[id] = true
	}
	return ids
}
