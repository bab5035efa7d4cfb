package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/loopguard/loopguard/canonical"
)

// A Turn is one step of an agent loop on its way through the guard: the tool
// calls the model asked for, the guard's decision on each, the outcome of
// each call that ran, and at the end the step to check. Hand-written loops,
// the adapters and framework integrations all use it; it does the
// bookkeeping they would otherwise each write.
//
// Start a turn with [Guard.Begin]. Then, in either style or both:
//
//   - [Turn.Preflight] decides the calls of a model reply at once, in order,
//     before any runs; [Turn.SetResult] gives the outcome of an allowed call by
//     its ID ([ToolCall.ID]); [Turn.Answer] is the text that answers each call
//     in the conversation.
//   - [Turn.Run] decides one call as it is about to run, runs it if allowed
//     and records its outcome. If Preflight already decided a call with the
//     same ID (or, for a call without an ID, the same tool and arguments),
//     Run takes that decision instead of judging the call again: so a
//     framework can preflight a model reply in one hook and run the tools in
//     another.
//
// Each call is judged together with the turn's allowed calls before it, as
// the parallel calls of one step: two identical calls of one reply cannot
// both slip under a threshold, and a refused call does not count against the
// ones after it. [Turn.End] records the step: the allowed calls whose outcome
// is known, in the order they were decided, and in [Step.Refused] the calls
// that were refused. Allowed calls that never finished are left out: they
// did not run.
//
// A call's arguments are hashed once, when the call is decided; End records
// the step with that hash rather than hashing them again. Do not change a
// call's arguments after handing it to the turn.
//
// A Turn is safe for use by several goroutines, so the calls of one turn may
// run in parallel. IDs name calls: the methods that take an ID find the first
// call of the turn with it, and the empty ID names none.
type Turn struct {
	g     *Guard
	mu    sync.Mutex
	calls []turnCall // every call the turn decided, in order
	ended bool
	call1 [1]turnCall // room for the first call: a turn of one call allocates once
}

// turnCall is one call of a turn.
type turnCall struct {
	call     ToolCall  // Result and Err once finished
	sum      callSum   // computed when the call was decided, reused by End
	dec      *Decision // the decision; nil for an allowance without warnings
	allow    bool      // the decision allows the call
	claimed  bool      // Run has taken the call
	finished bool      // its outcome is known
	own      bool      // a refusal of the model's own call (not because the run had stopped, nor by a store's policy)
}

// decision returns the guard's decision on the call.
func (c *turnCall) decision() Decision {
	if c.dec == nil {
		return Decision{Allow: true}
	}
	return *c.dec
}

// decided returns a call of the turn with its decision, keeping a copy of
// the decision only when it says more than "allowed".
func decided(call ToolCall, sum callSum, d Decision, own bool) turnCall {
	c := turnCall{call: call, sum: sum, allow: d.Allow, own: own}
	if !d.Allow || len(d.Warnings) > 0 {
		c.dec = new(Decision) // allocated here only: &d would move d to the heap for every call
		*c.dec = d
	}
	return c
}

// Begin starts a turn of the agent loop: the next step. Turns are the door
// of adapters and frameworks: once the run has stopped for a fault (see
// [Summary].FirstStop), a turn refuses every call with that stop, without
// recording the refusals, until [Guard.Reset] or a step with new user input.
func (g *Guard) Begin() *Turn {
	t := &Turn{g: g}
	t.calls = t.call1[:0]
	return t
}

// errNilRun is Turn.Run's error for a nil function.
var errNilRun = errorString("loopguard: Turn.Run needs a function that runs the call, not nil")

// ErrTurnEnded is returned by the methods of a turn that has ended.
var ErrTurnEnded = errorString("loopguard: the turn has ended")

// notRunText answers an allowed call whose outcome was never given.
const notRunText = "That call was not run."

// Preflight decides calls before any of them runs, in order: each is judged
// together with the turn's allowed calls before it. It returns one decision
// per call; a refused call's Decision.Feedback is the text to answer it with
// (see [Turn.Answer]), and its CallIndex is its index in calls. The calls
// join the turn: give the outcomes of the allowed ones with
// [Turn.SetResult], or run them with [Turn.Run]. Their Result and Err are
// ignored. The observer, if any, is told of each decision after the turn's
// lock is released, with ctx. On a turn that has ended it decides nothing
// and returns [ErrTurnEnded].
func (t *Turn) Preflight(ctx context.Context, calls ...ToolCall) ([]Decision, error) {
	ds := make([]Decision, len(calls))
	var steps []int // for the observer
	if t.g.opts.Observer != nil {
		steps = make([]int, len(calls))
	}
	if err := t.decide(ctx, calls, ds, steps); err != nil {
		return nil, err
	}
	if t.g.opts.Observer != nil {
		for i, d := range ds {
			t.g.notify(ctx, Event{Phase: PhasePreflight, Step: steps[i], Verdict: d.Verdict(), CallID: calls[i].ID, Tool: calls[i].Name})
		}
	}
	return ds, nil
}

