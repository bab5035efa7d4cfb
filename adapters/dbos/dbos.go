// Package dbos guards an agent loop that runs as a DBOS workflow
// (github.com/dbos-inc/dbos-transact-golang, DBOS Transact for Go): model
// calls and tool calls are durable steps, the loop is the workflow, and a
// [Run] puts a loopguard guard between them.
//
//	lg, err := lgdbos.New(lgdbos.Options{Config: []byte(`{"maxSteps": 60}`)})
//
//	func Agent(ctx dbos.Context, task string) (string, error) {
//		run, err := lg.Start(ctx) // records the options: a step
//		...
//		reply, err := lgdbos.Model(run, "Chat", read, chat)  // a step
//		out, err := lgdbos.Tool(run, "Search", args, search) // a step, if allowed
//		...
//		_, err = run.End() // checks the last step: a step
//	}
//
// DBOS has no interceptors: the workflow calls [Model] and [Tool] where it
// would call dbos.RunAsStep, and handles two errors.
//
// # Steps
//
// Each [Model] call ends the step before it: the model's previous reply
// (read by the call's read function: text, finish reason, usage) with the
// tool calls the workflow made since. The guard checks that step before the
// model step runs. [Run.End] checks the last step.
//
// Every [Tool] call is preflighted as a call of the current step (a
// [guard.Turn]), with its name and its arguments. A refused call does not
// run and is no step: Tool returns a [*guard.RefusedError], whose message is
// the guard's feedback (safe to hand to the model as the tool's answer: it
// never quotes arguments). A call that runs is recorded with its result, or
// with its error's message.
//
// When a step's verdict stops the run for a fault, the model step does not
// run: Model records a step [StepStop] with the verdict instead and returns
// a [*guard.StopError], and so does every later Model and Tool call. Find
// it with errors.As:
//
//	var stop *guard.StopError
//	if errors.As(err, &stop) {
//		return "", err
//	}
//
// A normal finish (the model answered) is not an error.
//
// # Crashes, recovery and determinism
//
// DBOS recovers a workflow whose process died by running it again from the
// start: each step that was recorded returns its recorded outcome without
// running, and the first one that was not runs. The guard lives in the
// workflow and is rebuilt the same way: from the recorded outcomes, in
// order, so that a recovered run has the guard it had when it died, with
// each step counted once. A step that was running when the process died was
// not recorded: it runs again, and the guard counts it once, when it is.
//
// For that the guard sees only what is recorded. Model and Tool record
// their step's result as JSON (with the time the step finished) and hand
// the workflow, and the guard, the value decoded from that JSON, live as
// on recovery; a result must therefore encode as JSON. A failed step's
// error reaches the guard as its message. The guard's clock is the time
// the last step finished (for the duration budget), never the clock of the
// process. Its decisions therefore come out the same on recovery: a call
// refused before the crash is refused again, and one that ran runs (or is
// read back) again.
//
// The options document is recorded as the workflow's step [StepOptions]
// when [Guard.Start] runs, and a recovery builds the guard from the
// recorded one: a deployment that changes Config changes the guard of new
// workflows, never the decisions of a running one. The Registry's detectors
// are code: change them as you change workflow code (DBOS recovers a
// workflow only on executors of its application version).
//
// The observer ([Options.Observer]) is told of the events of a check or a
// preflight inside the step of the run that comes next, when that step
// runs, and not when it is read back on recovery: each event is told once,
// unless a worker dies inside that step, after telling them; the step runs
// again on recovery, and tells them again (at least once, as a step's
// body runs).
//
// A Run belongs to one execution of one workflow, and its methods are
// called from the workflow's goroutine, one at a time, as the workflow
// calls dbos.RunAsStep: the guard's decisions follow the order of the
// calls, which must be the same on recovery.
//
// The package name matches the SDK's dbos package; import one of them under
// another name:
//
//	import lgdbos "github.com/loopguard/loopguard/adapters/dbos"
package dbos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	sdk "github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// The names of the steps that the guard itself records.
const (
	// StepOptions is the step that records the options document, when
	// the run starts.
	StepOptions = "loopguard.options"
	// StepStop is the step that records a check that stopped the run.
	StepStop = "loopguard.stop"
	// StepEnd is the step that records the check of the last step.
	StepEnd = "loopguard.end"
)