// decide judges calls for Preflight, filling ds and, if not nil, steps. It
// holds t.mu, released by a defer: a rule that panics must not leave the
// turn locked for its End.
func (t *Turn) decide(ctx context.Context, calls []ToolCall, ds []Decision, steps []int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrTurnEnded
	}
	t.calls = slices.Grow(t.calls, len(calls))
	for i, c := range calls {
		c.Result, c.Err = nil, nil
		d, step, sum, own, err := t.judge(ctx, c, callSum{})
		if err != nil {
			return err
		}
		if !d.Allow {
			d.CallIndex, d.CallID = i, c.ID
		}
		t.calls = append(t.calls, decided(c, sum, d, own))
		ds[i] = d
		if steps != nil {
			steps[i] = step
		}
	}
	return nil
}

// judge preflights c together with the turn's allowed calls before it, and
// returns the decision, the index of the step and c's sum. known is c's sum
// if it is known already, and own whether a refusal is the model's (see
// turnCall.own). t.mu is held.
func (t *Turn) judge(ctx context.Context, c ToolCall, known callSum) (d Decision, step int, sum callSum, own bool, err error) {
	g := t.g
	b := g.getFacts()
	defer g.putFacts(b)
	for i := range t.calls {
		if tc := &t.calls[i]; tc.allow {
			b.pre = append(b.pre, tc.call)
			b.sums = append(b.sums, tc.sum)
		}
	}
	b.pre = append(b.pre, c)
	b.sums = append(b.sums, known)
	b.sticky = true
	if g.b != nil {
		if d, step, err = viewPreflight(ctx, g.b, b); err != nil {
			return Decision{}, 0, callSum{}, false, err
		}
	} else {
		d, step = g.preflightFacts(b, false)
	}
	// A call refused because the run had stopped, or by a store's policy,
	// is no refusal of the model's: the turn's step leaves it out.
	own = !b.stopped && d.Detector != PolicyRule
	return d, step, b.sums[len(b.sums)-1], own, nil
}

// viewPreflight judges the calls of b on the newest state of a backend's
// run. It is a function of its own so that the variables its closure
// captures are its own: captured in judge, they would move to the heap on
// every judgement of a guard in memory too.
func viewPreflight(ctx context.Context, be Backend, b *factsBuf) (d Decision, step int, err error) {
	err = be.View(ctx, func(m *Guard) { d, step = m.preflightFacts(b, false) })
	return d, step, err
}

// Run runs one call of the turn if the guard allows it, and records its
// outcome. If [Turn.Preflight] decided a call that Run has not taken yet and
// that has call's ID (or, when call has no ID, its tool and canonically
// equal arguments), Run takes that decision; otherwise it judges call now,
// together with the turn's allowed calls before it.
//
// If the call may run, Run calls fn, records fn's result or error as the
// call's outcome and returns them; a panic in fn comes back as an error. If
// it may not, fn is not called and Run returns a [*RefusedError] whose text
// is the model-facing feedback to hand back in place of the tool's result.
// If ctx is done before fn would start, fn is not called and Run returns
// ctx.Err() (nothing is recorded); fn itself receives ctx. A nil fn is an
// error, and nothing is recorded.
//
// The observer, if any, is told of a decision Run makes after the turn's
// lock is released: one that blocks holds up this call only, never the
// turn's other calls. call.Result and call.Err are ignored: they are what fn
// returns.
func (t *Turn) Run(ctx context.Context, call ToolCall, fn func(ctx context.Context) (any, error)) (any, error) {
	if fn == nil {
		return nil, errNilRun // a bug of the caller's, not the tool's failure: nothing is recorded
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	call.Result, call.Err = nil, nil
	i, d, step, judged, err := t.take(ctx, call)
	if err != nil {
		return nil, err
	}
	if judged && t.g.opts.Observer != nil {
		t.g.notify(ctx, Event{Phase: PhasePreflight, Step: step, Verdict: d.Verdict(), CallID: call.ID, Tool: call.Name})
	}
	if !d.Allow {
		return nil, &RefusedError{Decision: d}
	}

	result, err := runTool(ctx, fn)

	t.finish(i, result, err)
	return result, err
}

// take finds or judges call for Run and claims it: it returns the call's
// index, its decision, and, when Run judged it now (judged), the index of
// the step. It holds t.mu, released by a defer: a rule that panics must not
// leave the turn locked for its End.
func (t *Turn) take(ctx context.Context, call ToolCall) (i int, d Decision, step int, judged bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return 0, Decision{}, 0, false, ErrTurnEnded
	}
	i, known := t.claim(call)
	judged = i < 0
	if judged {
		dj, s, sum, own, jerr := t.judge(ctx, call, known)
		if jerr != nil {
			return 0, Decision{}, 0, false, jerr
		}
		if !dj.Allow {
			dj.CallIndex, dj.CallID = 0, call.ID
		}
		step = s
		i = len(t.calls)
		t.calls = append(t.calls, decided(call, sum, dj, own))
	}
	t.calls[i].claimed = true
	return i, t.calls[i].decision(), step, judged, nil
}

// finish records the outcome of the call at index i, unless the turn has
// ended.
func (t *Turn) finish(i int, result any, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		c := &t.calls[i]
		c.call.Result, c.call.Err, c.finished = result, err, true
	}
}

// claim returns the index of the preflighted call that Run should take for
// call, or -1 and, if it had to hash call's arguments to find out, call's sum
// (see callSum) when the guard has no key options. t.mu is held.
func (t *Turn) claim(call ToolCall) (int, callSum) {
	var sum canonical.Sum // of call.Args, as they are
	hashed := false
	for i := range t.calls {
		c := &t.calls[i]
		if c.claimed || c.finished {
			continue
		}
		if call.ID != "" {
			if c.call.ID == call.ID {
				return i, callSum{}
			}
			continue
		}
		if c.call.Name != call.Name {
			continue
		}
		if !hashed {
			sum, hashed = canonical.Hash(call.Args), true
		}
		if t.argsSum(c) == sum {
			return i, callSum{}
		}
	}
	if hashed && t.g.keys == nil {
		// Without key options, the arguments as they are hashed are the
		// call's Args sum: Run's judgement need not hash them again.
		return -1, sumOf(call.Name, sum)
	}
	return -1, callSum{}
}

// argsSum returns the hash of c's arguments as they are, reusing c's sum
// when the guard's key options leave the arguments as they are.
func (t *Turn) argsSum(c *turnCall) canonical.Sum {
	if t.g.keys == nil && c.sum.ok {
		return c.sum.args
	}
	return canonical.Hash(c.call.Args)
}

// runTool calls fn, turning a panic into an error so that the turn stays
// consistent: the caller gets the panic as the call's error.
func runTool(ctx context.Context, fn func(context.Context) (any, error)) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("loopguard: tool panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// find returns the first call with this ID, or nil. t.mu is held.
func (t *Turn) find(id string) *turnCall {
	if id == "" {
		return nil
	}
	for i := range t.calls {
		if t.calls[i].call.ID == id {
			return &t.calls[i]
		}
	}
	return nil
}

// SetResult records the outcome of the allowed call with this ID: what it
// returned, and a non-nil err if it failed (both may be given: the error is
// the outcome the rules judge, the result is kept beside it). It reports
// whether id names an allowed call of a turn that has not ended; the outcome
// of any other call is ignored. A later SetResult for the same call
// replaces the earlier one.
func (t *Turn) SetResult(id string, result any, err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.find(id)
	if t.ended || c == nil || !c.allow {
		return false
	}
	c.call.Result, c.call.Err, c.finished = result, err, true
	return true
}

// Decision returns the guard's decision on the call with this ID, and
// whether the turn has such a call.
func (t *Turn) Decision(id string) (Decision, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.find(id); c != nil {
		return c.decision(), true
	}
	return Decision{}, false
}

// Answer returns the text that answers the call with this ID in the
// conversation, and whether the turn has such a call:
//
//   - for a refused call, the refusal's feedback (the text of its
//     [RefusedError]), which never quotes arguments;
//   - for an allowed call whose outcome is not known, "That call was not
//     run.", since every call the model made must be answered;
//   - for a call that failed without a result (nil or ""), "Error: " and the
//     error's text;
//   - otherwise its result: a string, []byte or json.RawMessage as its text,
//     any other value as its JSON encoding.
func (t *Turn) Answer(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.find(id)
	switch {
	case c == nil:
		return "", false
	case !c.allow:
		return refusalText(c.decision()), true
	case !c.finished:
		return notRunText, true
	case c.call.Err != nil && (c.call.Result == nil || c.call.Result == ""):
		return "Error: " + errorText(c.call.Err), true
	}
	return resultText(c.call.Result), true
}

// resultText returns a tool's result as text: a string as it is, JSON text
// that holds a string decoded, other JSON text as it is, and anything else as
// its JSON (or, failing that, as fmt prints it). It is what the model is
// answered with and what FailWhen patterns are matched against.
func resultText(r any) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	switch r := r.(type) {
	case nil:
		return ""
	case string:
		return r
	case json.RawMessage:
		r = bytes.TrimSpace(r)
		if len(r) > 0 && r[0] == '"' {
			var str string
			if json.Unmarshal(r, &str) == nil {
				return str
			}
		}
		return string(r)
	case []byte:
		return string(r)
	}
	if b, err := marshalSafe(r); err == nil {
		return string(b)
	}
	return fmt.Sprint(r)
}