// Options configure the guard of the workflows that call [Guard.Start].
// The zero value is useful: the default detectors.
type Options struct {
	// Config is a loopguard options document, the format of
	// `loopguard --config` (see the README); empty means {}, the default
	// detectors. Each run records the one it starts with.
	Config []byte

	// Registry builds the detectors from Config; nil means
	// detector.Standard(). Register detectors of your own on it.
	Registry *detector.Registry

	// Observer, when set, is told of the guard's verdicts and decisions,
	// each once (see the package documentation). It is called inside a
	// step, with the step's context: it must not call DBOS.
	Observer func(ctx context.Context, e guard.Event)

	// Feedback, when set, is the guard's [guard.Config.Feedback].
	Feedback func(v guard.Verdict, phase guard.Phase) string

	// Logger takes the warnings of the runs (a recorded options document
	// that no longer builds); nil means slog.Default().
	Logger *slog.Logger
}

// A Guard makes the guarded [Run] of each workflow, from one set of
// options. It is safe for use by any number of workflows at once.
type Guard struct {
	o Options
}

// New returns the guard of these options, or an error that names each
// invalid field (a *guard.OptionError, so errors.Is(err,
// guard.ErrInvalidOption) holds): an options document that does not build.
func New(o Options) (*Guard, error) {
	if o.Registry == nil {
		o.Registry = detector.Standard()
	}
	if len(o.Config) == 0 {
		o.Config = []byte("{}")
	}
	if _, err := o.Registry.Build(o.Config, detector.BuildOptions{}); err != nil {
		return nil, &guard.OptionError{Field: "Config", Err: err}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Config = slices.Clone(o.Config)
	return &Guard{o: o}, nil
}

// A Run is the guard of one execution of a workflow, and the step it is
// in. Make it with [Guard.Start], at the start of the workflow.
type Run struct {
	o      *Options
	ctx    sdk.Context
	config []byte // the options document, as the run recorded it
	g      *guard.Guard

	mu      sync.Mutex
	at      time.Time     // the guard's clock: when the last step finished
	pending []guard.Event // events for the observer, until the next step

	// The open step: the reply of the last model call, and the turn of
	// the tool calls made since.
	turn    *guard.Turn
	reply   *guard.Step
	nextID  int
	stopped *guard.StopError
}

// optionsRecord is the output of the step StepOptions.
type optionsRecord struct {
	Config string    `json:"config"`
	At     time.Time `json:"at"`
}

// Start records the options document as the workflow's step StepOptions
// (on recovery, reads it back) and returns the run's guard, built from the
// recorded document. Call it once per workflow, first, with the workflow's
// context.
func (gd *Guard) Start(ctx sdk.Context) (*Run, error) {
	if ctx == nil {
		return nil, errors.New("loopguard: Start: nil context")
	}
	r := &Run{o: &gd.o, ctx: ctx, config: gd.o.Config}
	rec, err := step(r, StepOptions, func(context.Context) (optionsRecord, error) {
		return optionsRecord{Config: string(gd.o.Config), At: stamp()}, nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("loopguard: recording the options: %w", err)
	}
	if _, err := gd.o.Registry.Build([]byte(rec.Config), detector.BuildOptions{}); err != nil {
		gd.o.Logger.Warn("loopguard: the recorded options do not build; using the worker's", "error", err)
	} else {
		r.config = []byte(rec.Config)
	}
	r.at = rec.At
	cfg, err := gd.o.Registry.Build(r.config, detector.BuildOptions{Now: r.now})
	if err != nil {
		return nil, err // the worker's own document: New built it
	}
	if gd.o.Observer != nil {
		cfg.Observer = r.hold
	}
	cfg.Feedback = gd.o.Feedback
	if r.g, err = guard.New(cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// Config returns the options document the run was built with: the one it
// recorded.
func (r *Run) Config() []byte { return slices.Clone(r.config) }

// Summary returns the guard's account of the run.
func (r *Run) Summary() (guard.Summary, error) {
	return r.g.Summary(context.Background())
}

// Stopped returns the stop that holds the run, or nil when it may go on.
func (r *Run) Stopped() *guard.StopError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// now is the guard's clock: the time the run's last step finished.
func (r *Run) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at
}

// hold keeps an event for the observer until the next step.
func (r *Run) hold(_ context.Context, e guard.Event) {
	r.mu.Lock()
	r.pending = append(r.pending, e)
	r.mu.Unlock()
}

// tell tells the observer of events, recovering a panic in it.
func (r *Run) tell(ctx context.Context, evs []guard.Event) {
	for _, e := range evs {
		func() {
			defer func() { _ = recover() }()
			r.o.Observer(ctx, e)
		}()
	}
}

// stamp returns the time a step finishes, as it reads back from JSON: in
// UTC, without a monotonic reading.
func stamp() time.Time { return time.Now().UTC().Round(0) }

// record is the output of a model or tool step: its result as JSON and
// when it finished.
type record struct {
	Result json.RawMessage `json:"result,omitempty"`
	At     time.Time       `json:"at"`
}

// step runs fn as the durable step name of the run's workflow. The events
// held for the observer are told inside the step when it runs, and dropped
// when it is read back. The clock moves to the time the step finished.
func step[T any](r *Run, name string, fn func(context.Context) (T, error), opts []sdk.StepOption) (T, error) {
	r.mu.Lock()
	evs := r.pending
	r.pending = nil
	r.mu.Unlock()
	stepOpts := append([]sdk.StepOption{sdk.WithStepName(name)}, opts...) // the first name wins
	out, err := sdk.RunAsStep(r.ctx, func(ctx context.Context) (T, error) {
		if evs != nil && r.o.Observer != nil {
			r.tell(ctx, evs)
			evs = nil // not again on a retry
		}
		return fn(ctx)
	}, stepOpts...)
	return out, err
}

// runStep runs a model or tool function as a step whose output is a
// record, and returns the record, whether the step finished (ran to its
// end, or was read back), and its error.
func runStep[R any](r *Run, name string, fn sdk.Step[R], opts []sdk.StepOption) (record, bool, error) {
	rec, err := step(r, name, func(ctx context.Context) (record, error) {
		v, err := fn(ctx)
		var rec record
		if err == nil {
			b, jerr := json.Marshal(v)
			if jerr != nil {
				err = fmt.Errorf("loopguard: the result of step %q does not encode as JSON: %w", name, jerr)
			} else {
				rec.Result = b
			}
		}
		rec.At = stamp()
		return rec, err
	}, opts)
	if rec.At.IsZero() {
		// DBOS refused the step before it ran (a cancelled workflow,
		// another step recorded at its place): it has no outcome.
		return rec, false, err
	}
	r.mu.Lock()
	r.at = rec.At
	r.mu.Unlock()
	return rec, true, err
}

// decode returns the result of a record as an R.
func decode[R any](name string, rec record) (R, error) {
	var v R
	if len(rec.Result) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(rec.Result, &v); err != nil {
		return v, fmt.Errorf("loopguard: the recorded result of step %q does not decode: %w", name, err)
	}
	return v, nil
}

// Model runs the model call fn as the durable step name, after the guard
// checked the step before it, and returns its result. read turns the result
// into the step it begins: the model's text, finish reason and usage (the
// step's ToolCalls and Refused are ignored: the guard sees the [Tool]
// calls the workflow makes).
//
// When the check stops the run for a fault, fn does not run: the check is
// recorded as the step [StepStop], and Model returns a [*guard.StopError].
// So does a Model call of a stopped run, without a step. A failed model
// call returns fn's error, and begins no step.
//
// name is the step's name in DBOS's record (a dbos.WithStepName among opts
// is overridden); opts are the step's other options, such as its retries.
func Model[R any](r *Run, name string, read func(R) guard.Step, fn sdk.Step[R], opts ...sdk.StepOption) (R, error) {
	var zero R
	switch {
	case name == "":
		return zero, errors.New("loopguard: Model: empty step name")
	case read == nil || fn == nil:
		return zero, fmt.Errorf("loopguard: Model %q: nil read or step function", name)
	}
	if _, err := r.endStep(StepStop); err != nil {
		return zero, err
	}
	rec, finished, err := runStep(r, name, fn, opts)
	if !finished || err != nil {
		return zero, err
	}
	v, err := decode[R](name, rec)
	if err != nil {
		return zero, err
	}
	s := read(v)
	r.mu.Lock()
	r.reply = &s
	r.mu.Unlock()
	return v, nil
}

// Tool runs the tool call fn as the durable step name, with these
// arguments, if the guard allows the call, and returns its result. A
// refused call does not run and records no step: Tool returns a
// [*guard.RefusedError] whose message is the feedback for the model. A
// call of a stopped run returns its [*guard.StopError].
//
// The call's outcome (its result as JSON data, or its error's message) is
// recorded in the open step, which the next Model call, or End, checks.
// args must be the same on recovery: take them from recorded results.
//
// name is the tool's name, for the guard, and the step's name in DBOS's
// record (a dbos.WithStepName among opts is overridden).
func Tool[R any](r *Run, name string, args any, fn sdk.Step[R], opts ...sdk.StepOption) (R, error) {
	var zero R
	switch {
	case name == "":
		return zero, errors.New("loopguard: Tool: empty step name")
	case fn == nil:
		return zero, fmt.Errorf("loopguard: Tool %q: nil step function", name)
	}
	if s := r.Stopped(); s != nil {
		return zero, s
	}
	r.mu.Lock()
	if r.turn == nil {
		r.turn = r.g.Begin()
	}
	turn := r.turn
	id := strconv.Itoa(r.nextID)
	r.nextID++
	r.mu.Unlock()
	ds, err := turn.Preflight(context.Background(), guard.ToolCall{ID: id, Name: name, Args: args})
	if err != nil {
		return zero, err // the turn ended: never, the run owns it
	}
	if d := ds[0]; !d.Allow {
		return zero, &guard.RefusedError{Decision: d}
	}
	rec, finished, err := runStep(r, name, fn, opts)
	if !finished {
		return zero, err // it did not run: left out of the step
	}
	if err != nil {
		turn.SetResult(id, nil, errors.New(err.Error()))
		return zero, err
	}
	var seen any
	if len(rec.Result) > 0 {
		_ = json.Unmarshal(rec.Result, &seen) // it came from json.Marshal
	}
	turn.SetResult(id, seen, nil)
	return decode[R](name, rec)
}

// End checks the last step of the run, the model's last reply with the
// tool calls made since, records the check as the step [StepEnd], and
// returns its verdict: a [*guard.StopError] when it stops the run for a
// fault. Call it when the workflow is about to return. A stopped run
// returns its stop, without a step.
func (r *Run) End() (guard.Verdict, error) {
	if s := r.Stopped(); s != nil {
		return s.Verdict, s
	}
	v, err := r.endStep("")
	var stop *guard.StopError
	if err != nil && !errors.As(err, &stop) {
		return v, err
	}
	if _, serr := step(r, StepEnd, func(context.Context) (checkRecord, error) {
		return checkOf(v), nil
	}, nil); serr != nil {
		return v, errors.Join(err, serr)
	}
	return v, err
}

// checkRecord is the output of the steps StepStop and StepEnd: the verdict
// without its detail, evidence and feedback, which may quote the run.
type checkRecord struct {
	Stop     bool   `json:"stop"`
	Code     string `json:"code,omitempty"`
	Detector string `json:"detector,omitempty"`
}

func checkOf(v guard.Verdict) checkRecord {
	return checkRecord{Stop: v.Stop, Code: v.Code, Detector: v.Detector}
}

// endStep checks the open step, if any: the last model reply and the tool
// calls made since, and returns its verdict. A stop for a fault holds the
// run; when stopStep is not empty, it is recorded as a step of that name.
// The error is the run's stop, if it is stopped.
func (r *Run) endStep(stopStep string) (guard.Verdict, error) {
	r.mu.Lock()
	if s := r.stopped; s != nil {
		r.mu.Unlock()
		return s.Verdict, s
	}
	turn, reply := r.turn, r.reply
	r.turn, r.reply = nil, nil
	r.mu.Unlock()
	if turn == nil && reply == nil {
		return guard.Verdict{}, nil
	}
	if turn == nil {
		turn = r.g.Begin()
	}
	var s guard.Step
	if reply != nil {
		s = *reply
	}
	v, err := turn.End(context.Background(), s)
	var stop *guard.StopError
	if !errors.As(err, &stop) {
		return v, err
	}
	r.mu.Lock()
	r.stopped = stop
	r.mu.Unlock()
	if stopStep != "" {
		if _, serr := step(r, stopStep, func(context.Context) (checkRecord, error) {
			return checkOf(stop.Verdict), nil
		}, nil); serr != nil {
			return v, errors.Join(stop, serr)
		}
	}
	return v, stop
}