// marshalSafe is json.Marshal, with a panic turned into an error.
func marshalSafe(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return json.Marshal(v)
}

// Step returns s with the turn's calls, as [Turn.End] records it: in
// ToolCalls, the allowed calls whose outcome is known, in the order they
// were decided; in Refused, the refused calls, without outcomes. s.ToolCalls
// and s.Refused are replaced; s's text, finish reason, usage and input are
// kept.
func (t *Turn) Step(s Step) Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step(s, nil, nil)
}

// step is Step with t.mu held; the calls are appended to calls[:0]. If sums
// is not nil, the sums of the step's calls, then of its refused calls, are
// appended to *sums, for check.
func (t *Turn) step(s Step, calls []ToolCall, sums *[]callSum) Step {
	s.ToolCalls, s.Refused = calls[:0], nil
	for i := range t.calls {
		switch c := &t.calls[i]; {
		case !c.allow && c.own:
			s.Refused = append(s.Refused, ToolCall{ID: c.call.ID, Name: c.call.Name, Args: c.call.Args})
		case c.finished:
			s.ToolCalls = append(s.ToolCalls, c.call)
			if sums != nil {
				*sums = append(*sums, c.sum)
			}
		}
	}
	if sums != nil {
		for i := range t.calls {
			if c := &t.calls[i]; !c.allow && c.own {
				*sums = append(*sums, c.sum)
			}
		}
	}
	if len(s.ToolCalls) == 0 {
		s.ToolCalls = nil
	}
	return s
}

// close ends the turn and puts its step in b for End, under t.mu (released
// by a defer); false if it had ended already.
func (t *Turn) close(s Step, b *factsBuf) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	t.ended = true
	g := t.g
	// The step's calls go in the buffer, with the sums of the calls, which
	// check takes instead of hashing the arguments again.
	b.cur = t.step(s, g.stepCalls(b), &b.sums)
	if g.opts.History == 0 && b.cur.ToolCalls != nil {
		b.calls = b.cur.ToolCalls
	}
	return true
}

// End finishes the turn: it records the step [Turn.Step] returns for s
// (as [Guard.Check] does, so the observer is told) and returns the
// guard's verdict. The error is a [*StopError] carrying the verdict when the
// verdict stops the run for a fault ([Verdict.Err]); a verdict that goes on,
// and a normal finish (v.Stop with IsFault false: the model answered), come
// with a nil error. It is [ErrTurnEnded] if the turn had already ended.
//
// Call End after every call of the turn has returned: a call still running
// is left out of the step, and what it returns later is not recorded. After
// End, Decision and Answer still answer, and Run, Preflight and SetResult
// change nothing.
func (t *Turn) End(ctx context.Context, s Step) (Verdict, error) {
	g := t.g
	b := g.getFacts()
	defer g.putFacts(b)
	if !t.close(s, b) {
		return Verdict{}, ErrTurnEnded
	}
	var (
		v    Verdict
		step int
	)
	if g.b != nil {
		st := b.cur
		st.ToolCalls = slices.Clone(st.ToolCalls) // the backend may keep the step
		var err error
		if v, step, err = g.b.Record(ctx, st); err != nil {
			return Verdict{}, err
		}
	} else {
		v, step = g.checkFacts(b)
	}
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhaseCheck, Step: step, Verdict: v})
	}
	return v, v.Err()
}
